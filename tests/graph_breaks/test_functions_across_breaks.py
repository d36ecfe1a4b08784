"""A function handed across a graph break (to a disabled call, to code run
as Python at the break) is rebuilt in the residual code, so the break splits
the frame instead of running it all as Python (compiled vs eager, graph
counts vs torch.compile).

A staticmethod read through ``self``, a function of a class dict, a function
read from a module or an object, a lambda or closure made in the frame.
"""
import math

import pytest
import torch

import armature
from graph_breaks.util import check_calls, dynamo_graph_count
from helpers import t

X = t(4)


def _torch_disable(fn):
    return torch._dynamo.disable(fn)


class StaticHelper(torch.nn.Module):
    def __init__(self, disable):
        super().__init__()
        self.disable = disable

    @staticmethod
    def helper(h):
        return h * 2

    def forward(self, x):
        h = x.sin()
        h = self.disable(self.helper)(h)
        return h.cos()


class ClassDictHelper(torch.nn.Module):
    def __init__(self, disable):
        super().__init__()
        self.disable = disable

    def scale(self, h):
        return h * 3

    def forward(self, x):
        h = x.sin()
        h = self.disable(ClassDictHelper.scale)(self, h)
        return h.cos()


class Holder:
    def __init__(self):
        self.fn = math.sqrt


def _make_cases(disable):
    def module_function(x):
        h = x + 1
        h = disable(torch.special.erf)(h)   # (a torch function: constant)
        return h * 2

    def object_function(x, holder):
        h = x.abs() + 1
        k = disable(holder.fn)(4.0)
        return h * k

    def made_lambda(x):
        h = x.sin()
        h = disable(lambda v: v * 5)(h)
        return h.cos()

    def made_closure(x):
        k = 7

        def inner(v):
            return v + k

        h = x.sin()
        h = disable(inner)(h)
        return h.cos()

    return [module_function, object_function, made_lambda, made_closure]


CASES = ["module_function", "object_function", "made_lambda", "made_closure"]


@pytest.mark.parametrize("module_cls", [StaticHelper, ClassDictHelper])
def test_method_functions_split_the_frame(module_cls):
    x = X.clone()
    reference = dynamo_graph_count(module_cls(_torch_disable), x)
    assert reference == 2
    m = module_cls(armature.disable)

    def call(v):
        return m(v)

    check_calls(call, lambda: (X.clone(),), graphs=reference)
    armature.reset()
    e = armature.explain(m)(x)
    assert not e.fallbacks and e.graph_count == reference, str(e)


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASES)
def test_functions_split_the_frame(index):
    ours = _make_cases(armature.disable)[index]
    theirs = _make_cases(_torch_disable)[index]
    args = (X.clone(), Holder()) if CASES[index] == "object_function" else (X.clone(),)
    reference = dynamo_graph_count(theirs, *args)

    def make_state():
        return (X.clone(), Holder()) if CASES[index] == "object_function" else (X.clone(),)

    check_calls(ours, make_state, snapshot=lambda state: state[0], graphs=reference)
