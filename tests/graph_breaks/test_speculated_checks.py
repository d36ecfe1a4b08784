"""Speculated checks (trace/speculation.py): a data-dependent branch whose
other side only raises is assumed not to raise, checked right after the
graph, and a call where it does raise reruns as Python.

Each case compares compiled with eager on calls that pass and calls that
raise (same exception type and message), counts graphs against
torch.compile, and checks that nothing the frame does before the check
(appends, global writes, a graph break's native code) happens twice on a
rerun.  Where rerunning would not be faithful (the graph mutates an input,
draws random numbers), the branch stays a graph break.
"""
from __future__ import annotations

import pytest
import torch

from helpers import USING_TORCH, armature_only, compile_fn, reset

import armature
from python_semantics.identity_support import CountingBackend

from .speculated_cases import (LOG, STATE, asserts_on_tensor, break_then_check, caught_by_the_frame,
                               categorical_log_prob, effects_before_check, normal_log_prob, raises_on_nan)


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:   # noqa: BLE001  (compared with eager's)
        return type(e).__name__, str(e)


def _same(a, b):
    assert a[0] == b[0], f"eager {a}, compiled {b}"
    if a[0] != "ok":
        assert a[1] == b[1]
        return
    ea, ca = a[1], b[1]
    ea = ea if isinstance(ea, tuple) else (ea,)
    ca = ca if isinstance(ca, tuple) else (ca,)
    assert len(ea) == len(ca)
    for x, y in zip(ea, ca):
        if isinstance(x, torch.Tensor):
            torch.testing.assert_close(y, x, rtol=0, atol=0)
        else:
            assert x == y


