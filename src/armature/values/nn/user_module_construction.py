"""User ``nn.Module`` subclasses constructed inside the compiled frame
(``MyBlock(64)(x)``), kept in the graph.

torch.nn's own constructors are trusted: given constant arguments they build
the same structure every time and touch nothing outside the new module, so
values/nn/fresh_modules.py builds the module for real in the transformed
function's *setup* (before the graph runs) on every call, and the trace
reads a template of it.  A user's ``__init__`` is arbitrary Python: it could
bump a global counter, append ``self`` to a registry, print, or read state
the frame changed just before.  Running it in the setup would then be a
different program (the effect too early, or missing from the trace's
replay).

So a user constructor is *audited* first: its ``__init__`` is traced
symbolically in a sandbox context (TraceContext.sandbox: its own graph,
guards and side-effect log) with ``self`` a :class:`ModuleUnderConstruction`
that records attribute writes and the ``register_*``/``add_module`` calls
instead of running ``nn.Module.__setattr__``.  The construction is kept in
the graph only when that trace is clean:

* it records no side effect on anything that existed before the call
  (globals, cells, outside objects and containers; writes to ``self`` and to
  objects it made are its own business);
* it reads no tensor other than members of modules made in the frame (a
  tensor from outside may be changed by the graph before the constructor
  would have run), and changes in place no tensor of a module made in the
  frame that was passed to it (the graph may have read it before);
* the frame has changed nothing outside itself before the call (the
  sandbox does not see those pending writes, and the setup runs before
  them: a constructor reading that state would read the old value);
* the arguments are immutable constants or modules made in the frame (a
  list argument the constructor appended to would be the frame's list in
  eager).

Anything the audit cannot model (a ``print``, ``self.apply(...)``, a data-
dependent branch) is Unsupported: the constructor call is then a graph break
and runs natively, as before.  The audit's guards (globals and class
attributes the constructor read, the ``__init__`` functions it ran) become
the entry's, so the structure the template has is the structure the setup
builds on every later call.  Random draws keep eager's order by the same
rule as torch.nn modules (values/nn/fresh_modules.py): no random op earlier in
the same graph.
"""
from __future__ import annotations

import types

import torch

from ...diagnostics.errors import Unsupported, UserException
from ...guards.sources import AttrSource, ItemSource
from ..base import Value, concrete, realize
from ..constant import ConstantValue
from ..objects.objects import ObjectValue, _MISSING, bind_attr, class_source
from ..builder import wrap
from .. import kinds

#: nn.Module methods a constructor calls to register members: they are
#: recorded as attribute writes of the module under construction
_REGISTRARS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})


_HINT = ("the constructor call runs natively (a graph break); create the module outside the compiled function "
         "and pass it in, or move that out of its __init__, to keep one graph")


def is_user_module_class(cls: type) -> bool:
    """A subclass of nn.Module defined outside torch."""
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module) and not cls.__module__.startswith("torch.")


def audit(tx, cls_value, args: list, kwargs: dict, what: str) -> None:
    """Raise Unsupported unless building ``cls(*args, **kwargs)`` in the
    setup is indistinguishable from eager building it at the call (see the
    module docstring); on success the audit's guards are the entry's."""
    cls = cls_value.cls
    if isinstance(cls_value, kinds.MadeClassValue) or cls_value.source is None:
        # (the setup would run before the class statement: it would build
        # the module from another class object than the frame's)
        raise Unsupported(f"{what}: its class is made by a class statement in the frame", hint=_HINT)
    _check_class(cls, what)
    argument_roots = _check_arguments(tx, args, kwargs, what)
    main = tx.ctx
    if len(main.effects):
        raise Unsupported(f"{what} after the frame changed state outside itself",
                          hint="the constructor would run before those changes; create the module before them "
                               "or outside the compiled function")
    init_raw, owner, _ = cls_value.lookup(tx, "__init__")
    if init_raw is torch.nn.Module.__init__:
        if args or kwargs:
            raise Unsupported(f"{what}: nn.Module.__init__ takes no arguments")
        return
    if not isinstance(init_raw, types.FunctionType):
        raise Unsupported(f"{what}: its __init__ is not a Python function")
    sub = main.sandbox()
    # modules it makes are built by the real constructor: the sandbox's own
    # list, numbered after the frame's so that no two modules share a source
    from .fresh_modules import constructions
    sub.__dict__["new_modules"] = [None] * len(constructions(main))
    sub.auditing_construction = True
    obj = ModuleUnderConstruction(cls)
    source = ItemSource(AttrSource(class_source(owner), "__dict__"), "__init__")
    try:
        _run_init(tx, sub, init_raw, source, [obj, *args], dict(kwargs))
    except UserException as e:
        raise Unsupported(f"{what}: its __init__ raised {e.what}", hint=_HINT) from e
    except Unsupported as e:   # (keeps the user stack down into __init__)
        e.what = f"{what}: in its constructor, {e.what}"
        e.args = (e.what,)
        e.hint = _HINT
        raise
    _check_clean(sub, what, argument_roots)
    for g in sub.guards:
        main.guards.add(g)


