"""Custom ``torch.autograd.Function``s: ``MyFn.apply(*args)`` in traced code.

The call becomes ONE node of the graph whose target calls ``MyFn.apply``
with the call's tensors and constants (``FunctionCall``).  Autograd then
sees the real Function, so gradients are the user's ``backward``, never
autograd's derivative of the forward:

* eager backend: the node runs ``MyFn.apply`` on the real tensors; the
  user's ``forward`` and (at ``.backward()`` time) ``backward`` run as
  Python, with the real ``ctx`` (saved tensors, ``needs_input_grad``,
  ``mark_non_differentiable``, attributes, ``once_differentiable``).
* aot_eager / inductor: AOTAutograd traces the graph with fake tensors;
  the node's ``MyFn.apply`` builds a real autograd node there too, and the
  joint forward/backward trace runs the user's ``backward`` through the
  autograd engine, so the compiled backward graph is the user's backward
  (traced once, at compile time).

Tracing the node's output metadata runs ``MyFn.apply`` on the fake tensors
(requires_grad, non-differentiable outputs, shapes: torch's own answer).
That, and AOTAutograd tracing the backward once, are only faithful when
``forward`` and ``backward`` are pure functions of their arguments and of
state the entry guards.  So before anything runs natively, both are
*speculated*: traced by armature in a sandbox (a throwaway graph and side
effect log sharing the trace's fake mode and ShapeEnv, with a stand-in
``ctx``).  Any graph break inside them, a side effect (a write to an outside
object, a global, a print...), an input mutated in place, a tensor read from
outside their arguments, a backward that returns the wrong number or shapes
of gradients, ``mark_dirty``, ``save_for_forward`` or
``set_materialize_grads(False)`` make the call unsupported: a clean graph
break before it, so ``MyFn.apply`` runs natively, as in eager.  The guards
the speculation installs (globals, closures, the functions themselves) are
the entry's.  Arguments must be tensors and constants (a number, a string,
a dtype... or tuples of them); anything else breaks too.
"""
from __future__ import annotations

import inspect

import torch
import torch.fx

from ...diagnostics.errors import Unsupported, UserException
from ...guards.sources import AttrSource, ItemSource
from ..base import Value, concrete, realize
from ..constant import ConstantValue
from ..builder import wrap, wrap_constant_result
from .. import kinds

#: ``torch.autograd.Function.apply`` (a classmethod): the function the
#: builder maps to ApplyValue
#: (torch 2.14 defines apply in C, a classmethod of torch._C._FunctionBase with
#: no __func__: there APPLY is that descriptor, which the builder's Python
#: function check never matches)
APPLY = getattr(torch.autograd.Function.__dict__["apply"], "__func__", torch.autograd.Function.__dict__["apply"])

_CONSTANT_ARG_TYPES = (int, float, bool, str, complex, type(None), torch.dtype, torch.device,
                       torch.layout, torch.memory_format)


class ApplyValue(Value):
    """``Function.apply``, called with the Function class first."""

    def python_type(self):
        return type(APPLY)

    def call(self, tx, args, kwargs):
        if not args:
            raise Unsupported("Function.apply() without a class")
        cls_v = realize(tx.ctx, args[0])
        cls = cls_v.as_python_constant() if cls_v.is_python_constant() else None
        if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
            raise Unsupported(f"Function.apply bound to {cls_v}")
        return apply_function(tx, cls, list(args[1:]), kwargs)

    def reconstruct(self, out):
        out.load_const(APPLY)   # (a BoundMethodValue binds it to the class again)

    def __repr__(self):
        return "<Function.apply>"


def _constant_arg(v):
    if type(v) is tuple:   # (a list is mutable: forward must get the caller's own)
        return all(_constant_arg(i) for i in v)
    return isinstance(v, _CONSTANT_ARG_TYPES) and not isinstance(v, torch.SymInt)


