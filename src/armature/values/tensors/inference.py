"""Inference mode: ``torch.inference_mode()`` inside compiled code, and
which tensors of a trace are inference tensors.

A call made under inference mode is traced with the mode off and grad off
(trace/context.compiling_state) and its graph runs under the caller's real
inference mode, which the entry guards; its results are inference tensors
as in eager without anything more.

A ``with torch.inference_mode():`` block inside the traced code is, for the
graph, a ``no_grad`` region (inference mode is no_grad plus bookkeeping
autograd no longer needs): the switch is recorded as
``torch._C._set_grad_enabled``, which every backend understands.  What
differs is only which tensors are inference tensors, and that is tracked
here: a node made while the traced code is in inference mode is marked
(``node.meta["inference"]``); a tensor is an inference tensor if it was
made in inference mode, except that a view or an in-place result has the
status of the tensor it aliases (torch's rules: a view of a normal tensor
made in inference mode is normal, a view of an inference tensor made
outside is an inference tensor); a graph input's status is read from the
real tensor and guarded.  Graph outputs that must be inference tensors but
come out of the backend as normal ones are turned into inference tensors
over the same storage (``as_inference``, no copy), so ``is_inference()``,
aliasing, and the errors eager raises on them later are eager's.

What eager refuses about inference tensors made in the region, the trace
does not model: an in-place update of one outside inference mode, or one
used by an op that records autograd, is a graph break, so the operation
runs natively and raises (or not) as in eager.
"""
from __future__ import annotations

import operator

import torch
import torch.fx

from ...diagnostics.errors import Unsupported
from ..base import Value
from ..constant import ConstantValue
from .torch_ops import GradModeValue
from .. import kinds

INFERENCE = "inference"


# --- the context manager -----------------------------------------------------

class InferenceModeValue(GradModeValue):
    """``torch.inference_mode(mode)``: entering sets inference mode to
    ``mode`` and grad mode to ``not mode`` (as ``c10::InferenceMode``
    does); leaving restores both."""

    def __init__(self, target: bool):
        super().__init__(torch.inference_mode, target)
        self.prev_inference: bool | None = None

    def enter(self, tx) -> Value:
        ctx = tx.ctx
        if not self.target and ctx.initial_inference_enabled:
            raise Unsupported("torch.inference_mode(False) inside a compiled function called under "
                              "inference mode",
                              hint="without fullgraph the frame is split here (a graph break); the block "
                                   "then runs with inference mode really off")
        self.prev, self.prev_inference = ctx.grad_enabled, ctx.inference_enabled
        if self.target != ctx.inference_enabled:
            # a break inside the block goes to this enter (Frame._annotate)
            from .torch_function import _root_origin
            self.region = ctx.enter_unsplittable(_root_origin(tx))
        ctx.set_inference_mode(self.target, grad=not self.target)
        return ConstantValue(None)

    def exit(self, tx) -> Value:
        if self.prev_inference is None:
            raise Unsupported("leaving a torch.inference_mode block entered outside the compiled code",
                              hint="the exit runs natively (a graph break)")
        tx.ctx.set_inference_mode(self.prev_inference, grad=self.prev)
        if getattr(self, "region", None) is not None:
            tx.ctx.leave_unsplittable(self.region)
            self.region = None
        return ConstantValue(False)

    def getattr(self, tx, name):
        if name == "mode":
            return ConstantValue(self.target)
        return super().getattr(tx, name)

    def reconstruct(self, out):
        if self.prev_inference is None:   # a fresh context object
            out.instr("PUSH_NULL")
            out.load_const(torch.inference_mode)
            out.load_const(self.target)
            out.call(1)
            return
        raise Unsupported("a torch.inference_mode context that is active across a graph break",
                          hint="the frame runs as Python; move the break out of the inference_mode block")

    def reconstruct_exit(self, out):
        """The ``__exit__`` a graph break inside the block leaves on the
        stack.  Possible only where the block did not change the real mode
        (``inference_mode()`` nested in inference mode): leaving it then
        only restores grad mode.  A block that switched the mode cannot be
        split (the graph ran it as no_grad)."""
        if self.prev_inference is None or self.prev_inference != self.target:
            raise Unsupported("a graph break inside a torch.inference_mode block that switched the mode",
                              hint="the frame runs as Python; move the break out of the inference_mode block")
        out.call_helper(_grad_restoring_exit, self.prev, pop=False)


def _grad_restoring_exit(prev_grad: bool):
    def __exit__(*exc_info):
        torch._C._set_grad_enabled(prev_grad)
        return False
    return __exit__


def wrap_inference_mode(ctx, obj, source) -> Value:
    """A real ``torch.inference_mode`` object (a decorator's, a stored one)."""
    from ...guards.guard import Guard, Kind
    from ...guards.sources import AttrSource
    if source is not None:
        ctx.guards.add(Guard(Kind.CONSTANT_MATCH, AttrSource(source, "mode"), obj.mode))
    # Entering it in the trace is modelled (without the private attribute
    # eager's __enter__ stores on it); leaving a block that it entered
    # outside the trace runs natively (exit() refuses: no prev state).
    return InferenceModeValue(bool(obj.mode))


