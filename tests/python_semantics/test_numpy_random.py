"""``np.random.*`` inside a compiled function is a graph break (faithful:
NumPy's streams cannot be drawn by torch's generator; torch.compile traces
them with torch's and draws other numbers).  The break splits the frame:
the tensor work before and after it stays compiled, one graph each, and the
numbers are NumPy's own (same seed, same draws as eager)."""
import numpy as np
import pytest
import torch

import armature
from helpers import CountingBackend, assert_equal, t


def draws_between_tensor_work(x):
    y = x.sin() * 2
    noise = np.random.rand(3)
    z = y + torch.from_numpy(noise).float()
    return z.cos(), torch.from_numpy(noise)


def draws_in_a_loop(x):
    out = []
    for _ in range(3):
        x = x + 1
        out.append(np.random.randint(0, 100))
    return x * 2, out


def generator_object(x, rng):
    y = x.exp()
    v = rng.normal(size=3)
    return y + torch.as_tensor(v, dtype=y.dtype), torch.from_numpy(v)


@pytest.mark.parametrize("fn,graphs", [(draws_between_tensor_work, 2),
                                      (draws_in_a_loop, 3)])   # (the loop's resume functions serve every iteration)
@armature.config.patch(loop_breaks="split")   # (draws_in_a_loop: resume functions inside the loop)
def test_the_frame_stays_compiled_around_the_draw(fn, graphs):
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    x = t(3)
    for seed in (0, 1, 2):
        np.random.seed(seed)
        expected = fn(x)
        after_eager = np.random.rand()
        np.random.seed(seed)
        got = compiled(x)
        assert np.random.rand() == after_eager   # NumPy's state after the call: eager's
        assert_equal(expected, got)
    assert counter.frame_count == graphs


def test_a_generator_object_passed_in():
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(generator_object, backend=counter)
    x = t(3)
    assert_equal(generator_object(x, np.random.default_rng(5)), compiled(x, np.random.default_rng(5)))
    assert counter.frame_count == 2
    with pytest.raises(armature.Unsupported):
        armature.reset()
        armature.compile(generator_object, backend="eager", fullgraph=True)(x, np.random.default_rng(5))