def _check_class(cls: type, what: str) -> None:
    for klass in cls.__mro__:
        if klass is torch.nn.Module:
            break
        if klass.__module__.startswith("torch."):
            raise Unsupported(f"{what}: a subclass of {klass.__qualname__}, whose constructor is not modelled",
                              hint="create the module outside the compiled function and pass it in")
        if type(klass) is not type:
            raise Unsupported(f"{what}: {klass.__qualname__} has the metaclass {type(klass).__name__}")
        if "__new__" in klass.__dict__ or "__setattr__" in klass.__dict__ or "__getattr__" in klass.__dict__:
            raise Unsupported(f"{what}: {klass.__qualname__} defines its own attribute protocol or __new__")


def _check_arguments(tx, args, kwargs, what) -> set:
    """Refuse arguments other than immutable constants and modules made in
    the frame; return the setup locals of the latter that hold tensors
    (the graph may have read them before the call: ``_check_clean``)."""
    from .fresh_modules import made_in_frame
    roots = set()
    for v in (*args, *kwargs.values()):
        v = concrete(tx, v)
        if isinstance(v, kinds.FreshModuleValue) and made_in_frame(v.source):
            roots.add(v.source.root())
        elif not (isinstance(v, kinds.NewModuleValue) or v.is_python_constant() and
                  _immutable_constant(v.as_python_constant())):
            raise Unsupported(f"{what} from {v}, which is not an immutable constant or a module made in the frame",
                              hint="pass numbers, strings, tuples or modules made in the frame; or create the "
                                   "module outside and pass it in")
    return roots


def _immutable_constant(c) -> bool:
    if c is None or type(c) in (bool, int, float, complex, str, bytes, torch.dtype, torch.device, range,
                                 type(Ellipsis)):
        return True
    if type(c) in (tuple, frozenset):
        return all(_immutable_constant(i) for i in c)
    return False


def _run_init(tx, sub, fn, source, args, kwargs) -> Value:
    if tx.depth + 1 > sub.config.inline_depth_limit:
        raise Unsupported("a module constructor too deep in the inlining stack")
    fn_v = wrap(sub, fn, source)
    bound = fn_v.bind(args, kwargs, ctx=sub)
    return sub.make_frame(fn_v, bound, tx).run()


def _check_clean(sub, what: str, argument_roots: set) -> None:
    from ...graph.output_graph import _is_mutation
    from .fresh_modules import made_in_frame
    if len(sub.effects):
        effects = "; ".join(sub.effects.describe())
        raise Unsupported(f"{what}: its constructor changes state outside the module"
                          f"{f' ({effects})' if effects else ''}",
                          hint=_HINT)
    for i in sub.graph.tensor_inputs():
        if not made_in_frame(i.source):
            raise Unsupported(f"{what}: its constructor reads the tensor {i.source}",
                              hint="the graph may change it before the constructor would run")
    if sub.graph.attrs:
        raise Unsupported(f"{what}: its constructor reads constant tensors of another module")
    # an in-place change of a tensor of a module passed in: the setup would
    # make it before the graph, which may have read the tensor first
    passed_in = [i.node.meta.get("val") for i in sub.graph.tensor_inputs() if i.source.root() in argument_roots]
    for node in sub.graph.graph.nodes:
        if node.op in ("call_function", "call_method") and _is_mutation(node.op, node.target, node.kwargs):
            target = node.kwargs.get("out", node.args[0] if node.args else None)
            val = target.meta.get("val") if isinstance(target, torch.fx.Node) else None
            if not isinstance(val, torch.Tensor) or any(
                    isinstance(p, torch.Tensor) and torch._C._is_alias_of(val, p) for p in passed_in):
                raise Unsupported(f"{what}: its constructor changes a tensor of a module passed to it in place",
                                  hint=_HINT)


