"""Where dynamism is decided, and the bridge to torch's ShapeEnv.

Every size or int that is not a constant is a ShapeEnv symbol.  This module
decides which ones (``dims_for_tensor``, ``int_is_dynamic``): the compile's
``dynamic`` policy (None: automatic, True, False), what earlier recompiles of
the same code found changing (automatic dynamic), the marks users put on
tensors (``mark_dynamic`` / ``maybe_mark_dynamic`` / ``mark_static`` /
``mark_unbacked``), static modules, and the ``config.dynamic_sources``
whitelist.  Nothing else in armature makes that decision.

torch's ShapeEnv names every symbol by a ``torch._guards.Source``;
:class:`ShapeEnvSource` is an armature Source seen that way, named by the
expression that reads it in a guard function, so the guards ShapeEnv
produces (``x.size()[0] >= 2``) are valid Python there as they are.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch._guards import GuardSource
from torch._guards import Source as TorchSource

from ..diagnostics.errors import ArmatureError
from ..guards.sources import Source

#: attributes armature's marks leave on a tensor (as torch's own marks do)
DYNAMIC_ATTR = "_armature_dynamic_dims"     # {dim: (min, max, specialize_on)}
MAYBE_DYNAMIC_ATTR = "_armature_maybe_dynamic_dims"
STATIC_ATTR = "_armature_static_dims"
UNBACKED_ATTR = "_armature_unbacked_dims"


class _Name(str):
    """``Source.name`` is a property in some torch releases and a method in
    others: a string that can also be called serves both."""

    def __call__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class ShapeEnvSource(TorchSource):
    """An armature Source as torch's ShapeEnv sees it."""

    source: Any
    text: str

    @property
    def name(self):  # noqa: D401 - torch's protocol
        return _Name(self.text)

    def guard_source(self):
        return GuardSource.LOCAL

    def reconstruct(self, codegen):  # pragma: no cover - never used by armature
        raise NotImplementedError

    def __hash__(self):
        return hash((type(self), self.text))

    def __eq__(self, other):
        return type(other) is ShapeEnvSource and other.text == self.text


@dataclass(frozen=True)
class SizeSource(Source):
    """``tensor.size()[dim]``: a dynamic size read at run time (a SymInt
    input of the graph, or part of a residual expression)."""

    parent: Source
    dim: int

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.render(self.parent)}.size()[{self.dim}]"

    def emit(self, out):
        self.parent.emit(out)
        out.instr("LOAD_METHOD", "size")
        out.instr("PRECALL", 0)
        out.instr("CALL", 0)
        out.load_const(self.dim)
        out.instr("BINARY_SUBSCR")

    def __str__(self):
        return f"{self.parent}.size()[{self.dim}]"