def _is_index_function(cls: type) -> bool:
    """torch's ``ModIndex`` (what ``TransformGetItemToIndex``, used by
    transformers' mask code, turns ``t[i, j]`` into): its forward is
    ``aten.index`` and its backward scatters the gradient into zeros,
    which is ``aten.index``'s own derivative."""
    return cls.__qualname__ == "ModIndex" and cls.__module__.endswith("._trace_wrapped_higher_order_op")


def apply_function(tx, cls: type, args: list[Value], kwargs: dict) -> Value:
    if _is_index_function(cls) and len(args) == 2 and not kwargs:
        return kinds.graph_call(tx, "call_function", torch.ops.aten.index, list(args), {})
    name = cls.__qualname__
    if kwargs:
        raise Unsupported(f"{name}.apply() with keyword arguments")
    layout: list = []        # per argument: None for a tensor, ("c", value) for a constant
    tensors: list[kinds.TensorValue] = []
    for a in args:
        a = realize(tx.ctx, a)
        if isinstance(a, kinds.TensorValue):
            layout.append(None)
            tensors.append(a)
            continue
        a = concrete(tx, a)
        if not a.is_python_constant() or not _constant_arg(a.as_python_constant()):
            raise Unsupported(f"{name}.apply() with the argument {a}",
                              hint="arguments of a custom autograd.Function must be tensors or constants to "
                                   "be traced; the call runs natively")
        layout.append(("c", a.as_python_constant()))
    if not tensors:
        raise Unsupported(f"{name}.apply() without tensor arguments")
    _speculate(tx, cls, layout, tensors)
    return kinds.graph_call(tx, "call_function", FunctionCall(cls, tuple(layout)), list(tensors), {})


class FunctionCall:
    """The graph node's target: ``cls.apply`` with the node's tensors put
    back among the constants of the traced call."""

    def __init__(self, cls: type, layout: tuple):
        self.cls, self.layout = cls, layout
        self.__name__ = f"{cls.__name__}_apply"
        self.__qualname__ = self.__name__

    def __call__(self, *tensors):
        it = iter(tensors)
        args = [next(it) if item is None else item[1] for item in self.layout]
        return self.cls.apply(*args)

    def __repr__(self):
        return f"{self.cls.__qualname__}.apply"


# --- speculation ---------------------------------------------------------------

def _static_function(cls: type, name: str):
    """(function, source) of the staticmethod ``cls.name``."""
    from ..objects.objects import class_source, find_class_attr
    raw, owner = find_class_attr(cls, name)
    if not isinstance(raw, staticmethod) or not inspect.isfunction(raw.__func__):
        raise Unsupported(f"{cls.__qualname__}.{name} is not a Python staticmethod")
    return raw.__func__, AttrSource(ItemSource(AttrSource(class_source(owner), "__dict__"), name), "__func__")


def _backward_name(cls: type) -> str:
    base = torch.autograd.function._SingleLevelFunction
    has_backward = find_raw(cls, "backward") is not find_raw(base, "backward")
    has_vjp = find_raw(cls, "vjp") is not find_raw(base, "vjp")
    if has_backward and has_vjp:
        raise Unsupported(f"{cls.__qualname__} defines both backward and vjp")
    return "vjp" if has_vjp else "backward"


def find_raw(cls, name):
    from ..objects.objects import find_class_attr
    return find_class_attr(cls, name)[0]