class ModuleUnderConstruction(ObjectValue):
    """``self`` while an audited ``__init__`` runs: a new user module whose
    attribute writes (and ``register_buffer``/``register_parameter``/
    ``add_module``) are recorded as plain instance attributes.  Only what
    the constructor itself wrote can be read back; anything of nn.Module's
    own machinery it asks for (``self.parameters()``, ``self.apply``,
    hooks) is Unsupported, which fails the audit (a graph break)."""

    def __init__(self, cls: type):
        super().__init__(None, None, cls=cls, is_new=True)

    def getattr(self, tx, name):
        if name in _REGISTRARS:
            return _Registrar(self, name)
        v = self.attrs.get(name, _MISSING)
        if v is not _MISSING:
            return v
        if name == "training" and "training" not in self.attrs:
            return ConstantValue(True)
        cls_value = self._class_value(tx)
        raw, owner, _ = cls_value.lookup(tx, name)
        if raw is _MISSING:
            raise Unsupported(f"reading {name!r} of a module under construction before it was set")
        if owner.__module__.startswith("torch."):
            raise Unsupported(f"nn.Module.{name} of a module under construction")
        return bind_attr(tx, raw, owner, name, self, cls_value)

    def setattr(self, tx, name, value):
        self.attrs[name] = value

    def delattr(self, tx, name):
        if name not in self.attrs:
            raise Unsupported(f"deleting {name!r} of a module under construction")
        del self.attrs[name]

    def super_attr(self, tx, name: str):
        """``super().name`` reaching nn.Module itself: only ``__init__``."""
        if name == "__init__":
            return _ModuleInit()
        raise Unsupported(f"super().{name} (nn.Module's) in a module constructor")

    def __repr__(self):
        return f"<{self.cls.__qualname__} under construction>"


class _ModuleInit(Value):
    """``super().__init__()`` reaching ``nn.Module.__init__``: sets up the
    member tables, which the real constructor does for real."""

    def call(self, tx, args, kwargs):
        if args or kwargs:
            raise Unsupported("nn.Module.__init__ called with arguments in a module constructor")
        return ConstantValue(None)


class _Registrar(Value):
    """``self.register_buffer(name, t)`` and friends in an audited constructor."""

    def __init__(self, owner: ModuleUnderConstruction, method: str):
        super().__init__()
        self.owner, self.method = owner, method

    def call(self, tx, args, kwargs):
        if len(args) < 2:
            raise Unsupported(f"{self.method}() with {len(args)} arguments in a module constructor")
        name = concrete(tx, args[0])
        if not (name.is_python_constant() and type(name.as_python_constant()) is str):
            raise Unsupported(f"{self.method}() with a name that is not a constant string")
        self.owner.attrs[name.as_python_constant()] = args[1]
        return ConstantValue(None)


def audited_parameter(tx, args, kwargs) -> Value:
    """``nn.Parameter(data)`` in an audited constructor: the data (the real
    constructor makes the Parameter; the audit only needs what is read)."""
    data = args[0] if args else kwargs.get("data")
    if data is None:
        raise Unsupported("nn.Parameter() without data in a module constructor")
    data = realize(tx.ctx, data)
    if not isinstance(data, kinds.TensorValue):
        raise Unsupported(f"nn.Parameter({data}) in a module constructor")
    return data


def module_init_call(tx, fn, args, kwargs) -> Value | None:
    """``nn.Module.__init__(self)`` called explicitly on the module under
    construction (older code's spelling of ``super().__init__()``); None
    for any other call."""
    if fn is torch.nn.Module.__init__ and args and isinstance(args[0], ModuleUnderConstruction):
        return _ModuleInit().call(tx, list(args[1:]), kwargs)
    return None