class SourceNames:
    """Renders armature Sources as the guard-function expressions ShapeEnv
    names symbols by.  Constants the expressions need get names of their
    own (``___sc0``...), carried by the guards built from that text: they
    start with ``prefix``, which no local of the traced code starts with
    (names.py)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.consts: dict[str, Any] = {}
        self._ids: dict[int, str] = {}
        self.by_text: dict[str, Source] = {}

    def const(self, obj):
        name = self._ids.get(id(obj))
        if name is None:
            name = self._ids[id(obj)] = f"{self.prefix}sc{len(self.consts)}"
            self.consts[name] = obj
        return name

    def render(self, source: Source) -> str:
        return source.expr(self)

    def shape_env_source(self, source: Source) -> ShapeEnvSource:
        text = self.render(source)
        self.by_text[text] = source
        return ShapeEnvSource(source, text)


def armature_source_of(torch_source) -> Source | None:
    """The armature Source behind a ShapeEnv symbol's source: an int read
    from a source, or one size of a tensor input."""
    if isinstance(torch_source, ShapeEnvSource):
        return torch_source.source
    base = getattr(torch_source, "base", None)
    prop = getattr(torch_source, "prop", None)
    if isinstance(base, ShapeEnvSource) and prop is not None and prop.name == "SIZE":
        return SizeSource(base.source, torch_source.idx)
    return None


# --- the policy ---------------------------------------------------------------

@dataclass
class DynamicPolicy:
    """What one compile of one code object may treat as dynamic."""

    #: the compile's ``dynamic`` argument: None (automatic), True, False
    mode: bool | None = None
    #: dims seen changing by earlier recompiles: {Source: {dim, ...}}
    auto_dims: dict = dataclasses.field(default_factory=dict)
    #: int sources seen changing by earlier recompiles
    auto_ints: set = dataclasses.field(default_factory=set)
    #: parameters/buffers of modules marked static (mark_static(module)):
    #: static even when whitelisted
    static_sources: set = dataclasses.field(default_factory=set)


def _whitelist() -> list[tuple[str, int | None]]:
    from ..config import config
    out = []
    for item in config.dynamic_sources_list():
        name, dim = item, None
        m = re.fullmatch(r"(.*):(\d+)", item)
        if m:
            name, dim = m.group(1), int(m.group(2))
        out.append((name, dim))
    return out


def _matches(name: str, text: str) -> bool:
    r"""A whitelist entry names a source literally (``batch["ids"]``) or as a
    regular expression (``layers\.\d+\.cache_len``)."""
    if name == text:
        return True
    try:
        return re.fullmatch(name, text) is not None
    except re.error:
        return False


def whitelisted(source: Source) -> tuple[bool, set[int] | None]:
    """(matched, dims): ``config.dynamic_sources`` names this source (dims
    None: every dim / the int itself)."""
    text = str(source)
    hit, dims = False, set()
    for name, dim in _whitelist():
        if _matches(name, text):
            hit = True
            if dim is None:
                return True, None
            dims.add(dim)
    return hit, (dims if hit else None)


def _is_module_state(source: Source) -> bool:
    from ..guards.sources import ModuleMemberSource
    return isinstance(source, ModuleMemberSource) and source.table in ("_parameters", "_buffers")


def dims_for_tensor(policy: DynamicPolicy, real: torch.Tensor, source: Source) -> StatelessSymbolicContext | None:
    """The symbolic context of a tensor input, or None when every dim is
    static.  Parameters and buffers stay static unless marked or whitelisted."""
    # (imported here: symbolic_shapes brings sympy, a quarter of ``import armature``, which a
    # process that only runs entries loaded from disk never needs)
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
    ndim = real.dim()
    if ndim == 0:
        return None
    marked = getattr(real, DYNAMIC_ATTR, None) or {}
    maybe = getattr(real, MAYBE_DYNAMIC_ATTR, None) or set()
    static = getattr(real, STATIC_ATTR, None) or set()
    unbacked = getattr(real, UNBACKED_ATTR, None) or set()
    listed, listed_dims = whitelisted(source)
    if source in policy.static_sources:
        return None
    sizes = []
    constraints = []
    any_dynamic = False
    for d in range(ndim):
        kind = DimDynamic.STATIC
        constraint = None
        if listed and (listed_dims is None or d in listed_dims):
            kind = DimDynamic.DYNAMIC
        elif d in static or policy.mode is False:
            kind = DimDynamic.STATIC
        elif d in unbacked:
            kind = DimDynamic.UNBACKED  # no hint: never specialised, not even to 0 or 1
        elif d in marked:
            kind = DimDynamic.DYNAMIC
            lo, hi, _ = marked[d]
            constraint = _range_constraint(lo, hi)
        elif d in maybe:
            kind = DimDynamic.DYNAMIC
        elif _is_module_state(source):
            kind = DimDynamic.STATIC
        elif policy.mode is True:
            kind = DimDynamic.DUCK      # equal sizes share a symbol (duck sizing), as torch does
        elif d in policy.auto_dims.get(source, ()):
            kind = DimDynamic.DYNAMIC
        any_dynamic |= kind is not DimDynamic.STATIC
        sizes.append(kind)
        constraints.append(constraint)
    if not any_dynamic:
        return None
    specialize_on = [list(marked[d][2]) if d in marked and marked[d][2] else [] for d in range(ndim)]
    return StatelessSymbolicContext(dynamic_sizes=sizes, constraint_sizes=constraints,
                                    specialize_on=specialize_on)


def _range_constraint(lo, hi):
    """mark_dynamic's promise: the dim is not specialised (and stays in
    [lo, hi]); code that specialises it is an error."""
    from torch.fx.experimental.symbolic_shapes import RelaxedUnspecConstraint, StrictMinMaxConstraint
    from torch.utils._sympy.value_ranges import ValueRanges
    if lo is None and hi is None:
        return RelaxedUnspecConstraint(warn_only=False)
    import sympy
    return StrictMinMaxConstraint(vr=ValueRanges(lower=lo if lo is not None else 0,
                                                 upper=hi if hi is not None else sympy.oo), warn_only=False)


def int_is_dynamic(policy: DynamicPolicy, source: Source) -> bool:
    """Whether a Python int read from ``source`` is a symbol."""
    listed, _ = whitelisted(source)
    if listed:
        return True
    if policy.mode is False:
        return False
    if source in policy.auto_ints:
        return True
    # dynamic=True: ints the frame is given (arguments and what they contain),
    # not configuration read from attributes (self.num_heads stays a constant)
    return policy.mode is True and not _through_attribute(source)


def _through_attribute(source: Source) -> bool:
    from ..guards.sources import AttrSource, ModuleMemberSource
    s = source
    while s is not None:
        if isinstance(s, (AttrSource, ModuleMemberSource)):
            return True
        s = s.base
    return False


# --- guards -------------------------------------------------------------------

def shape_guards(graph) -> list:
    """The ShapeEnv's guards for one trace, as guards of the entry: ranges
    and relations of the symbols (``2 <= x.size()[0]``,
    ``x.size()[1] == x.size()[0]`` for duck-sized dims,
    ``x.stride()[0] == x.size()[1]``), outcomes of branches on sizes, and the
    value of every symbol the trace specialised.  Static dims are checked by
    the tensors' own guards."""
    from ..guards.guard import Guard, Kind
    if not graph.symbolic_inputs:
        return []
    values = [v for v, _ in graph.symbolic_inputs]
    sources = [s for _, s in graph.symbolic_inputs]
    try:
        texts = graph.shape_env.produce_guards(values, sources, input_contexts=graph.symbolic_contexts,
                                               ignore_static=True)
    except Exception as e:
        from torch.fx.experimental.symbolic_shapes import ConstraintViolationError
        if isinstance(e, ConstraintViolationError):
            raise DynamicDimSpecialized(_violation_message(graph, str(e))) from None
        raise
    texts += _specialised_dims(graph)
    import math
    # ShapeEnv guard text may call torch.sym_max, math.floor...: bound as constants
    consts = {**graph.source_names.consts, "torch": torch, "math": math, "inf": math.inf}
    hoisted, names = _hoist_reads(graph, texts)
    return [Guard(Kind.SHAPE, None, text=h, consts=consts, label=_user_text(graph, t),
                  binds={n: names[n] for n in _bound_names(graph, h) if n in names})
            for t, h in zip(texts, hoisted)]


