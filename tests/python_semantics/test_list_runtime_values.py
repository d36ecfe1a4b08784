"""List indexing, slicing and ``list.extend`` with values known only at run
time (a size under dynamic shapes, a number from ``.item()``): compiled vs
eager over several sizes, and the frame count of torch.compile (both
specialise a size used as an index or a length, and both break at
``.item()`` of a value used as a Python int)."""
import pytest
import torch

import armature
from helpers import CountingBackend, assert_equal


def index_by_size(x):
    items = [1, 2, 3, 4, 5, 6, 7, 8]
    return x + items[x.size(0)]


def extend_by_size(x):
    items = [0]
    items.extend(range(x.size(0)))
    items.extend([x.size(0)] * 2)
    return x + len(items) + items[-1]


def slice_by_size(x):
    items = list(range(10))
    return x + sum(items[: x.size(0)])


def index_by_item(x):
    items = [1, 2, 3]
    y = x * 2
    i = int(x.sum().item()) % 3
    return y + items[i]


def extend_by_item(x):
    items = []
    n = int(x.sum().item())
    items.extend([1] * n)
    return x + len(items)


def tensors_indexed_by_size(x):
    ts = [x, x * 2, x * 3, x * 4, x * 5, x * 6]
    return ts[x.size(0)] + 1


def _torch_frames(fn, sizes):
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, dynamic=True)
    for n in sizes:
        compiled(torch.ones(n))
    torch._dynamo.reset()
    return counter.frame_count


@pytest.mark.parametrize("fn", [index_by_size, extend_by_size, slice_by_size, index_by_item, extend_by_item,
                                tensors_indexed_by_size])
def test_runtime_list_values_match_eager_and_torch_compile(fn):
    sizes = (3, 4, 5)
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, dynamic=True)
    for n in sizes:
        assert_equal(fn(torch.ones(n)), compiled(torch.ones(n)))
    assert counter.frame_count == _torch_frames(fn, sizes)
