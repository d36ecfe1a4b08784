"""torch's named debugging backends that run on CPU, under the names
``torch.compile`` accepts (``torch._dynamo.list_backends(None)``), so a
program or a bisection script written for torch.compile runs unchanged:

* ``aot_eager_default_partitioner``: AOTAutograd, default partitioner, no-op
  compilers (keeps inference input mutations in the graph);
* ``aot_eager_decomp_partition``: AOTAutograd with inductor's decompositions
  and inductor's min-cut partitioner, no-op compilers: everything inductor
  does before code generation, to tell inductor bugs from AOT ones;
* ``aot_eager_decomp_partition_crossref``: the same, each op of the compiled
  graphs cross-checked against fake-tensor propagation (custom ops unless
  ``torch._functorch.config.fake_tensor_crossref`` says more);
* ``aot_eager_decomp_partition_with_mode``: the same under a
  TorchDispatchMode (``options={"mode": mode}``);
* ``eager_noexcept``: the graph as it is; an exception inside it is reported
  as the graph's, not the program's;
* ``eager_debug``: the graph interpreted node by node under SchemaCheckMode
  (custom ops whose schema lies about mutation or aliasing raise);
* ``pre_dispatch_eager``: the graph retraced by make_fx in pre-dispatch mode;
* ``ts`` and ``aot_ts``: TorchScript, directly or after AOTAutograd;
* the ``*_TESTING_ONLY`` backends torch's minifier tests use: a graph with a
  ``relu`` fails to compile, fails at run time, or computes a wrong result.

Each follows what torch's own backend of that name does
(torch/_dynamo/backends/debugging.py), built on the same public-to-backends
pieces (AOTAutograd, functorch's partitioners, inductor's decomposition
table); none imports Dynamo.  GPU-only (``cudagraphs``) and external
(``tvm``, ``openxla``) backends, Dynamo's minifier backends and
``invoke_subgraph`` (which needs Dynamo's ``disable``) are not provided.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Callable

import torch

from . import register_backend

log = logging.getLogger("armature.backends")


def _boxed_nop(fx_g: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    from torch._functorch.aot_autograd import make_boxed_func
    return make_boxed_func(fx_g.forward)


def _boxed_nop_with_mode(fx_g: torch.fx.GraphModule, example_inputs: list, *, mode) -> Callable[..., Any]:
    forward = _boxed_nop(fx_g, example_inputs)

    def run(args):
        with mode:
            return forward(args)

    run._boxed_call = True
    return run


def _crossref_boxed_nop(fx_g: torch.fx.GraphModule, example_inputs: list, ignore_op_fn=None) -> Callable[..., Any]:
    forward = _boxed_nop(fx_g, example_inputs)

    def run(args):
        with torch._subclasses.CrossRefFakeMode(ignore_op_fn):
            return forward(args)

    run._boxed_call = True
    return run


def _ignore_builtin_ops(op) -> bool:
    return op.namespace in ("aten", "prims", "prim")


def _nop_compiler():
    """torch's ``get_nop_func``: plain, or cross-checked per
    ``torch._functorch.config.fake_tensor_crossref``."""
    setting = torch._functorch.config.fake_tensor_crossref
    if not setting:
        return _boxed_nop
    if setting == "all":
        return _crossref_boxed_nop
    return functools.partial(_crossref_boxed_nop, ignore_op_fn=_ignore_builtin_ops)


def _aot(gm, example_inputs, fw, bw=None, **kwargs):
    from torch._functorch.aot_autograd import aot_module_simplified
    return aot_module_simplified(gm, example_inputs, fw_compiler=fw, bw_compiler=bw or fw,
                                 inference_compiler=fw, **kwargs)


def _inductor_decomp_partition_kwargs() -> dict:
    from functorch.compile import min_cut_rematerialization_partition
    from torch._inductor.compile_fx import select_decomp_table
    return {"decompositions": select_decomp_table(),
            "partition_fn": functools.partial(min_cut_rematerialization_partition, compiler="inductor")}


@register_backend("aot_eager_default_partitioner")
def aot_eager_default_partitioner(gm, example_inputs):
    return _aot(gm, example_inputs, _boxed_nop, keep_inference_input_mutations=True)


@register_backend("aot_eager_decomp_partition")
def aot_eager_decomp_partition(gm, example_inputs):
    import torch._functorch.config as functorch_config
    with functorch_config.patch({"unlift_effect_tokens": True}):
        return _aot(gm, example_inputs, _nop_compiler(), **_inductor_decomp_partition_kwargs())


@register_backend("aot_eager_decomp_partition_crossref")
def aot_eager_decomp_partition_crossref(gm, example_inputs):
    import torch._functorch.config as functorch_config
    setting = functorch_config.fake_tensor_crossref or "custom_ops"
    with functorch_config.patch(fake_tensor_crossref=setting):
        return aot_eager_decomp_partition(gm, example_inputs)


def _check_mode_options(options: dict) -> None:
    if set(options) != {"mode"}:
        raise ValueError("aot_eager_decomp_partition_with_mode takes options={'mode': a TorchDispatchMode}, "
                         f"got {sorted(options)}")


@register_backend("aot_eager_decomp_partition_with_mode", check_options=_check_mode_options)
def aot_eager_decomp_partition_with_mode(gm, example_inputs, options=None):
    if not options or "mode" not in options:
        raise ValueError("aot_eager_decomp_partition_with_mode needs options={'mode': a TorchDispatchMode}")
    nop = functools.partial(_boxed_nop_with_mode, mode=options["mode"])
    return _aot(gm, example_inputs, nop, **_inductor_decomp_partition_kwargs())


class GraphRaised(RuntimeError):
    """``eager_noexcept``: the compiled graph itself raised."""


@register_backend("eager_noexcept")
def eager_noexcept(gm, example_inputs):
    def run(*args):
        try:
            return gm(*args)
        except Exception as e:
            raise GraphRaised("Unexpected exception when running generated GraphModule") from e
    return run


@register_backend("eager_debug")
def eager_debug(gm, example_inputs):
    from torch._subclasses.schema_check_mode import SchemaCheckMode

    def run(*args):
        with SchemaCheckMode():
            return torch.fx.Interpreter(gm).run(*args)
    return run


@register_backend("pre_dispatch_eager")
def pre_dispatch_eager(gm, example_inputs):
    from torch.fx.experimental.proxy_tensor import make_fx

    def interpret(*args):
        return torch.fx.Interpreter(gm).run(*args)

    traced = make_fx(interpret, pre_dispatch=True)(*example_inputs)
    log.debug("pre_dispatch_eager graph:\n%s", traced.print_readable(print_output=False))
    return traced


@register_backend("ts")
def torchscript(gm, example_inputs):
    return torch.jit.script(gm)


@register_backend("aot_ts")
def aot_ts(gm, example_inputs):
    from functorch.compile import ts_compile
    return _aot(gm, example_inputs, ts_compile)


# --- the minifier's test backends (torch's *_TESTING_ONLY) ------------------

class ReluCompileError(Exception):
    pass


class TestingOnlyCompileError(Exception):
    pass


def _relus(gm):
    return [n for n in gm.graph.nodes if n.target is torch.relu]


@register_backend("relu_compile_error_TESTING_ONLY")
def relu_compile_error_testing_only(gm, example_inputs):
    if _relus(gm):
        raise ReluCompileError
    return gm


@register_backend("relu_runtime_error_TESTING_ONLY")
def relu_runtime_error_testing_only(gm, example_inputs):
    for node in _relus(gm):
        node.target = torch._assert
        node.args = (False, "ReluRuntimeError")
        node.kwargs = {}
    gm.recompile()
    return gm


@register_backend("relu_accuracy_error_TESTING_ONLY")
def relu_accuracy_error_testing_only(gm, example_inputs):
    for node in _relus(gm):
        node.target = torch.add
        node.args = (node.args[0], 1)
        node.kwargs = {}
    gm.recompile()
    return gm


@register_backend("non_leaf_compile_error_TESTING_ONLY")
def non_leaf_compile_error_testing_only(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function":
            break
    else:
        return gm
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and not t.is_leaf:
            raise TestingOnlyCompileError
    return gm