def _speculate(tx, cls: type, layout: list, tensors: list) -> None:
    """Trace forward (and, where gradients can flow, backward) in a sandbox;
    raise Unsupported unless both are pure.  Their guards become the
    entry's."""
    main = tx.ctx
    name = cls.__qualname__
    sub = main.sandbox()
    # Everything they read is a constant of the entry: AOTAutograd bakes
    # what the backward reads into the compiled backward graph.
    from ...graph.dynamic import DynamicPolicy
    sub.policy = DynamicPolicy(mode=False)
    sub.dynamic_sources = frozenset()
    setup = torch.autograd.function._is_setup_context_defined(cls.setup_context)
    forward, forward_src = _static_function(cls, "forward")
    needs_grad = main.graph_grad_enabled and any(t.fake.requires_grad for t in tensors)
    backward = _static_function(cls, _backward_name(cls)) if needs_grad else None
    real_grad = torch.is_grad_enabled()
    try:
        sub.grad_enabled = sub.graph_grad_enabled = False   # forward and backward run under no_grad
        torch._C._set_grad_enabled(False)
        arg_values, placeholders = _sandbox_args(sub, layout, tensors)
        ctx_v = FunctionCtxValue(tuple(item is None and t.fake.requires_grad
                                       for item, t in zip(layout, _spread(layout, tensors))))
        if setup:
            out = _inline(tx, sub, forward, forward_src, arg_values)
            setup_fn = _static_function(cls, "setup_context")
            _inline(tx, sub, *setup_fn, [ctx_v, kinds.TupleValue(list(arg_values)), out])
        else:
            out = _inline(tx, sub, forward, forward_src, [ctx_v, *arg_values])
        outs = _tensor_outputs(out, name)
        if backward is not None:
            ctx_v.in_backward = True
            grads = []
            for o in outs:
                with sub.graph.fake_mode:
                    g = torch.empty_like(o.fake)
                grads.append(_placeholder(sub, g, f"grad{len(grads)}", placeholders))
            result = _inline(tx, sub, *backward, [ctx_v, *grads])
            _check_gradients(result, arg_values, name)
    except UserException as e:
        raise Unsupported(f"{name}: speculating it raised {e}") from e
    finally:
        torch._C._set_grad_enabled(real_grad)
    _check_pure(sub, placeholders, name)
    for g in sub.guards:
        main.guards.add(g)


def _spread(layout, tensors):
    it = iter(tensors)
    return [next(it) if item is None else None for item in layout]


def _placeholder(sub, fake, label, placeholders):
    node = sub.graph.graph.placeholder(label)
    node.meta["val"] = node.meta["example_value"] = fake
    placeholders.append(node)
    return kinds.TensorValue(node, fake)


def _sandbox_args(sub, layout, tensors):
    values, placeholders = [], []
    for i, (item, t) in enumerate(zip(layout, _spread(layout, tensors))):
        if item is None:
            values.append(_placeholder(sub, t.fake, f"arg{i}", placeholders))
        else:
            values.append(_constant_value(item[1]))
    return values, placeholders


def _constant_value(v):
    return wrap_constant_result(v)


def _inline(tx, sub, fn, source, args: list) -> Value:
    if tx.depth + 1 > sub.config.inline_depth_limit:
        raise Unsupported("custom autograd.Function too deep in the inlining stack")
    fn_v = wrap(sub, fn, source)
    if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE):
        raise Unsupported(f"{fn.__qualname__} is a generator")
    bound = fn_v.bind(args, {}, ctx=sub)
    return sub.make_frame(fn_v, bound, tx).run()


def _tensor_outputs(out: Value, name: str) -> list:
    if isinstance(out, kinds.ListValue) or isinstance(out, kinds.TupleValue) and out.cls is not tuple:
        raise Unsupported(f"{name}.forward returns a {out.python_type().__name__}")
    items = out.items if isinstance(out, kinds.TupleValue) else [out]
    if not items or not all(isinstance(i, kinds.TensorValue) for i in items):
        raise Unsupported(f"{name}.forward returns something other than a tensor or a tuple of tensors")
    return list(items)


def _check_gradients(result: Value, args: list, name: str) -> None:
    grads = list(result.items) if isinstance(result, (kinds.TupleValue, kinds.ListValue)) else [result]
    if len(grads) < len(args):
        raise Unsupported(f"{name}.backward returns {len(grads)} gradients for {len(args)} inputs")
    for i, g in enumerate(grads):
        none = isinstance(g, ConstantValue) and g.value is None
        if i >= len(args) or not isinstance(args[i], kinds.TensorValue):
            if not none:
                raise Unsupported(f"{name}.backward returns a gradient for the non-tensor input {i}")
            continue
        if none:
            continue
        if not isinstance(g, kinds.TensorValue):
            raise Unsupported(f"{name}.backward returns {g} as gradient {i}")
        if tuple(g.fake.shape) != tuple(args[i].fake.shape):
            raise Unsupported(f"{name}.backward returns a gradient of shape {tuple(g.fake.shape)} for an input "
                              f"of shape {tuple(args[i].fake.shape)}")


