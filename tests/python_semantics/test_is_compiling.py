"""``torch.compiler.is_compiling()`` reads True inside traced code and False
outside.  Compared explicitly (compiled True vs eager False) rather than
with assert_same, since the two are meant to differ."""

import pytest
import torch

from helpers import CountingBackend, compile_fn, t


def returns_flag(x):
    return torch.compiler.is_compiling(), x + 1


def branches_on_flag(x):
    if torch.compiler.is_compiling():
        return x * 2
    return x - 2


def flag_in_helper(x):
    def inner():
        return torch.compiler.is_compiling()

    return inner(), x * 3


def flag_via_import(x):
    from torch.compiler import is_compiling

    return is_compiling(), x + 4


def flag_via_dynamo_alias(x):
    return torch._dynamo.is_compiling(), x + 5


X = t(4)


@pytest.mark.parametrize("fn", [returns_flag, flag_in_helper])
def test_is_compiling_true_inside_false_outside(fn):
    counter = CountingBackend()
    compiled = compile_fn(fn, backend=counter, fullgraph=True)
    for _ in range(2):
        eager_flag, eager_out = fn(X)
        flag, out = compiled(X)
        assert eager_flag is False
        assert flag is True
        torch.testing.assert_close(out, eager_out)
    assert counter.frame_count == 1
    assert torch.compiler.is_compiling() is False  # nothing leaks out


def test_is_compiling_branch_taken_inside():
    counter = CountingBackend()
    compiled = compile_fn(branches_on_flag, backend=counter, fullgraph=True)
    for _ in range(2):
        torch.testing.assert_close(branches_on_flag(X), X - 2)
        torch.testing.assert_close(compiled(X), X * 2)
    assert counter.frame_count == 1
    assert counter.op_count == 1  # only the mul; the branch folded


@pytest.mark.parametrize(
    "fn",
    [
        flag_via_import,
        flag_via_dynamo_alias,
    ],
)
def test_is_compiling_spellings(fn):
    compiled = compile_fn(fn, backend="eager", fullgraph=True)
    assert fn(X)[0] is False
    flag, out = compiled(X)
    assert flag is True
    torch.testing.assert_close(out, fn(X)[1])
