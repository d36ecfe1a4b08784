"""Modules with parameters created inside the compiled frame
(``nn.Linear(4, 4)(x)``, ``nn.Sequential(nn.Linear(...), nn.ReLU())``).

Eager builds a new module on every call, with new random weights drawn from
torch's generator at the point of the constructor call.  armature keeps that
exactly by building the real module for real on every call, in the
transformed function's *setup* (before the graph runs), from the same class
and the same (constant) arguments; the module's parameters and buffers are
then graph inputs like those of any module passed in, and the module itself
is a real ``nn.Module`` with real ``Parameter`` s wherever it escapes
(returned, stored on ``self`` or in a global, handed across a graph break).

While tracing, a *template* of the module is built once, with torch's random
state saved and restored around it, so the trace sees the structure
(submodules, parameter names, shapes, dtypes, plain attributes) the real one
will have: torch.nn's constructors are deterministic in structure given
their arguments and the default dtype (guarded by every entry).  The
template's Value has a :class:`NewModuleSource`: a local of the transformed
function that the setup assigns, so its members load as
``.new_module_0._parameters['weight']`` (names.py); guards on sources rooted
there are dropped (trace/context.py ``GuardSet``), as they hold by
construction and the guard function cannot see that local.

Faithfulness of the random stream: the setup runs the constructor before
every op of the graph, so it draws its random numbers first.  That is
eager's order as long as nothing earlier in the same graph draws random
numbers; otherwise the constructor call is a graph break (it then runs
natively, in program order).  The numbers drawn are eager's, and the
generator's state after the call is eager's.

Conversions made on it before the graph uses its members (``.double()``,
``.to(torch.float64)``, ``.requires_grad_(False)``, ``.eval()``...) are
applied to the template while tracing and are steps of the setup too, in
program order among the constructions (:func:`record_call`,
values/nn/fresh_module_methods.py): the setup runs
``m = Linear(4, 4); m.double()``, and the graph reads the converted
parameters.

A module made this way and handed to a resume function is a new object on
every call: the resume function guards it by class and member names, never
by identity, and reads its parameters as graph inputs (:func:`wrap_fresh_arg`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind, TensorMeta
from ...names import NEW_MODULE
from ...guards.sources import AttrSource, ModuleMemberSource, Source
from .modules import ModuleValue, NewModuleValue, emit_construct
from ..base import concrete
from ..builder import wrap
from ..constant import ConstantValue
from .. import kinds

LOCAL_PREFIX = NEW_MODULE


@dataclass(frozen=True)
class NewModuleSource(Source):
    """A module built by the transformed function's setup: a local of it."""

    index: int
    label: str
    #: guards on sources rooted here are dropped (trace/context.py)
    made_in_frame = True

    @property
    def name(self) -> str:
        return f"{LOCAL_PREFIX}{self.index}"

    def expr(self, pool):  # pragma: no cover - guards on it are dropped
        raise AssertionError(f"a guard on {self}, a module made in the frame")

    def emit(self, out):
        out.instr("LOAD_FAST", self.name)

    def __str__(self):
        return f"{self.label}_{self.index}"


def made_in_frame(source) -> bool:
    """Whether ``source`` reads from a module the setup builds (no guard can)."""
    return source is not None and getattr(source.root(), "made_in_frame", False)


@dataclass
class _Construction:
    source: NewModuleSource
    cls_value: object
    args: list
    kwargs: dict


@dataclass
class _Calls:
    """Conversions made on a module the setup built (or a submodule of
    one), in program order (values/nn/fresh_module_methods.py)."""
    target: Source
    calls: list


def constructions(ctx) -> list:
    return ctx.__dict__.setdefault("new_modules", [])