def _check_pure(sub, placeholders: list, name: str) -> None:
    from ...graph.output_graph import _is_mutation
    if len(sub.effects):
        what = "; ".join(sub.effects.describe())
        raise Unsupported(f"{name}: forward or backward has side effects{f' ({what})' if what else ''}",
                          hint="the call runs natively (a graph break)")
    if sub.graph.tensor_inputs() or sub.graph.attrs:
        raise Unsupported(f"{name}: forward or backward reads tensors that are not its arguments",
                          hint="pass them to apply() to keep the call in the graph")
    vals = [p.meta["val"] for p in placeholders]
    for node in sub.graph.graph.nodes:
        if node.op in ("call_function", "call_method") and _is_mutation(node.op, node.target, node.kwargs):
            target = node.kwargs.get("out", node.args[0] if node.args else None)
            val = target.meta.get("val") if isinstance(target, torch.fx.Node) else None
            if isinstance(val, torch.Tensor) and any(torch._C._is_alias_of(val, p) for p in vals):
                raise Unsupported(f"{name}: forward or backward mutates an input in place")


# --- ctx ---------------------------------------------------------------------

_CTX_METHODS = frozenset({"save_for_backward", "mark_non_differentiable", "set_materialize_grads",
                          "mark_dirty", "save_for_forward"})


class FunctionCtxValue(Value):
    """The ``ctx`` of a speculated forward/backward: records what they do
    with it (the real ctx is used when the call runs)."""

    def __init__(self, needs_input_grad: tuple):
        super().__init__()
        self.needs_input_grad = needs_input_grad
        self.attrs: dict[str, Value] = {}
        self.saved: list | None = None
        self.in_backward = False

    def python_type(self):
        return torch.autograd.function.BackwardCFunction

    def getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return ConstantValue(self.needs_input_grad)
        if name in ("saved_tensors", "saved_variables"):
            if not self.in_backward or self.saved is None:
                raise Unsupported(f"ctx.{name} outside backward, or without save_for_backward")
            return kinds.TupleValue(list(self.saved))
        if name in _CTX_METHODS:
            return _CtxMethod(self, name)
        raise Unsupported(f"ctx.{name} of a custom autograd.Function")

    def setattr(self, tx, name, value):
        if name in _CTX_METHODS or name in ("needs_input_grad", "saved_tensors", "saved_variables",
                                            "materialize_grads", "to_save", "non_differentiable", "dirty_tensors"):
            raise Unsupported(f"assigning ctx.{name}")
        self.attrs[name] = value

    def __repr__(self):
        return "<autograd.Function ctx>"


class _CtxMethod(Value):
    def __init__(self, ctxv: FunctionCtxValue, name: str):
        super().__init__()
        self.ctxv, self.name = ctxv, name

    def call(self, tx, args, kwargs):
        name = self.name
        if kwargs:
            raise Unsupported(f"ctx.{name}() with keyword arguments")
        args = [realize(tx.ctx, a) for a in args]
        if name in ("mark_dirty", "save_for_forward"):
            raise Unsupported(f"ctx.{name}() in a custom autograd.Function")
        if name == "set_materialize_grads":
            if len(args) != 1 or not args[0].is_python_constant() or args[0].as_python_constant() is not True:
                raise Unsupported("ctx.set_materialize_grads(False): backward may get None gradients")
            return ConstantValue(None)
        for a in args:
            if not (isinstance(a, kinds.TensorValue) or isinstance(a, ConstantValue) and a.value is None):
                raise Unsupported(f"ctx.{name}() of {a}")
        if name == "save_for_backward":
            if self.ctxv.in_backward:
                raise Unsupported("ctx.save_for_backward() in backward")
            self.ctxv.saved = list(args)
        return ConstantValue(None)