@pytest.fixture(autouse=True)
def _distributions_validate_arguments():
    """The raising calls need torch.distributions' argument validation, the
    default, which torch.compile's first use turns off for the whole
    process (torch/_dynamo/eval_frame.py): another test that ran the oracle
    earlier in this process must not change what these calls do."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


MU, SIGMA, X, Y = torch.zeros(4), torch.ones(4), torch.randn(3, 4), torch.randn(3, 4)
CASES = [
    (normal_log_prob, [(MU, SIGMA, X), (MU, -SIGMA, X), (MU + 1, SIGMA * 2, X)]),
    (asserts_on_tensor, [(X, Y), (X - 1000, Y), (X, Y)]),
    (raises_on_nan, [(X, Y), (X * float("nan"), Y), (X, Y + 1)]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_against_eager_passing_and_raising(fn, calls):
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter)
    for args in calls:
        _same(_outcome(fn, *args), _outcome(compiled, *args))
    if not USING_TORCH:
        assert counter.frame_count == 1   # one graph; the raising call reran as Python
    reset()


@armature_only
@pytest.mark.parametrize("fn,calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_fullgraph_one_entry(fn, calls):
    compiled = armature.compile(fn, backend="eager", fullgraph=True)
    for args in calls:
        _same(_outcome(fn, *args), _outcome(compiled, *args))
    (entry,) = armature.cache_entries(compiled)
    assert entry.graph_break is None and entry.fallback_reason is None and entry.assumptions
    reset()


def test_categorical_against_eager():
    # (its lazy properties are a graph break of their own; the validation and
    # the gather after it, which fails on the index the check rejects, are not)
    compiled = compile_fn(categorical_log_prob, backend="eager")
    logits = torch.randn(2, 5)
    for idx in (torch.tensor([1, 3]), torch.tensor([1, 7]), torch.tensor([0, 4])):
        _same(_outcome(categorical_log_prob, logits, idx), _outcome(compiled, logits, idx))
    reset()


@armature_only
def test_graph_count_matches_torch_compile_for_distributions():
    import torch._dynamo.testing
    cnt = torch._dynamo.testing.CompileCounter()
    torch._dynamo.reset()
    try:
        torch.compile(normal_log_prob, backend=cnt)(MU, SIGMA, X)
    finally:
        torch._dynamo.reset()
    counter = CountingBackend("eager")
    compile_fn(normal_log_prob, backend=counter)(MU, SIGMA, X)
    assert counter.frame_count == cnt.frame_count == 1
    reset()


@armature_only
def test_explain_lists_the_assumption():
    out = armature.explain(asserts_on_tensor)(X, Y)
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert any("assert (z > -100).all()" in a for a in out.assumptions)
    assert "Assumed branches" in str(out)


@pytest.mark.parametrize("fn,calls", [
    (effects_before_check, [(torch.zeros(3),), (torch.full((3,), 1.5),), (torch.zeros(3),)]),
    (break_then_check, [(torch.zeros(3),), (torch.full((3,), 20.0),), (torch.ones(3),)]),
    (caught_by_the_frame, [(torch.ones(3),), (-torch.ones(3),), (torch.ones(3),)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_effects_before_a_missed_check_happen_once(fn, calls):
    runs = []
    for f in (fn, compile_fn(fn, backend="eager")):
        LOG.clear()
        STATE["n"] = 0
        outs = [_outcome(f, *args) for args in calls]
        runs.append((outs, list(LOG), dict(STATE)))
    for e, c in zip(runs[0][0], runs[1][0]):
        _same(e, c)
    assert runs[0][1:] == runs[1][1:]
    reset()


def mutates_input_then_checks(x):
    x.add_(1)
    if (x > 100).any():
        raise ValueError("too big")
    return x * 2


def draws_then_checks(x):
    noise = torch.rand(3)
    if (x + noise > 5).any():
        raise ValueError("too big")
    return x + noise, torch.rand(1)


def draws_from_own_generator(x):
    g = torch.Generator().manual_seed(0)
    noise = torch.rand(3, generator=g)
    if (noise > 2).any():
        raise ValueError("impossible")
    return x + noise


def test_random_draws_rewound_for_the_rerun():
    # a missed check reruns as Python from the generator state eager started from
    compiled = compile_fn(draws_then_checks, backend="eager")
    for seed, x in enumerate((torch.zeros(3), torch.full((3,), 4.5), torch.zeros(3))):
        torch.manual_seed(seed)
        expected = _outcome(draws_then_checks, x)
        after_eager = torch.rand(2)
        torch.manual_seed(seed)
        got = _outcome(compiled, x)
        after_compiled = torch.rand(2)
        _same(expected, got)
        torch.testing.assert_close(after_compiled, after_eager, rtol=0, atol=0)
    if not USING_TORCH:
        (entry,) = armature.cache_entries(compiled)
        assert entry.assumptions and entry.graph_break is None
    reset()


@armature_only
@pytest.mark.parametrize("fn", [mutates_input_then_checks, draws_from_own_generator], ids=lambda f: f.__name__)
def test_unfaithful_rerun_keeps_the_break(fn):
    # a rerun would add 1 twice / draw other numbers: no assumption, a graph break
    compiled = armature.compile(fn, backend="eager")
    for seed in range(2):
        a, b = torch.zeros(3), torch.zeros(3)
        torch.manual_seed(seed)
        expected = fn(a)
        torch.manual_seed(seed)
        got = compiled(b)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(b, a, rtol=0, atol=0)
    entries = armature.cache_entries(compiled)
    assert entries[0].graph_break is not None and not entries[0].assumptions
    reset()


@armature_only
def test_fullgraph_error_says_why_no_branch_was_assumed():
    # under fullgraph the data-dependent branch is an error; when the trace
    # could have assumed it but the rerun would not be faithful, the error
    # says which (not only "depends on its data")
    compiled = armature.compile(mutates_input_then_checks, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match=r"not assumed here: the graph mutates an input in place"):
        compiled(torch.zeros(3))
    reset()


def neither_side_raises(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


@armature_only
def test_ordinary_data_dependent_branch_still_breaks():
    compiled = armature.compile(neither_side_raises, backend="eager")
    for x in (torch.ones(3), -torch.ones(3)):
        torch.testing.assert_close(compiled(x), neither_side_raises(x))
    assert armature.cache_entries(compiled)[0].graph_break is not None
    reset()


# --- bool() of a tensor, deferred until a jump decides it --------------------------------------

def _all_positive(x):
    return bool((x > 0).all())   # (torch 2.15's distributions validate through such a helper)


def helper_then_raise(x):
    if not _all_positive(x):
        raise ValueError("not positive")
    return x.log()


def bool_printed(x):
    f = bool(x.sum() > 0)
    print(end="")
    return x + f


def bool_returned(x):
    return bool(x.sum() > 0), not bool(x.sum() > 0)


def bool_compared(x):
    return x if bool(x[0] > 0) == True else -x   # noqa: E712  (a comparison decides it at once)


def bool_in_arithmetic(x):
    return x * sum([bool(x[0] > 0), bool(x[1] > 0)]), x * (bool(x[0] > 0) + 1)


def bool_and(x):
    return x * (bool(x[0] > 0) and bool(x[1] > 0))


def bool_branch_neither_raises(x):
    flag = bool(x.sum() > 0)
    if flag:
        return x + 1
    return x - 1


@pytest.mark.parametrize("fn", [helper_then_raise, bool_printed, bool_returned, bool_compared, bool_in_arithmetic,
                                bool_and, bool_branch_neither_raises], ids=lambda f: f.__name__)
def test_deferred_bool_against_eager(fn):
    compiled = compile_fn(fn, backend="eager")
    for x in (torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 2.0]), torch.tensor([3.0, 4.0])):
        _same(_outcome(fn, x), _outcome(compiled, x))
    reset()


@armature_only
def test_helper_returning_bool_is_assumed():
    compiled = armature.compile(helper_then_raise, backend="eager", fullgraph=True)
    for x in (torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 2.0])):
        _same(_outcome(helper_then_raise, x), _outcome(compiled, x))
    (entry,) = armature.cache_entries(compiled)
    assert entry.assumptions and entry.graph_break is None
    reset()


class _Normed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        y = self.bn(x)   # updates the running statistics: a rerun would update them twice
        if (y.abs() > 1e6).any():
            raise ValueError("exploded")
        return y


@armature_only
def test_buffer_update_keeps_the_break():
    eager, model = _Normed(), _Normed()
    compiled = armature.compile(model, backend="eager")
    for x in (torch.randn(4, 3), torch.randn(4, 3)):
        torch.testing.assert_close(compiled(x), eager(x))
    torch.testing.assert_close(model.bn.running_mean, eager.bn.running_mean)
    assert model.bn.num_batches_tracked.item() == eager.bn.num_batches_tracked.item() == 2
    entries = armature.cache_entries(compiled)
    assert entries and entries[0].graph_break is not None and not any(e.assumptions for e in entries)
    reset()