def _bound_names(graph, text: str) -> list[str]:
    """The hoisted reads (``___sz0``...) ``text`` uses (not an attribute or
    a string key that merely looks like one)."""
    prefix = re.escape(graph.source_names.prefix)
    return re.findall(rf"(?<![\w.'\"]){prefix}s[zt]\d+\b", text)


def _hoist_reads(graph, texts: list[str]) -> tuple[list[str], dict[str, str]]:
    """``x.size()[0] >= 2 and x.size()[1] == x.size()[0]``: each
    ``x.size()`` / ``x.stride()`` becomes a local bound once in the guard
    function (Guard.binds), instead of a call per use."""
    names: dict[str, str] = {}
    by_read: dict[str, str] = {}
    out = []
    for text in texts:
        for rendered in sorted(graph.source_names.by_text, key=len, reverse=True):
            for prop, tag in (("size", "sz"), ("stride", "st")):
                read = f"{rendered}.{prop}()"
                if read + "[" not in text:
                    continue
                name = by_read.get(read)
                if name is None:
                    name = by_read[read] = f"{graph.source_names.prefix}{tag}{len(by_read)}"
                    names[name] = read
                text = text.replace(read + "[", name + "[")
        out.append(text)
    return out, names


def _specialised_dims(graph) -> list[str]:
    """Dims that were symbols when the tensor entered the trace but that the
    trace then specialised (``if x.shape[1] == 5``, a broadcast against a
    static size): the ShapeEnv now counts them as static and leaves them to
    the tensor's own guard, which had them as dynamic.  Each gets its
    equality guard here, or a graph holding the specialised value would run
    on other sizes."""
    env = graph.shape_env
    out = []
    for value, source in graph.symbolic_inputs:
        if not isinstance(value, torch.Tensor):
            continue
        for prop, items in (("size", value.size()), ("stride", value.stride())):
            for d, item in enumerate(items):
                if isinstance(item, torch.SymInt):
                    expr = env.replace(item.node.expr)
                    if expr.is_number:
                        out.append(f"{source.text}.{prop}()[{d}] == {int(expr)}")
    return out


