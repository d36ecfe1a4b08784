"""torch objects made or read in the frame (PyTorch's own Dynamo tests),
compiled vs eager with graph counts vs torch.compile: ``torch.device(...)``
built in the frame, ``x.__class__`` and its name, legacy tensor types
(``x.type(torch.HalfTensor)``)."""
import pytest
import torch

from helpers import CASE_ARGS, case, dynamo_graph_count, t
from python_semantics.support import run_case

X = t(4)


def device_made_in_frame(x):
    y = x.sin().to(torch.device("cpu"))
    return y.cos() + torch.ones(4, device=torch.device("cpu")).sum()


def device_with_index(x):
    d = torch.device("cpu", 0)
    return x.sin() + (d.type == "cpu") + d.index


def bad_device_raises(x):
    return x.to(torch.device("nonsense"))


def class_of_tensor(x):
    return x.sin() + len(x.__class__.__name__) + (x.__class__ is torch.Tensor)


def parameter_class(x, p):
    return x * (p.__class__ is torch.nn.Parameter)


def legacy_type(x):
    return x.sin().type(torch.HalfTensor).float().cos()


def legacy_type_same(x):
    return x.sin().type(torch.FloatTensor) * 2


CASES = [
    case(device_made_in_frame, X),
    case(device_with_index, X),
    case(class_of_tensor, X),
    case(parameter_class, X, torch.nn.Parameter(t(4))),
    case(legacy_type, X),
    case(legacy_type_same, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_one_graph_like_torch_compile(fn, args, opts):
    graphs = dynamo_graph_count(fn, *args)
    run_case(fn, args, dict(opts, graphs=graphs))


def test_bad_device_raises_eagers_error():
    run_case(bad_device_raises, (X,), {}, raises=True)
