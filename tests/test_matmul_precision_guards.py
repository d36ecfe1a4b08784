"""TF32 switches are guarded on graphs with matrix products / convolutions
(guards/matmul_precision.py): flipping one recompiles such a graph (as
torch.compile does), and leaves other graphs alone."""
from __future__ import annotations

import pytest
import torch

import armature

from helpers import USING_TORCH

pytestmark = pytest.mark.skipif(USING_TORCH, reason="armature's guards")


@pytest.fixture
def restore_flags():
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
           torch.get_float32_matmul_precision())
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old[:2]
    torch.set_float32_matmul_precision(old[2])


def test_matmul_recompiles_when_allow_tf32_flips(restore_flags):
    f = armature.compile(lambda a, b: a @ b + 1, backend="eager")
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.testing.assert_close(f(a, b), a @ b + 1)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.testing.assert_close(f(a, b), a @ b + 1)
    assert len(armature.cache_entries(f)) == 2
    torch.backends.cuda.matmul.allow_tf32 = False
    f(a, b)
    assert len(armature.cache_entries(f)) == 2    # the first entry serves again


def test_float32_matmul_precision_is_the_same_switch(restore_flags):
    lin = torch.nn.Linear(4, 4)
    f = armature.compile(lambda x: lin(x).relu(), backend="eager")
    x = torch.randn(2, 4)
    torch.set_float32_matmul_precision("highest")
    f(x)
    torch.set_float32_matmul_precision("high")
    torch.testing.assert_close(f(x), lin(x).relu())
    assert len(armature.cache_entries(f)) == 2


def test_conv_guards_cudnn_tf32(restore_flags):
    conv = torch.nn.Conv2d(2, 2, 3)
    f = armature.compile(lambda x: conv(x) * 2, backend="eager")
    x = torch.randn(1, 2, 5, 5)
    torch.backends.cudnn.allow_tf32 = True
    f(x)
    torch.backends.cudnn.allow_tf32 = False
    torch.testing.assert_close(f(x), conv(x) * 2)
    assert len(armature.cache_entries(f)) == 2


def test_graph_without_matmul_is_not_guarded(restore_flags):
    f = armature.compile(lambda x: x.sin() + 1, backend="eager")
    x = torch.randn(3)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    f(x)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.testing.assert_close(f(x), x.sin() + 1)
    assert len(armature.cache_entries(f)) == 1
