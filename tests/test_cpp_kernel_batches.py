"""Inductor's C++ kernels built a few to a compiler run (backends/cpp_kernel_batches.py).

Each compile here is a real inductor compile of a small function with
several distinct kernels; a spy on ``CppPythonBindingsCodeCache.load_async``
(the build every kernel goes through) records which sources were built as
shared units, and the results are compared with eager's.
"""
from __future__ import annotations

import logging

import pytest
import torch

import armature
from armature.backends import cpp_kernel_batches as batches


def _several_kernels(x, y):
    # (matrix products between pointwise ops: each product is a library call, so the
    # pointwise work around it cannot fuse into one C++ kernel)
    a = (x.sin() + y).relu()
    b = (a @ y.t()).exp() - 1
    c = ((b @ x) * y.cos()).tanh()
    return (c @ a.t()).sigmoid(), c.sum(dim=0)


@pytest.fixture
def builds(monkeypatch):
    """The sources of the C++ builds asked for, as ("unit", kernels) or ("own", 1)."""
    from torch._inductor.codecache import CppPythonBindingsCodeCache

    seen: list[tuple[str, int]] = []
    load_async = CppPythonBindingsCodeCache.load_async.__func__

    def spy(cls, main_code, *args, **kwargs):
        if cls is CppPythonBindingsCodeCache:
            units = main_code.count("armature_batched_init_") // 2   # (declared, then called)
            seen.append(("unit", units) if units else ("own", 1))
        return load_async(cls, main_code, *args, **kwargs)

    monkeypatch.setattr(CppPythonBindingsCodeCache, "load_async", classmethod(spy))
    monkeypatch.setattr(batches, "_built", {})   # (no kernel reused from an earlier test)
    return seen


def _inputs(requires_grad=False):
    torch.manual_seed(0)
    return (torch.randn(8, 16, requires_grad=requires_grad), torch.randn(8, 16, requires_grad=requires_grad))


def test_kernels_of_one_graph_share_units_and_results_equal_eager(builds):
    x, y = _inputs()
    compiled = armature.compile(_several_kernels, backend="inductor")
    out = compiled(x, y)
    ref = _several_kernels(x, y)
    for o, r in zip(out, ref):
        torch.testing.assert_close(o, r)
    units = [n for kind, n in builds if kind == "unit"]
    assert units and sum(units) >= 2, builds
    assert not [b for b in builds if b[0] == "own"], builds   # (every kernel went into a unit)
    x2, y2 = _inputs()
    torch.testing.assert_close(compiled(x2 * 2, y2)[0], _several_kernels(x2 * 2, y2)[0])


def test_backward_compiled_later_is_batched_too(builds):
    x, y = _inputs(requires_grad=True)
    compiled = armature.compile(lambda x, y: _several_kernels(x, y)[0].sum(), backend="inductor")
    compiled(x, y).backward()
    grads = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    _several_kernels(x, y)[0].sum().backward()
    torch.testing.assert_close(grads[0], x.grad)
    torch.testing.assert_close(grads[1], y.grad)
    assert len([b for b in builds if b[0] == "unit"]) >= 2, builds   # (forward's units, then backward's)


def test_one_thread_builds_one_unit(builds):
    x, y = _inputs()
    compiled = armature.compile(_several_kernels, backend="inductor", options={"compile_threads": 1})
    torch.testing.assert_close(compiled(x, y)[0], _several_kernels(x, y)[0])
    assert [kind for kind, _ in builds] == ["unit"], builds


def test_a_unit_that_fails_to_build_falls_back_to_one_build_per_kernel(builds, monkeypatch, caplog):
    real = batches.unit_source
    monkeypatch.setattr(batches, "unit_source", lambda codes: real(codes) + "\nthis is not C++;\n")
    monkeypatch.setattr(batches, "_broken", None)   # (restored after the test: batching on again)
    x, y = _inputs()
    with caplog.at_level(logging.WARNING, logger="armature.perf"):
        compiled = armature.compile(_several_kernels, backend="inductor")
        out = compiled(x, y)
    torch.testing.assert_close(out[0], _several_kernels(x, y)[0])
    units = sum(1 for kind, _ in builds if kind == "unit")
    own = sum(1 for kind, _ in builds if kind == "own")
    assert units >= 1 and own >= 2, builds
    assert "one per compiler run for the rest of this process" in caplog.text
    # (the unit was at fault: a later graph in this process is built as inductor builds it)
    builds.clear()
    torch.testing.assert_close(armature.compile(lambda x, y: _several_kernels(x * 3, y), backend="inductor")(x, y)[0],
                               _several_kernels(x * 3, y)[0])
    assert builds and all(kind == "own" for kind, _ in builds), builds


def test_a_kernel_built_earlier_in_the_process_is_reused(builds):
    x, y = _inputs()
    torch.testing.assert_close(armature.compile(_several_kernels, backend="inductor")(x, y)[0],
                               _several_kernels(x, y)[0])
    assert builds
    builds.clear()
    again = armature.compile(lambda x, y: _several_kernels(x, y), backend="inductor")   # (a new frame, same graph)
    torch.testing.assert_close(again(x, y)[0], _several_kernels(x, y)[0])
    assert builds == [], builds


def test_torch_compile_in_the_same_process_is_left_alone(builds):
    x, y = _inputs()
    batches._install()
    compiled = torch.compile(_several_kernels, backend="inductor")
    torch.testing.assert_close(compiled(x, y)[0], _several_kernels(x, y)[0])
    assert builds and all(kind == "own" for kind, _ in builds), builds


