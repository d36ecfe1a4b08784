"""``isinstance(t, torch.FloatTensor)`` and the other legacy tensor types
(issue #25, PyTorch's own Dynamo tests): their metaclass ``torch.tensortype``
has a C ``__instancecheck__`` (dtype and backend of the tensor), which was a
graph break; values/tensors/legacy_types.py answers it from the trace's
metadata.  Compiled vs eager, graph counts vs torch.compile; a tensor of
another dtype afterwards recompiles (dtype is guarded) and answers anew."""
import pytest
import torch

import armature
from helpers import CASE_ARGS, CountingBackend, armature_only, assert_equal, case, dynamo_graph_count, t
from python_semantics.support import run_case

X = t(4)


def input_is_float_tensor(x):
    return x + 1, isinstance(x, torch.FloatTensor), isinstance(x, torch.DoubleTensor)


def made_tensors(x):
    h = x.half()
    return (x.long() * 2, isinstance(h, torch.HalfTensor), isinstance(x.long(), torch.LongTensor),
            isinstance(x > 0, torch.BoolTensor), isinstance(x, torch.cuda.FloatTensor),
            isinstance(x, torch.sparse.FloatTensor), isinstance(x, (torch.IntTensor, torch.FloatTensor)))


def branch_on_legacy_type(x):
    if isinstance(x, torch.DoubleTensor):
        return x * 2
    return x - 1


def parameter_is_float_tensor(x, p):
    return x * p, isinstance(p, torch.FloatTensor), isinstance(p.detach(), torch.FloatTensor)


def not_a_tensor(x):
    return x + 1, isinstance(3.0, torch.FloatTensor), isinstance([x], torch.FloatTensor)


CASES = [
    case(input_is_float_tensor, X),
    case(input_is_float_tensor, X.double(), id="double_input"),
    case(made_tensors, X),
    case(branch_on_legacy_type, X),
    case(branch_on_legacy_type, X.double(), id="branch_double"),
    case(parameter_is_float_tensor, X, torch.nn.Parameter(t(4))),
    case(not_a_tensor, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_one_graph_like_torch_compile(fn, args, opts):
    graphs = dynamo_graph_count(fn, *args)
    assert graphs == 1
    run_case(fn, args, dict(opts, graphs=graphs))


@armature_only
def test_sparse_tensor_answers_like_eager():
    def f(s):
        return isinstance(s, torch.sparse.FloatTensor), isinstance(s, torch.FloatTensor)
    s = torch.ones(3).to_sparse()
    armature.reset()
    assert f(s) == armature.compile(f, backend="eager")(s)


@armature_only
def test_a_new_dtype_recompiles_and_answers_anew():
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(branch_on_legacy_type, backend=counter, fullgraph=True)
    for x in (t(4), t(4).double(), t(4)):
        assert_equal(branch_on_legacy_type(x), compiled(x))
    assert counter.frame_count == 2
