"""Graph breaks inside user ``with`` blocks (context managers written in
Python and from contextlib): __enter__/__exit__ run exactly once each, in
order, also when an exception leaves the block after the break."""
import contextlib

import pytest
import torch

import armature
from helpers import assert_same

from .util import check_calls, snap

X0 = torch.tensor([1.0, -2.0, 3.0])


class CM:
    def __init__(self, log, swallow=()):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, typ, val, tb):
        self.log.append(("exit", None if typ is None else typ.__name__))
        return typ is not None and issubclass(typ, self.swallow)


def with_break(x, log):
    with CM(log) as c:
        y = x + 1
        armature.graph_break()
        log.append("body")
        y = y * len(c.log)
    log.append("after")
    return y


def with_break_nested(x, log):
    with CM(log):
        y = x + 1
        with CM(log):
            armature.graph_break()
            y = y * 2
        log.append("between")
        armature.graph_break()
        y = y - 1
    return y


def with_break_in_loop(x, log):
    for i in range(4):
        with CM(log):
            x = x + i
            armature.graph_break()
    return x


@armature.disable
def make_cm(log):
    return CM(log)


def with_native_cm(x, log):
    with make_cm(log):
        y = x * 2
        armature.graph_break()
        y = y + 1
    return y


@pytest.mark.usefixtures("split_loop_breaks")   # (with_break_in_loop: a resume function inside the loop)
@pytest.mark.parametrize("fn", [with_break, with_break_nested, with_break_in_loop, with_native_cm],
                         ids=lambda f: f.__name__)
def test_with_block_break(fn):
    check_calls(fn, lambda: (X0.clone(), []), lambda s: snap(s[1]))


def with_raise_after_break(x, log):
    with CM(log):
        y = x + 1
        armature.graph_break()
        raise KeyError("after the break")
    return y


def with_swallowed_after_break(x, log, d):
    with CM(log, swallow=KeyError):
        y = x + 1
        armature.graph_break()
        y = y + d["nope"]
    log.append("after")
    return x * 2


def suppress_after_break(x, d):
    with contextlib.suppress(KeyError):
        y = x + 1
        armature.graph_break()
        y = y + d["nope"]
    return x - 1




@pytest.mark.parametrize("fn,args", [
    pytest.param(with_raise_after_break, (X0, []), id="with_raise_after_break"),
    pytest.param(with_swallowed_after_break, (X0, [], {}), id="with_swallowed_after_break"),
    pytest.param(suppress_after_break, (X0, {}), id="contextlib_suppress_after_break"),
])
def test_exception_leaves_with_block_after_break(fn, args):
    assert_same(fn, *args, fullgraph=False, exc_match="exact")


def with_raise_before_break(x, log):
    with CM(log, swallow=ValueError):
        raise ValueError("before")
    armature.graph_break()
    return x + 1


def test_exception_in_with_block_without_break():
    check_calls(with_raise_before_break, lambda: (X0.clone(), []), lambda s: snap(s[1]))