class FreshModuleValue(ModuleValue):
    """A module that is a new object on every call: one built in the frame
    (its source a :class:`NewModuleSource`), or one handed to a resume
    function after being built in the frame before the break.  Its
    parameters and buffers are graph inputs (never ``get_attr`` constants of
    the graph, and never identity-guarded); its submodules are modules of
    the same kind."""

    def _member(self, tx, table, name, obj):
        src = ModuleMemberSource(self.source, name, table)
        cached = tx.ctx.value_cache.get(id(obj))
        if cached is not None and cached[0] is obj:
            value = cached[1]
            if value.source is not None and value.source != src:   # (as builder.wrap: the same object later too)
                tx.ctx.guards.add(Guard(Kind.SAME_OBJECT, src, value.source))
            return value
        if table == "_modules":
            if not isinstance(obj, torch.nn.Module) or type(obj).__module__.startswith("armature"):
                return wrap(tx.ctx, obj, src)
            if not made_in_frame(src):
                guard_structure(tx.ctx, obj, src)
            value = FreshModuleValue(obj, src)
        elif isinstance(obj, torch.Tensor) and type(obj) in (torch.Tensor, torch.nn.Parameter):
            node, fake = tx.ctx.graph.add_input(obj, src)
            tx.ctx.guards.add(Guard(Kind.TENSOR_MATCH, src, TensorMeta.of(obj, fake=fake)))
            value = kinds.TensorValue(node, fake, cls=type(obj), source=src)
        else:
            return wrap(tx.ctx, obj, src)
        tx.ctx.value_cache[id(obj)] = (obj, value)
        return value

    def getattr(self, tx, name):
        from .fresh_module_methods import conversion_method
        method = conversion_method(tx, self, name)   # ``.double()``, ``.eval()``...
        if method is not None:
            return method
        d = self.mod.__dict__
        if made_in_frame(self.source) and name not in self.attrs and type(d.get(name)) in (int, float) \
                and not hasattr(type(self.mod), name):
            # (``in_features``: fixed by the constructor's constant arguments;
            # never a symbol, which the guard function would have to read)
            return ConstantValue(d[name])
        return super().getattr(tx, name)

    def __repr__(self):
        return f"<module {type(self.mod).__name__} made in the frame ({self.source})>"


def guard_structure(ctx, mod, source) -> None:
    """What code may rely on in a module made afresh: its class and its
    member tables' keys; everything else is guarded where it is read."""
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(mod)))
    for table in ("_modules", "_parameters", "_buffers"):
        ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(source, table), list(getattr(mod, table))))


def wrap_fresh_arg(ctx, mod, source) -> FreshModuleValue:
    """A module built in the frame before a graph break, received by the
    resume function (a new object on every call)."""
    guard_structure(ctx, mod, source)
    return FreshModuleValue(mod, source)


# --- construction while tracing ------------------------------------------------------------

def template_args(tx, args, kwargs, what):
    """The real objects to build the template from, and whether any of them
    is a module made in the frame.  Constants, modules made in the frame
    (their templates) and lists, tuples and dicts of those."""
    found = []

    def real(v):
        v = concrete(tx, v)
        if isinstance(v, (NewModuleValue, FreshModuleValue)) and \
                (isinstance(v, NewModuleValue) or made_in_frame(v.source)):
            found.append(v)
            return v.mod
        if isinstance(v, (kinds.ListValue, kinds.TupleValue)) and type(v) in (kinds.ListValue, kinds.TupleValue) and \
                getattr(v, "cls", list if isinstance(v, kinds.ListValue) else tuple) in (list, tuple):
            items = [real(i) for i in v.items]
            return items if isinstance(v, kinds.ListValue) else tuple(items)
        if type(v) is kinds.DictValue and all(type(k) is str for k in v.items):
            return {k: real(i) for k, i in v.items.items()}
        if v.is_python_constant():
            return v.as_python_constant()
        raise Unsupported(f"{what} from {v}, which is not a constant or a module made in the frame",
                          hint="create modules outside and pass them in")

    a = [real(v) for v in args]
    k = {name: real(v) for name, v in kwargs.items()}
    return a, k, found


def build_template(cls, args, kwargs):
    """The module built while tracing, leaving torch's random state as it
    was (the real one is built by the setup, at run time)."""
    devices = []
    if torch.cuda.is_available() and (torch.cuda.is_initialized() or _mentions_cuda(args, kwargs) or
                                      torch.get_default_device().type == "cuda"):
        devices = list(range(torch.cuda.device_count()))
    with torch.random.fork_rng(devices=devices):
        return cls(*args, **kwargs)


def _mentions_cuda(args, kwargs) -> bool:
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.device) and v.type == "cuda" or isinstance(v, str) and v.startswith("cuda"):
            return True
    return False


