"""A list (tuple, range, ModuleList) indexed or sliced by a 0-d integer
tensor: eager calls ``Tensor.__index__`` (the tensor's value), which the
trace does not know, so the indexing runs natively at a graph break, as
torch.compile's does (its ``.item()`` break).  Results as eager's for
every index value (no recompile per value), and no more graphs than
torch.compile.  Before, a slice with a tensor bound (``xs[idx:]``) ran the
whole frame as Python: the slice left on the stack at the break could not
be rebuilt (values/containers/containers.py ``SliceValue.reconstruct``)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def index_made_list(x, idx):
    xs = [x, x + 1, x + 2]
    return xs[idx].sin() + 1


def index_passed_list(xs, idx):
    return xs[idx] * 2


def index_tuple(x, idx):
    return (x, x * 2, x * 3)[idx]


def index_constants(x, idx):
    return x * [10, 20, 30][idx]


def slice_from(x, idx):
    xs = [x, x + 1, x + 2]
    return xs[idx:]


def slice_to(x, idx):
    ys = [x.sin(), x.cos(), x.tan()]
    return ys[:idx], ys[idx::2]


def store_at(x, idx):
    xs = [x, x + 1, x + 2]
    xs[idx] = x * 10
    return xs


def range_index(x, idx):
    return x + range(5)[idx]


LAYERS = nn.ModuleList([nn.Identity(), nn.ReLU(), nn.Tanh()])


def module_list_index(x, idx):
    return LAYERS[idx](x) + 1


def index_made_in_frame(x):
    xs = [x, x + 1, x + 2]
    return xs[torch.tensor(1)].sin()


def two_uses(x, idx):
    xs = [x, x + 1, x + 2]
    y = xs[idx]
    return y.sin() + 1, xs[idx - 1]


CASES = [index_made_list, index_tuple, index_constants, slice_from, slice_to, store_at, range_index,
         module_list_index, two_uses]


def run_calls(fn, calls, impl="armature"):
    """Graphs over ``calls`` (compiled vs eager on each), for armature or
    torch.compile (the oracle; results not compared)."""
    counter = CountingBackend("eager")
    reset()
    torch._dynamo.reset()
    try:
        if impl == "armature":
            compiled = armature.compile(fn, backend=counter)
        else:
            compiled = torch.compile(fn, backend=counter)
        for args in calls:
            got = compiled(*args)
            if impl == "armature":
                assert_equal(fn(*args), got, f"idx={args[-1]}")
    except Exception:  # noqa: BLE001
        if impl == "armature":
            raise
        return None    # (torch.compile's own internal error: torch 2.11 on range_index)
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def check(fn, calls):
    """Compiled vs eager on each call; no more graphs than torch.compile
    (where torch.compile runs the frame as Python, 0 graphs, or fails,
    there is no count to compare with)."""
    oracle = run_calls(fn, calls, "torch")
    graphs = run_calls(fn, calls)
    assert not oracle or graphs <= oracle, f"{graphs} graphs over {len(calls)} calls, torch.compile {oracle}"
    assert graphs >= 1, "the frame ran as Python"


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_list_indexed_by_a_0d_int_tensor(fn):
    x = t(3)
    check(fn, [(x, torch.tensor(i)) for i in (1, 2, 0, 1)])


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool])
def test_index_dtypes(dtype):
    check(index_made_list, [(t(3), torch.tensor(1, dtype=dtype))])


def test_passed_in_list():
    xs = [t(3), t(3), t(3)]
    check(index_passed_list, [(xs, torch.tensor(i)) for i in (0, 2)])


def literal_indexes(x):
    xs = [x, x + 1, x + 2]
    i = torch.as_tensor(1)
    return (xs[i:], (10, 20, 30)[i] * x, range(5)[torch.tensor(3)] + x, xs[torch.tensor(True)].cos(),
            xs[torch.tensor(-1, dtype=torch.int8)].tan())


def written_in_place(x):
    xs = [x, x + 1, x + 2]
    i = torch.tensor(0)
    i.add_(2)                      # eager's __index__ reads 2
    return xs[i].sin()


def written_through_a_view(x):
    xs = [x, x + 1, x + 2]
    i = torch.tensor(2)
    i.view(1)[0] = 0
    return xs[i].sin()


def from_data(x, idx):
    xs = [x, x + 1, x + 2]
    i = (idx * 0 + 1).sum()          # made from an input: its value is not known
    return xs[i].sin()


@pytest.mark.parametrize("fn", [index_made_in_frame, literal_indexes, written_in_place, written_through_a_view],
                         ids=lambda f: f.__name__)
def test_index_made_in_the_frame_from_literals_is_folded(fn):
    # ``torch.tensor(1)`` as an index is eager's 1, also after in-place
    # writes (its fake tensor carries the value): one graph (torch 2.13's
    # Dynamo breaks at its .item(); torch 2.11's folds it too)
    x = t(3)
    check(fn, [(x,), (x,)])
    assert run_calls(fn, [(x,)]) == 1


def test_index_computed_from_an_input_breaks():
    x = t(3)
    check(from_data, [(x, torch.tensor(3)), (x, torch.tensor(4))])
    assert run_calls(from_data, [(x, torch.tensor(3))]) == 2


@pytest.mark.parametrize("bad", [torch.tensor(1.0), torch.tensor([1, 2])], ids=["float", "two-elements"])
def test_bad_index_raises_eagers_error(bad):
    x = t(3)
    with pytest.raises(TypeError) as eager:
        index_made_list(x, bad)
    reset()
    with pytest.raises(TypeError) as compiled:
        armature.compile(index_made_list, backend="eager")(x, bad)
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize("fn", [slice_from, slice_to], ids=lambda f: f.__name__)
def test_slice_with_a_tensor_bound_compiles_the_graph_before_it(fn):
    # (the frame used to run as Python: the slice on the stack at the break
    # could not be rebuilt)
    x = t(3)
    counter = CountingBackend("eager")
    reset()
    compiled = armature.compile(fn, backend=counter)
    for i in (0, 2):
        assert_equal(fn(x, torch.tensor(i)), compiled(x, torch.tensor(i)))
    assert counter.frame_count == 1 and counter.op_count == 3 - (fn is slice_from), counter.op_targets()
