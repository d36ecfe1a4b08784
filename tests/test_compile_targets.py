"""What armature.compile accepts and how the compiled object stands in for
the original, as torch.compile's (PyTorch's own Dynamo tests): C functions
(``torch.sin``), a keyword argument named ``self``, a compiled module's
truth value (the wrapper's, as torch.compile's), compiled modules inside compiled modules."""
import math

import pytest
import torch
from torch import nn

import armature
from helpers import CountingBackend, armature_only, assert_equal, dynamo_graph_count, t

pytestmark = armature_only


@pytest.mark.parametrize("fn,args", [(torch.sin, (t(4),)), (torch.add, (t(4), t(4))),
                                     (torch.Tensor.cos, (t(3),)), (math.sqrt, (4.0,))])
def test_compile_a_c_function(fn, args):
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    assert_equal(fn(*args), compiled(*args))
    tensors = any(isinstance(a, torch.Tensor) for a in args)
    assert counter.frame_count == (dynamo_graph_count(fn, *args) if tensors else 0)
    assert compiled.__name__ == fn.__name__


def test_compile_a_c_function_with_keywords():
    compiled = armature.compile(torch.add, backend="eager", fullgraph=True)
    x, y = t(4), t(4)
    assert_equal(torch.add(x, y, alpha=2), compiled(x, y, alpha=2))


def uses_self(self, x):
    return x + self * 2


def test_keyword_argument_named_self():
    counter = CountingBackend("eager")
    compiled = armature.compile(uses_self, backend=counter, fullgraph=True)
    a, b = t(4), t(4)
    assert_equal(uses_self(self=a, x=b), compiled(self=a, x=b))
    assert_equal(uses_self(a, b), compiled(a, b))
    assert counter.frame_count == 1


@pytest.mark.parametrize(
    "module", [nn.Sequential(), nn.Sequential(nn.Linear(3, 3)), nn.ModuleList(), nn.Linear(3, 3)],
    ids=["empty-sequential", "sequential", "empty-modulelist", "linear"],
)
def test_compiled_module_truth_is_the_modules(module):
    """A compiled container is as true, and as long, as the module it wraps
    (#36: torch.compile's wrapper, having no __len__, is true around an empty
    ModuleList; code that tests `if self.layers:` must not change meaning
    when the layers are compiled). tests/modules/test_module_states.py
    traces the same."""
    compiled = armature.compile(module, backend="eager")
    assert bool(compiled) is bool(module)
    if hasattr(type(module), "__len__"):
        assert len(compiled) == len(module)


class Gate(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        if len(self.inner._orig_mod if hasattr(self.inner, "_orig_mod") else self.inner):
            x = self.inner(x)
        return x.relu()


@pytest.mark.parametrize("inner", [nn.Sequential(), nn.Sequential(nn.Linear(3, 3))], ids=["empty", "linear"])
def test_compiled_module_inside_a_compiled_module(inner):
    eager = Gate(inner)
    composed = Gate(armature.compile(inner, backend="eager"))
    counter = CountingBackend("eager")
    outer = armature.compile(composed, backend=counter)
    x = t(2, 3)
    assert_equal(eager(x), outer(x))
    assert counter.frame_count >= 1