def new_module(tx, mod, cls_value, args, kwargs, inner: list, what: str) -> FreshModuleValue:
    """Register the setup's construction of ``mod`` (built from ``args``)
    and return its Value.  ``inner``: the Values of modules made in the
    frame passed to the constructor; parameterless ones built lazily so far
    are built by the setup from now on too (one object for both uses)."""
    from .modules import _draws_random_numbers
    ctx = tx.ctx
    auditing = getattr(ctx, "auditing_construction", False)   # (values/nn/user_module_construction.py)
    if getattr(ctx.graph, "is_sandbox", False) and not auditing:
        raise Unsupported(f"{what} while tracing speculatively")
    if getattr(ctx.graph.fake_mode, "export", False):
        name = type(mod).__name__
        raise Unsupported(f"creating the module {name} inside an exported function (an exported program "
                          "has no Python to build it on every call with new random weights)",
                          hint="create the module outside and export a module that holds it")
    if ctx.inference_enabled != ctx.initial_inference_enabled:
        raise Unsupported(f"{what} inside a torch.inference_mode block the trace entered")
    if _draws_random_numbers(ctx.graph) and not auditing:
        raise Unsupported(f"{what} after random numbers were drawn in the same graph",
                          hint="its constructor draws random weights: built before the graph, they would come "
                               "from other random numbers than eager's")
    for v in inner:
        if isinstance(v, NewModuleValue) and v.source is None:
            _register(ctx, v, v.cls_value, v.args, v.kwargs)
            for call in v.calls:   # (conversions made on it so far: after its constructor)
                record_call(ctx, v.source, call)
        ctx.value_cache[id(v.mod)] = (v.mod, v)   # (read back as a member: the same Value)
    value = FreshModuleValue(mod, None)
    _register(ctx, value, cls_value, list(args), dict(kwargs))
    ctx.value_cache[id(mod)] = (mod, value)
    return value


def _register(ctx, value, cls_value, args, kwargs) -> None:
    todo = constructions(ctx)
    src = NewModuleSource(len(todo), type(value.mod).__name__)
    value.source = src
    todo.append(_Construction(src, cls_value, args, kwargs))


def record_call(ctx, target: Source, call: tuple) -> None:
    """A conversion ``(name, args, kwargs)`` of the module at ``target``
    (rooted at a NewModuleSource), made by the setup after what it builds
    before it; consecutive calls on one module are one step."""
    todo = constructions(ctx)
    if todo and isinstance(todo[-1], _Calls) and todo[-1].target == target:
        todo[-1].calls.append(call)
    else:
        todo.append(_Calls(target, [call]))


def emit_setup(ctx, new_emitter):
    """The setup of a transformed function: the modules made in the frame,
    built in program order, and the conversions made on them, in program
    order too (an Emitter, made by ``new_emitter``: the code generator's,
    handed in by the driver), or None when there are none."""
    todo = ctx.__dict__.get("new_modules")
    if not todo:
        return None
    from .fresh_module_methods import emit_with_calls
    out = new_emitter()
    out._ntemps = 1_000_000   # (its temporaries never meet the body's)
    for c in todo:
        if isinstance(c, _Calls):
            emit_with_calls(out, c.target.emit, c.calls)
            out.instr("POP_TOP")
            continue
        emit_construct(out, c.cls_value, c.args, c.kwargs)
        out.instr("STORE_FAST", c.source.name)
    if out.graph_outputs:   # pragma: no cover - arguments are constants and modules
        raise Unsupported("a module made in the frame from graph values")
    return out


def member_of(tx, owner: FreshModuleValue, obj):
    """The Value of ``obj``, a submodule, parameter or buffer of ``owner``'s
    module (``parameters()`` and friends), reached member by member."""
    def walk(value, mod):
        if mod is obj:
            return value
        for table in ("_parameters", "_buffers"):
            for k, t in getattr(mod, table).items():
                if t is obj:
                    return value._member(tx, table, k, t)
        for k, sub in mod._modules.items():
            if sub is not None:
                found = walk(value._member(tx, "_modules", k, sub), sub)
                if found is not None:
                    return found
        return None

    found = walk(owner, owner.mod)
    if found is None:
        raise Unsupported("a module member that cannot be located")
    return found
