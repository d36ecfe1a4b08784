"""torch's named debugging backends that run on CPU are accepted by
``backend=`` under the same names (backends/debugging.py): each compiles a
small program whose forward and backward match eager."""
from __future__ import annotations

import pytest
import torch

import armature
from helpers import USING_TORCH, assert_equal, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="armature's backend registry")

CPU_DEBUG_BACKENDS = ["aot_eager_default_partitioner", "aot_eager_decomp_partition",
                      "aot_eager_decomp_partition_crossref", "eager_noexcept", "eager_debug",
                      "pre_dispatch_eager", "ts", "aot_ts"]


def program(x, w):
    y = torch.relu(x @ w) + x.sin()
    return y.softmax(-1).sum(0), y.mean()


def test_torch_cpu_backend_names_are_registered():
    from armature.backends import list_backends
    names = set(list_backends())
    torch_names = set(torch._dynamo.list_backends(None))
    missing = torch_names - names - {"cudagraphs", "tvm", "openxla", "openxla_eval", "invoke_subgraph",
                                     "dynamo_minifier_backend", "dynamo_accuracy_minifier_backend",
                                     "aot_eager_decomp_partition_with_mode", "onnxrt", "tensorrt", "torch_tensorrt"}
    assert not missing, f"torch.compile accepts these CPU backends, armature does not: {sorted(missing)}"


@pytest.mark.parametrize("name", CPU_DEBUG_BACKENDS)
def test_debug_backend_forward_and_backward(name):
    x, w = t(3, 4), t(4, 4, requires_grad=True)
    w2 = w.detach().clone().requires_grad_(True)
    expected = program(x, w)
    got = armature.compile(program, backend=name, fullgraph=True)(x, w2)
    assert_equal(expected, got, rtol=1e-5, atol=1e-5)
    if name in ("ts", "pre_dispatch_eager"):
        return   # (inference-style graphs)
    expected[1].backward()
    got[1].backward()
    assert_equal(w.grad, w2.grad, rtol=1e-5, atol=1e-5)


def test_with_mode_runs_under_the_dispatch_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = t(3, 4)
    f = armature.compile(lambda x: x.sin() * 2, backend="aot_eager_decomp_partition_with_mode",
                         options={"mode": Record()})
    assert_equal(x.sin() * 2, f(x))
    assert any("sin" in s for s in seen)


def test_testing_only_backends():
    from armature.backends.debugging import ReluCompileError
    x = t(3, 4)

    def f(x):
        return torch.relu(x) * 2

    with pytest.raises(Exception) as e:
        armature.compile(f, backend="relu_compile_error_TESTING_ONLY", fullgraph=True)(x)
    assert isinstance(e.value, ReluCompileError) or isinstance(e.value.__cause__, ReluCompileError)
    armature.reset()
    got = armature.compile(f, backend="relu_accuracy_error_TESTING_ONLY")(x)
    assert_equal((x + 1) * 2, got)
    armature.reset()
    with pytest.raises(Exception, match="ReluRuntimeError"):
        armature.compile(f, backend="relu_runtime_error_TESTING_ONLY")(x)