def test_config_switch_turns_batching_off(builds):
    x, y = _inputs()
    with armature.config.patch(cpp_kernel_batches=False):
        compiled = armature.compile(_several_kernels, backend="inductor")
        torch.testing.assert_close(compiled(x, y)[0], _several_kernels(x, y)[0])
    assert builds and all(kind == "own" for kind, _ in builds), builds


def test_plan_units_balances_and_is_deterministic():
    sizes = [900, 100, 500, 500, 300, 700]
    units = batches.plan_units(sizes, 2)
    assert sorted(i for u in units for i in u) == list(range(6))
    totals = [sum(sizes[i] for i in u) for u in units]
    assert max(totals) - min(totals) <= 100
    assert units == batches.plan_units(sizes, 2)
    assert sorted(batches.plan_units(sizes, 16)) == [[i] for i in range(6)]   # (never more units than kernels)
    assert batches.plan_units([10, 20], 1) == [[0, 1]]


def test_unit_source_hoists_includes_and_renames_entry_points():
    code = ('#include <a.h>\nextern "C" void kernel(float* p) { p[0] = 1; }\n'
            "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
            "PyMODINIT_FUNC PyInit_kernel(void) { return nullptr; }\n")
    unit = batches.unit_source([code, code])
    head = unit.split("#define kernel")[0]
    assert head.index("#define PY_SSIZE_T_CLEAN") < head.index("#include <Python.h>")
    assert head.count("#include <a.h>") == 1 and unit.count("#include") == 2
    assert "namespace armature_batch_0 {" in unit and "namespace armature_batch_1 {" in unit
    assert 'armature_adopt(unit, "kernel_1", armature_batch_1::armature_batched_init_1())' in unit


@pytest.mark.parametrize("code, ok", [
    ('#include <x.h>\nextern "C" void kernel(float* p) {}\nPyMODINIT_FUNC PyInit_kernel(void) {}', True),
    ('#ifdef X\n#include <x.h>\n#endif\nextern "C" void kernel(float* p) {}\nPyInit_kernel', False),
    ('#define N 4\n#include <x.h>\nextern "C" void kernel(float* p) {}\nPyInit_kernel', False),
    ('#define PY_SSIZE_T_CLEAN\n#include <Python.h>\nextern "C" void kernel(float* p) {}\nPyInit_kernel', True),
    ('extern "C" void kernel(float* p) {}\nextern "C" void helper() {}\nPyInit_kernel', False),
    ('#define kernel other\nextern "C" void kernel(float* p) {}\nPyInit_kernel', False),
    ('extern "C" void run(float* p) {}\nPyInit_kernel', False),
])
def test_only_sources_of_the_expected_shape_share_a_unit(code, ok):
    assert batches._shareable(code) is ok


def test_kernels_resolved_before_the_module_waits_are_swapped_in_by_the_wait():
    from torch._inductor import config
    from torch._inductor.async_compile import AsyncCompile

    source = ('#include <torch/csrc/inductor/cpp_prefix.h>\n'
              'extern "C" void kernel(float* out_ptr0) {{ out_ptr0[0] = {value}; }}\n')
    with config.patch(compile_threads=1), batches.batched():
        ac = AsyncCompile()
        scope = {f"k{i}": ac.cpp_pybinding(["float*"], source.format(value=i + 1)) for i in range(2)}
        scope["k0"].result()   # (builds the batch before the module's wait)
        ac.wait(scope)
    assert not any(isinstance(k, batches._HeldKernel) for k in scope.values())
    out = torch.zeros(2)
    scope["k0"](out[0:])
    scope["k1"](out[1:])
    assert out.tolist() == [1.0, 2.0]


def test_deferred_waits_build_every_module_of_the_block_together_at_its_end(builds):
    """Inside ``deferred_waits`` (the compile that read the ISA ahead of its
    probe) the forward's and the backward's modules build nothing at their
    wait: all their kernels are built at the end of the block as one plan of
    at most ``compile_threads`` units, and swapped in; results and gradients
    are eager's."""
    from torch._functorch import config as functorch_config
    from torch._inductor.async_compile import get_compile_threads
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def f(x, y):
        return _several_kernels(x, y)[0].sum()

    x, y = _inputs(requires_grad=True)
    gm = torch.fx.symbolic_trace(f)
    with batches.batched(), functorch_config.patch(force_non_lazy_backward_lowering=True):
        with batches.deferred_waits():
            compiled = compile_fx(gm, [x, y], inner_compile=batches.in_batches(compile_fx_inner))
            built_inside = list(builds)
    assert built_inside == [], built_inside
    assert builds and len(builds) <= max(1, get_compile_threads()), builds
    assert sum(n for _, n in builds) >= 4, builds   # (the forward's kernels and the backward's)
    out = compiled(x, y)
    out.backward()
    grads = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    ref = f(x, y)
    ref.backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(grads, (x.grad, y.grad))


def test_deferred_waits_build_nothing_when_the_block_raises(builds):
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    x, y = _inputs()
    gm = torch.fx.symbolic_trace(_several_kernels)
    with pytest.raises(RuntimeError, match="after the compile"):
        with batches.batched(), batches.deferred_waits():
            compile_fx(gm, [x, y], inner_compile=batches.in_batches(compile_fx_inner))
            raise RuntimeError("after the compile")
    assert builds == [], builds
