"""The CUDA-graph boundary without a GPU (backends/cudagraphs.py,
backends/cudagraph_step.py): the trees' generation advances once per top-level
call, static-input metadata reaches the backend and AOTAutograd, and
``armature.reset()`` resets the trees.  What needs a GPU (replays, no
weight copies) is in tests/test_gpu.py."""
from __future__ import annotations

import logging

import pytest
import torch

import armature
from armature.backends.cudagraphs import annotate_static_inputs, install_step
from armature.backends import cudagraph_step as runtime_cg

from helpers import USING_TORCH

pytestmark = pytest.mark.skipif(USING_TORCH, reason="armature's CUDA-graph boundary")


def generation() -> int:
    from torch._dynamo.mutation_guard import GenerationTracker
    return GenerationTracker.generation


class StepInstalling:
    """A backend that says it compiled a CUDA-graph graph (as inductor does
    under mode="reduce-overhead") and records its graphs."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        install_step()
        return gm.forward


def test_no_step_without_a_cudagraph_graph():
    f = armature.compile(lambda x: x + 1, backend="eager")
    f(torch.ones(2))
    g0 = generation()
    for _ in range(3):
        f(torch.ones(2))
    assert runtime_cg.step is None
    assert generation() == g0


def test_generation_advances_once_per_top_level_call():
    be = StepInstalling()

    @armature.compile(backend=be)
    def f(x):
        return x.sin().cos()

    f(torch.ones(3))
    g0 = generation()
    for _ in range(4):
        f(torch.ones(3))
    assert generation() - g0 == 4
    assert len(be.graphs) == 1


def test_generation_advances_once_per_call_with_graph_breaks():
    """Three graphs and two resume functions per call: still one step."""
    be = StepInstalling()

    def helper(x):
        armature.graph_break()
        return x * 2

    @armature.compile(backend=be)
    def f(x):
        y = x + 1
        armature.graph_break()
        y = helper(y) - 1
        armature.graph_break()
        return y.exp()

    x = torch.ones(3)
    expected = ((x + 1) * 2 - 1).exp()
    torch.testing.assert_close(f(x), expected)
    assert len(be.graphs) >= 3
    g0 = generation()
    for _ in range(5):
        torch.testing.assert_close(f(x), expected)
    assert generation() - g0 == 5


def test_module_call_advances_once():
    be = StepInstalling()
    m = armature.compile(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), backend=be)
    x = torch.randn(2, 3)
    m(x)
    g0 = generation()
    m(x)
    m(x)
    assert generation() - g0 == 2


def test_reset_drops_the_step_and_resets_trees(monkeypatch):
    be = StepInstalling()
    f = armature.compile(lambda x: x * 3, backend=be)
    f(torch.ones(2))
    assert runtime_cg.step is not None
    import torch._inductor.cudagraph_trees as trees
    calls = []
    monkeypatch.setattr(trees, "reset_cudagraph_trees", lambda: calls.append(1))
    armature.reset()
    assert calls == [1]
    assert runtime_cg.step is None
    f = armature.compile(lambda x: x * 3, backend="eager")
    g0 = generation()
    f(torch.ones(2))
    f(torch.ones(2))
    assert generation() == g0


def test_mark_step_begin_is_torchs():
    import torch._inductor.cudagraph_trees as trees
    before = trees.MarkStepBox.mark_step_counter
    armature.cudagraph_mark_step_begin()
    assert trees.MarkStepBox.mark_step_counter == before - 1
    armature.reset()   # (reset_cudagraph_trees clears it only where trees exist)
    trees.MarkStepBox.mark_step_counter = 0


class Recording:
    """A backend that asserts what it receives: the static placeholders."""

    def __init__(self):
        self.static = []
        self.placeholders = []

    def __call__(self, gm, example_inputs):
        self.static.append(tuple(gm.meta["armature_static_inputs"]))
        self.placeholders.append([n.name for n in gm.graph.nodes if n.op == "placeholder"])
        return gm.forward


def test_static_inputs_reach_the_backend():
    be = Recording()
    kv = torch.zeros(2, 4)
    armature.mark_static_address(kv)
    plain = torch.ones(2, 4)
    lin = torch.nn.Linear(4, 4)
    f = armature.compile(lambda x, kv, plain: lin(x) + kv + plain, backend=be)
    x = torch.randn(2, 4)
    torch.testing.assert_close(f(x, kv, plain), lin(x) + kv + plain)
    (static,), (names,) = be.static, be.placeholders
    assert [names[i] for i in static] == [n for n in names if "kv" in n]
    assert not any("plain" in names[i] or names[i].startswith("x") for i in static)


def test_torch_mark_static_address_is_honoured():
    be = Recording()
    kv = torch.zeros(3)
    torch._dynamo.mark_static_address(kv)
    f = armature.compile(lambda x, kv: x + kv, backend=be)
    f(torch.ones(3), kv)
    (static,), (names,) = be.static, be.placeholders
    assert [names[i] for i in static] == [n for n in names if "kv" in n]


def test_parameters_passed_as_inputs_are_static():
    be = Recording()
    w = torch.nn.Parameter(torch.randn(3))
    f = armature.compile(lambda x, w: x * w, backend=be)
    f(torch.ones(3), w)
    (static,), (names,) = be.static, be.placeholders
    assert [names[i] for i in static] == [n for n in names if "w" in n] and static


def test_aot_autograd_sees_the_static_inputs():
    """annotate_static_inputs speaks torch's frontend metadata: AOTAutograd's
    fw_metadata.static_input_indices (what inductor hands to the CUDA-graph
    trees) lists the lifted parameters/buffers and the marked tensor, not
    the plain input."""
    from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func
    seen = {}

    def backend(gm, example_inputs):
        annotate_static_inputs(gm)
        seen["attrs"] = len(list(gm.named_parameters(remove_duplicate=False))) + \
            len(list(gm.named_buffers(remove_duplicate=False)))

        def fw(g, inputs):
            seen["static"] = list(torch._guards.TracingContext.get().fw_metadata.static_input_indices)
            seen["n"] = len(inputs)
            return make_boxed_func(g.forward)
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw)

    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).eval()
    kv = torch.zeros(3, 4)
    armature.mark_static_address(kv)
    f = armature.compile(lambda x, kv: m(x) + kv, backend=backend)
    x = torch.randn(3, 4)
    torch.testing.assert_close(f(x, kv), m(x) + kv)
    n_attrs = seen["attrs"]   # the graph's parameters and buffers, lifted ahead of the inputs
    assert n_attrs >= 4
    assert seen["n"] == n_attrs + 2
    assert seen["static"] == list(range(n_attrs)) + [n_attrs + 1]


def test_skip_reasons_reach_the_perf_log(caplog):
    """inductor's "skipping cudagraphs due to ..." is forwarded to ARMATURE_LOGS=perf."""
    from torch._inductor import cudagraph_utils
    install_step()
    perf = logging.getLogger("armature.perf")
    old = perf.level
    perf.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="armature.perf"):
            cudagraph_utils.cudagraphs_log.warning("skipping cudagraphs due to testing")
    finally:
        perf.setLevel(old)
    assert any("CUDA graphs not used: skipping cudagraphs due to testing" in r.getMessage()
               for r in caplog.records if r.name == "armature.perf")


