"""Int attributes of nn.Modules (``self.num_heads``, ``self.n_layers``:
configuration; ``self.steps``: a counter) are static at first: a constant
of the graph, guarded by value.  By default
(``config.allow_unspec_int_on_nn_module``, torch's option of the same name,
which torch leaves off) one that changes between calls becomes a symbol,
as any other int (automatic dynamic): configuration stays a constant and a
step counter costs one recompile.  With the option off they stay static as
under torch.compile: a changed one recompiles with the new constant.
``config.dynamic_sources`` makes one a symbol from the start.

Each case runs the same calls eagerly, under armature and under
torch.compile (the oracle for graph counts, with the same option),
changing the module between calls where the case says so."""
import pytest
import torch
import torch._dynamo

import armature

from tests.helpers import CountingBackend

from .util import same


def _run(compile_fn, make, calls, check=True):
    """``calls``: (change, args) pairs; ``change(module)`` runs before the
    call (None: nothing).  Returns (graphs, the compiled module's graphs)."""
    model, eager = make(), make()
    counter = CountingBackend("eager")
    compiled = compile_fn(model, counter)
    for change, args in calls:
        if change is not None:
            change(model)
            change(eager)
        got = compiled(*args)
        if check:
            same(eager(*args), got)
    return counter


def check(make, calls, graphs, torch_config=None, **armature_config):
    armature.reset()
    with armature.config.patch(**armature_config):
        ours = _run(lambda m, b: armature.compile(m, backend=b), make, calls)
    torch._dynamo.reset()
    try:
        with torch._dynamo.config.patch(**(torch_config or {})):
            theirs = _run(lambda m, b: torch.compile(m, backend=b), make, calls, check=False)
    finally:
        torch._dynamo.reset()
    assert ours.frame_count == theirs.frame_count, \
        f"armature compiled {ours.frame_count} graphs, torch.compile {theirs.frame_count}"
    assert ours.frame_count == graphs
    return ours


def _set(name, value):
    return lambda m: setattr(m, name, value)


class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 4

    def forward(self, x):
        return x.view(self.n, -1) * self.n + self.n


X = torch.arange(16.0)


def test_int_attribute_is_a_constant_of_the_graph():
    counter = check(Heads, [(None, (X,)), (None, (X,))], graphs=1)
    gm = counter.graphs[0]
    assert [n.meta["example_value"].shape for n in gm.graph.nodes if n.op == "placeholder"] == [X.shape]
    assert "* 4" in gm.code and "+ 4" in gm.code


CHANGES = [(None, (X,)), (_set("n", 2), (X,)), (_set("n", 8), (X,)), (_set("n", 16), (X,)), (_set("n", 2), (X,))]

STATIC = {"allow_unspec_int_on_nn_module": False}


def _symbolic_inputs(gm) -> list:
    return [n for n in gm.graph.nodes if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.SymInt)]


def test_changed_int_attribute_becomes_a_symbol():
    # (4, then a symbol for 2 and 8; 16 gives a view of 16 rows of 1, and a size of 1 is specialised
    # as for any dynamic size: a third graph, as under torch.compile with the same option)
    counter = check(Heads, CHANGES, graphs=3, torch_config={"allow_unspec_int_on_nn_module": True})
    assert not _symbolic_inputs(counter.graphs[0]) and _symbolic_inputs(counter.graphs[1])


def test_static_mode_recompiles_with_the_new_constant():
    counter = check(Heads, CHANGES, graphs=4, **STATIC)
    assert all(len([n for n in gm.graph.nodes if n.op == "placeholder"]) == 1 for gm in counter.graphs)


def test_static_mode_under_dynamic_true():
    armature.reset()
    calls = [(None, (X,)), (_set("n", 2), (X,)), (_set("n", 8), (X,))]
    with armature.config.patch(**STATIC):
        ours = _run(lambda m, b: armature.compile(m, backend=b, dynamic=True), Heads, calls)
    torch._dynamo.reset()
    try:
        theirs = _run(lambda m, b: torch.compile(m, backend=b, dynamic=True), Heads, calls, check=False)
    finally:
        torch._dynamo.reset()
    assert ours.frame_count == theirs.frame_count == 3


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps


def test_step_counter_recompiles_once():
    check(Counter, [(None, (X,))] * 6, graphs=2, torch_config={"allow_unspec_int_on_nn_module": True})


