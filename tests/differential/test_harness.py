"""Self-tests of tests/helpers.py: the harness must catch wrong compiled
behaviour.  Deliberately broken backends are plugged in and assert_same has
to fail.  (Runs under both ARMATURE_TEST_IMPL settings.)"""

import collections

import pytest
import torch

from helpers import (
    CountingBackend,
    _alias_signature,
    assert_equal,
    assert_raises_same,
    assert_same,
    compiled_with_oracle,
    deep_copy,
    t,
)

Pair = collections.namedtuple("Pair", "a b")


def _wrap(transform):
    """Backend running the graph, then transforming its outputs."""

    def backend(gm, example_inputs):
        fwd = gm.forward

        def run(*args):
            return transform(fwd(*args))

        return run

    return backend


def off_by_one(outs):
    return type(outs)(o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in outs)


def clone_inputs_backend(gm, example_inputs):
    fwd = gm.forward

    def run(*args):
        return fwd(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    return run


def no_grad_backend(gm, example_inputs):
    fwd = gm.forward

    def run(*args):
        with torch.no_grad():
            return fwd(*args)

    return run


def sin(x):
    return x.sin()


def add_inplace(x):
    x.add_(1)
    return x * 2


def fails(x):
    return x.view(7)


def test_detects_wrong_values():
    with pytest.raises(AssertionError):
        assert_same(sin, t(3), backend=_wrap(off_by_one))


def test_detects_lost_input_mutation():
    with pytest.raises(AssertionError):
        assert_same(add_inplace, t(3), backend=clone_inputs_backend)


def test_detects_requires_grad_mismatch():
    with pytest.raises(AssertionError, match="requires_grad"):
        assert_same(sin, t(3, requires_grad=True), backend=no_grad_backend)


def test_detects_wrong_graph_count():
    with pytest.raises(AssertionError, match="graphs"):
        assert_same(sin, t(3), graphs=2)


def test_detects_wrong_op_count():
    with pytest.raises(AssertionError, match="ops"):
        assert_same(sin, t(3), graphs=1, ops=2)


def test_counts_ops():
    assert_same(sin, t(3), graphs=1, ops=1)


def test_exception_comparison():
    assert_raises_same(fails, t(3), exc_match="contains")
    with pytest.raises(AssertionError):
        assert_raises_same(sin, t(3))  # eager does not raise


def test_assert_equal_is_strict():
    x = t(3)
    for a, b in [
        ((x,), [x]),
        (1, 1.0),
        (True, 1),
        ({"a": x, "b": x}, {"b": x, "a": x}),
        (Pair(x, 1), (x, 1)),
        (x, x.double()),
        (x, x.view(1, 3)),
        ((x, x), (x,)),
        (torch.Size([2]), (2,)),
    ]:
        with pytest.raises(AssertionError):
            assert_equal(a, b)
    assert_equal({"a": [x, (1, None)]}, {"a": [x.clone(), (1, None)]})
    assert_equal(float("nan"), float("nan"))


def test_deep_copy_preserves_aliasing_and_requires_grad():
    x = t(3, requires_grad=True)
    args = ([x, x], {"k": x}, 3, None)
    c = deep_copy(args)
    assert c[0][0] is c[0][1] is c[1]["k"]
    assert c[0][0] is not x
    assert c[0][0].requires_grad and c[0][0].is_leaf
    assert c[2] == 3 and c[3] is None


def test_alias_signature_distinguishes_identity_and_storage():
    x = t(2, 3)
    inputs = ((x,), {})
    same = _alias_signature((x, x[0], x * 2), inputs)
    assert same == _alias_signature((x, x[0], x * 2), inputs)
    assert same != _alias_signature((x.clone(), x[0], x * 2), inputs)  # identity lost
    assert same != _alias_signature((x, x[0].clone(), x * 2), inputs)  # view became copy
    y = x * 3
    assert _alias_signature((y, y), inputs) != _alias_signature((y, y.clone()), inputs)


def test_oracle_counts():
    def two_ops(x):
        return x.sin() + 1

    stats = compiled_with_oracle(two_ops, t(3))
    assert stats.graphs == 1 and stats.ops == 2
    assert_equal(two_ops(torch.ones(2)), compiled_with_oracle(two_ops, torch.ones(2)).result)


def test_counting_backend_delegates_to_named_backend():
    counter = CountingBackend("aot_eager")
    assert_same(sin, t(3), backend=counter)
    assert counter.frame_count >= 1


def stale_backend(gm, example_inputs):
    """Returns the first call's outputs forever (as if values were baked in)."""
    fwd = gm.forward
    cache = []

    def run(*args):
        if not cache:
            cache.append(fwd(*args))
        return cache[0]

    return run


def test_second_call_uses_different_values():
    with pytest.raises(AssertionError, match="call #2"):
        assert_same(sin, t(3), backend=stale_backend)


def transposed_times_two(x):
    return x.t() * 2


def test_detects_stride_mismatch_on_eager_backend():
    with pytest.raises(AssertionError, match="strides"):
        assert_same(transposed_times_two, t(3, 4), backend=_wrap(lambda outs: type(outs)(o.contiguous() for o in outs)),
                    check_strides=True)
