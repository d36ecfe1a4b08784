"""``.grad`` set on a tensor made in the frame, and read back: checked as
torch checks it, seen by later reads, and set on the real tensor where it
leaves the frame (values/tensors/tensor_attrs.py); compiled vs eager (the returned
tensors' ``.grad`` included).  A tensor made with ``requires_grad=True`` is
a new leaf that a graph cannot produce (values/tensors/tensor.py
``_check_no_new_leaf``): its factory runs as Python, as under
torch.compile, so these make as many graphs as torch.compile does, with the
eager backend and with aot_eager."""
import pytest
import torch

import armature
from helpers import CountingBackend, assert_equal, compiled_with_oracle, t


def set_and_read(x):
    y = x.sin()
    w = torch.zeros(3, requires_grad=True)
    w.grad = y * 2
    return w.grad + 1, w


def set_then_clear(x):
    w = torch.ones(3, requires_grad=True)
    before = w.grad
    w.grad = x.clone()
    w.grad = None
    return x + 1, before, w.grad, w


def wrong_shape(x):
    w = torch.zeros(2)
    try:
        w.grad = x
    except RuntimeError as e:
        return x + 1, str(e)


def wrong_type(x):
    w = torch.zeros(3)
    try:
        w.grad = 3
    except TypeError as e:
        return x + 1, str(e)


def kept_inside(x):
    w = torch.zeros(3, requires_grad=True)
    w.grad = x * 3
    return (w.grad * w).sum()


def _grads(out):
    items = out if isinstance(out, tuple) else (out,)
    return [i.grad for i in items if isinstance(i, torch.Tensor) and i.requires_grad and i.is_leaf]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [set_and_read, set_then_clear, wrong_shape, wrong_type, kept_inside])
def test_grad_of_a_tensor_made_in_the_frame(fn, backend):
    armature.reset()
    counter = CountingBackend(backend)
    compiled = armature.compile(fn, backend=counter)
    x = t(3)
    for _ in range(2):
        expected, got = fn(x), compiled(x)
        assert_equal(expected, got)
        assert_equal(_grads(expected), _grads(got))
    assert counter.frame_count == compiled_with_oracle(fn, x).graphs
