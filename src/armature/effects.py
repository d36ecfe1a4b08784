"""The side-effect log: mutations of state that existed before the frame.

While tracing, writes go to the Values that model the objects (an object's
attribute overlay, a list's items, a global's pending value), so reads see
pending writes first.  The log remembers *what* must be written back and in
which order; codegen replays it after the graph call in two phases (read
every operand into a temporary, then write), because a write may change what
a later operand's source would read.

Replay uses the primitive each traced operation stood for: a plain attribute
store replays as ``object.__setattr__`` (the traced code already ran any
custom ``__setattr__`` or property setter, whose own effects are in the log),
an instance-dict write as ``obj.__dict__[k] = v``, a mutated list or dict is
given its final contents.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# ``Value`` in the annotations below is values.base.Value, named and not
# imported: the log sits below the value layer, which writes to it.


@dataclass(eq=False)
class AttrStore:
    obj: Value
    name: str
    value: Value
    via_dict: bool = False        # obj.__dict__[name] = value
    on_type: bool = False         # a class attribute (type.__setattr__)
    via_module: bool = False      # through nn.Module.__setattr__ (registers members)


@dataclass(eq=False)
class AttrDelete:
    obj: Value
    name: str
    via_dict: bool = False
    on_type: bool = False
    via_module: bool = False


@dataclass(eq=False)
class MethodCall:
    """A method of an outside object called for its effect (e.g.
    ``module.register_buffer``), replayed by calling it."""
    obj: Value
    name: str
    args: list
    kwargs: dict


@dataclass(eq=False)
class DictReplace:
    """``obj.__dict__ = new``"""
    obj: Value
    new: Value


@dataclass(eq=False)
class ContainerMutated:
    """A list/dict from outside the frame whose final contents are written back."""
    container: Value


@dataclass(eq=False)
class ListAppend:
    """Items appended to an outside list whose contents were never read."""
    container: Value


@dataclass(eq=False)
class GlobalStore:
    globals_dict: dict
    name: str
    value: Value | None            # None = delete


@dataclass(eq=False)
class CellStore:
    cell: Value                     # a RealCellValue (has a Source)
    value: Value | None             # None = delete


DELETED = object()


class SideEffects:
    def __init__(self):
        self.log: list[Any] = []
        self._mutated: set[int] = set()
        # (id(globals), name) -> Value | DELETED
        self.pending_globals: dict[tuple[int, str], Any] = {}
        #: every write to outside state, repeated ones included (the log
        #: keeps a container once): graph/regions.py merges only calls
        #: that made none
        self.writes = 0

    def record(self, rec) -> None:
        self.writes += 1
        self.log.append(rec)

    def mutated_values(self) -> list:
        """The outside objects and containers the frame writes to."""
        out = []
        for rec in self.log:
            v = getattr(rec, "container", None) or getattr(rec, "obj", None)
            if v is not None and v.source is not None and all(v is not o for o in out):
                out.append(v)
        return out

    def container_mutated(self, container: Value) -> None:
        self.writes += 1
        if id(container) not in self._mutated:
            self._mutated.add(id(container))
            self.log.append(ContainerMutated(container))

    def store_global(self, g: dict, name: str, value: Value | None) -> None:
        self.writes += 1
        self.pending_globals[(id(g), name)] = DELETED if value is None else value
        self.log.append(GlobalStore(g, name, value))

    def pending_global(self, g: dict, name: str):
        return self.pending_globals.get((id(g), name))

    def __len__(self):
        return len(self.log)

    def describe(self) -> list[str]:
        out = []
        for r in self.log:
            if isinstance(r, AttrStore):
                out.append(f"{r.obj}.{r.name} = {r.value}")
            elif isinstance(r, AttrDelete):
                out.append(f"del {r.obj}.{r.name}")
            elif isinstance(r, DictReplace):
                out.append(f"{r.obj}.__dict__ = ...")
            elif isinstance(r, MethodCall):
                out.append(f"{r.obj}.{r.name}(...) called")
            elif isinstance(r, ContainerMutated):
                out.append(f"{r.container} mutated")
            elif isinstance(r, GlobalStore):
                out.append(f"global {r.name} {'deleted' if r.value is None else '= ' + str(r.value)}")
            elif isinstance(r, CellStore):
                out.append(f"nonlocal {r.cell} {'deleted' if r.value is None else '= ' + str(r.value)}")
        return out