def test_static_mode_step_counter_recompiles_per_value_as_torch_compile():
    check(Counter, [(None, (X,))] * 4, graphs=4, **STATIC)


def test_static_mode_recompile_reason_says_why(caplog):
    """The recompile reason names the cause and the way out."""
    import logging
    armature.reset()
    with armature.config.patch(**STATIC), caplog.at_level(logging.DEBUG, logger="armature.recompiles"):
        compiled = armature.compile(Counter(), backend="eager")
        for _ in range(3):
            compiled(X)
    reasons = [r.getMessage() for r in caplog.records if "guard failed" in r.getMessage()]
    assert len(reasons) == 2, reasons
    assert all("self.steps ==" in r and "an int attribute of a module: static" in r for r in reasons), reasons
    assert "allow_unspec_int_on_nn_module = True" in reasons[0]


def test_whitelisted_int_attribute_is_a_symbol():
    armature.reset()
    with armature.config.patch(dynamic_sources="self.n"):
        counter = _run(lambda m, b: armature.compile(m, backend=b), Heads,
                       [(None, (X,)), (_set("n", 2), (X,)), (_set("n", 8), (X,))])
    assert counter.frame_count == 1
    assert any(isinstance(n.meta["example_value"], torch.SymInt)
               for n in counter.graphs[0].graph.nodes if n.op == "placeholder"), counter.graphs[0].code


def test_allow_unspec_int_on_nn_module_makes_it_automatic_dynamic():
    calls = [(None, (X,)), (_set("n", 2), (X,)), (_set("n", 8), (X,)), (_set("n", 4), (X,))]
    check(Heads, calls, graphs=2, torch_config={"allow_unspec_int_on_nn_module": True},
          allow_unspec_int_on_nn_module=True)


class Outer(torch.nn.Module):
    """An int attribute of a submodule, read through the parent, and one
    read through ``__dict__``."""

    def __init__(self):
        super().__init__()
        self.inner = Heads()

    def forward(self, x):
        return self.inner(x) + self.inner.n * 2 + self.inner.__dict__["n"]


def test_int_attribute_of_a_submodule():
    check(Outer, [(None, (X,)), (lambda m: setattr(m.inner, "n", 2), (X,)), (None, (X,))], graphs=2)


class ShapeMessage(torch.nn.Module):
    """A HuggingFace-style shape check whose error message formats a shape
    tuple with an int attribute in it: the check passes, nothing breaks."""

    def __init__(self):
        super().__init__()
        self.num_heads = 2

    def forward(self, x):
        bsz, tgt_len, _ = x.size()
        w = x.view(bsz * self.num_heads, tgt_len, -1)
        if w.size() != (bsz * self.num_heads, tgt_len, x.shape[-1] // self.num_heads):
            raise ValueError(f"Attention weights should be of size {(bsz * self.num_heads, tgt_len)}, "
                             f"but is {w.size()}")
        return w * 2, f"{self.num_heads} heads, shape {w.shape}"


def test_shape_message_with_int_attribute():
    calls = [(None, (torch.randn(2, 5, 8),)), (None, (torch.randn(2, 7, 8),)), (None, (torch.randn(3, 9, 8),))]
    check(ShapeMessage, calls, graphs=3)   # (static, then x's dims dynamic: twice, as torch.compile)


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 0.5

    def forward(self, x):
        return x * self.scale


def test_float_attribute_still_a_graph_input():
    # floats keep their lazily guarded model: a 0-d graph input, no recompile
    # (torch.compile: static first, a graph input after the change)
    armature.reset()
    calls = [(None, (X,)), (_set("scale", 1.5), (X,)), (_set("scale", 2.5), (X,))]
    ours = _run(lambda m, b: armature.compile(m, backend=b), Scale, calls)
    assert ours.frame_count == 1


@pytest.mark.parametrize("dynamic", [None, False])
def test_int_attribute_in_float_arithmetic_is_not_a_graph_input(dynamic):
    # (it used to enter the graph as a 0-d int64 tensor, even with dynamic=False)
    armature.reset()
    ours = _run(lambda m, b: armature.compile(m, backend=b, dynamic=dynamic), Heads, [(None, (X,))])
    assert len([n for n in ours.graphs[0].graph.nodes if n.op == "placeholder"]) == 1