def make_inference_mode(tx, args, kwargs) -> Value:
    """``torch.inference_mode(mode=True)`` called in the trace."""
    from .grad_decorators import decorate, is_function_argument
    if is_function_argument(args, kwargs, "mode"):   # ``torch.inference_mode(fn)``: decorates fn
        return decorate(tx, torch.inference_mode, True, args or [kwargs["mode"]], {})
    mode = args[0] if args else kwargs.get("mode", ConstantValue(True))
    if not mode.is_python_constant() or not isinstance(mode.as_python_constant(), bool):
        raise Unsupported("torch.inference_mode() applied to a function inside compiled code",
                          hint="decorate the function outside the compiled code")
    return InferenceModeValue(mode.as_python_constant())


# --- which tensors are inference tensors --------------------------------------

def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The tensor arguments of ``node``; for ``getitem`` of a multi-output
    op, those of the op."""
    flat = []
    torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
    return [a for a in flat if isinstance(_val(a), torch.Tensor)]


def _creator(node: torch.fx.Node) -> torch.fx.Node:
    """The node that made ``node``'s tensor (a multi-output op for getitem)."""
    if node.op == "call_function" and node.target is operator.getitem and node.args and \
            isinstance(node.args[0], torch.fx.Node) and isinstance(_val(node.args[0]), (tuple, list)):
        return node.args[0]
    return node


def _alias_base(node: torch.fx.Node) -> torch.fx.Node | None:
    val = _val(node)
    if not isinstance(val, torch.Tensor):
        return None
    for a in _tensor_args(_creator(node)):
        if a is not node and torch._C._is_alias_of(val, _val(a)):
            return a
    return None


def resolve(node: torch.fx.Node) -> tuple[str, object]:
    """``("input", node)``: the status is the graph input's (or attribute's)
    ``node``; ``("made", bool)``: decided by the mode it was made in."""
    while True:
        if node.op in ("placeholder", "get_attr"):
            return "input", node
        base = _alias_base(node)
        if base is None:
            return "made", bool(_creator(node).meta.get(INFERENCE))
        node = base


def is_inference(tx, t) -> bool:
    """``t.is_inference()`` for a TensorValue; a graph input's answer is
    guarded."""
    kind, what = resolve(t.node)
    if kind == "made":
        return what
    graph = tx.ctx.graph
    if what.op == "get_attr":
        return graph.attrs[what.target].is_inference()   # identity-guarded module state
    for gi in graph.inputs:
        if gi.node is what:
            real = gi.real.is_inference()
            from ...guards.guard import Guard, Kind
            from .symbolic import CallSource
            tx.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, CallSource(torch.Tensor.is_inference, (gi.source,)), real))
            return real
    raise Unsupported("is_inference() of a tensor that is not a graph input")


def _made_in_region(ctx, v) -> bool:
    if not isinstance(v, kinds.TensorValue):
        return False
    kind, what = resolve(v.node)
    return kind == "made" and what


def check_op(tx, kind: str, target, args, kwargs) -> None:
    """An op outside inference mode on a tensor the trace made inside it
    (only called once the trace has entered inference mode itself)."""
    ctx = tx.ctx
    if ctx.inference_enabled:
        return
    from ...graph.output_graph import _is_mutation
    if _is_mutation(kind, target, kwargs):
        mutated = kwargs.get("out") if "out" in kwargs else (args[0] if args else None)
        if mutated is not None and _made_in_region(ctx, mutated):
            raise Unsupported("an in-place update of an inference tensor outside inference mode",
                              hint="it runs natively, where torch raises as in eager")
    if ctx.graph_grad_enabled:
        tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, kinds.TensorValue)]
        if any(v.fake.requires_grad for v in tensors) and any(_made_in_region(ctx, v) for v in tensors):
            raise Unsupported("an inference tensor used by an op that autograd records",
                              hint="it runs natively, where torch raises as in eager if the op saves it")


# --- outputs -----------------------------------------------------------------

def as_inference(t: torch.Tensor) -> torch.Tensor:
    """An inference tensor over ``t``'s storage (no copy)."""
    with torch.inference_mode():
        r = torch.empty((0,), dtype=t.dtype, device=t.device)
        r.set_(t.untyped_storage(), t.storage_offset(), t.size(), t.stride())
    return r


class InferenceOutputs:
    """The compiled graph, with the outputs that eager makes in an
    inference-mode block turned into inference tensors."""

    def __init__(self, compiled, indices: list[int]):
        self.compiled = compiled
        self.indices = indices

    def __call__(self, *args):
        out = list(self.compiled(*args))
        for i in self.indices:
            t = out[i]
            if not t.is_inference():
                out[i] = as_inference(t)
        return out


def wrap_outputs(ctx, compiled, outputs: list):
    """``compiled`` wrapped as needed for a trace that entered inference mode."""
    if not ctx.inference_regions or ctx.initial_inference_enabled:
        return compiled
    indices = [i for i, n in enumerate(outputs)
               if isinstance(n, torch.fx.Node) and isinstance(_val(n), torch.Tensor) and resolve(n) == ("made", True)]
    return InferenceOutputs(compiled, indices) if indices else compiled