def _violation_message(graph, text: str) -> str:
    """torch's constraint message, in user terms, plus the user lines whose
    code constrained the marked dims."""
    text = _user_text(graph, text.split(" If you're using Dim.DYNAMIC")[0])
    env = graph.shape_env
    lines = []
    for g, loc in graph.guard_locations.values():
        names = {str(armature_source_of(src)) for sym in g.expr.free_symbols for src in env.var_to_sources.get(sym, ())}
        if loc is not None and any(n in text for n in names):
            lines.append(f"  {loc.filename}:{loc.lineno}: {loc.source_line}   ({g.expr})")
    where = ("\nSpecialised by:\n" + "\n".join(dict.fromkeys(lines))) if lines else ""
    return (f"armature.mark_dynamic: {text.strip()}{where}\nFix: remove the mark, use "
            "armature.maybe_mark_dynamic, or change the code that compares the size with a constant.")


def _user_text(graph, text: str) -> str:
    """A guard as users read it: sources as logs print them."""
    for rendered, source in sorted(graph.source_names.by_text.items(), key=lambda kv: -len(kv[0])):
        shown = str(source)
        if shown != rendered:
            text = text.replace(rendered, shown)
    return text


class DynamicDimSpecialized(ArmatureError):
    """Code specialised a dimension marked dynamic (``mark_dynamic``): the
    message names the dimension, the constraint and why."""


def log_dynamic_symbols(fn, graph) -> None:
    """ARMATURE_LOGS=dynamic: each symbol with its source, and where the
    trace specialised or constrained sizes (user file:line)."""
    import logging
    from ..diagnostics import logs
    log = logs.artifact("dynamic")
    if not log.isEnabledFor(logging.DEBUG) or not graph.symbolic_inputs:
        return
    env = graph.shape_env
    lines = []
    for sym, srcs in env.var_to_sources.items():
        shown = ", ".join(str(armature_source_of(s) or s.name) for s in srcs)
        value = env.replacements.get(sym)
        lines.append(f"{sym} = {shown}" + (f"  (specialised to {value})" if value is not None else ""))
    for g, loc in graph.guard_locations.values():
        where = f"{loc.filename}:{loc.lineno}: {loc.source_line}" if loc else "?"
        lines.append(f"guard {g.expr} from {where}")
    log.debug("dynamic shapes of %s:\n  %s", fn.__qualname__, "\n  ".join(lines))