def test_metadata_refused_compiles_without_it(monkeypatch):
    """A torch that reads the metadata differently: the graph still compiles
    (without static inputs), and the perf log says why."""
    from armature.backends import cudagraphs as cg
    calls = []

    def compile_fn(gm):
        calls.append(getattr(gm, "_param_name_to_source", None) is not None)
        if len(calls) == 1:
            raise AssertionError("source must not be None")
        return gm.forward

    lin = torch.nn.Linear(2, 2)
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return cg.compile_with_static_inputs(gm, compile_fn)

    f = armature.compile(lambda x: lin(x), backend=backend)
    x = torch.randn(1, 2)
    torch.testing.assert_close(f(x), lin(x))
    assert calls == [True, False]
    gm = seen[0]
    assert "dynamo_compile_id" not in gm.meta
    assert not any(hasattr(n, "_dynamo_source") for n in gm.graph.nodes)


@pytest.mark.inductor
def test_cpu_graph_under_reduce_overhead_is_logged_and_installs_no_step():
    perf = logging.getLogger("armature.perf")
    cap = []

    class H(logging.Handler):
        def emit(self, record):
            cap.append(record.getMessage())
    h = H()
    old = perf.level
    perf.setLevel(logging.DEBUG)
    perf.addHandler(h)
    try:
        f = armature.compile(lambda x: x.sin() * 2, mode="reduce-overhead")
        x = torch.randn(4)
        for _ in range(2):
            torch.testing.assert_close(f(x), x.sin() * 2)
    finally:
        perf.removeHandler(h)
        perf.setLevel(old)
    assert runtime_cg.step is None
    assert any("CUDA graphs not used" in m and "no CUDA tensors" in m for m in cap), cap
