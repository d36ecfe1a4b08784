"""``with torch.autocast(...)`` inside compiled code (values/tensors/autocast.py): a
region that keeps the autocast state (LLaMA's rotary embedding forcing
float32 when autocast is off) is traced into the graph; one that would switch
autocast is a graph break, and the state it read is guarded."""
import torch

import armature

from helpers import CountingBackend


def rotary_like(x):
    with torch.autocast(device_type="cpu", enabled=False):
        freqs = x.float() @ x.float().T
        emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * 2


def test_region_that_keeps_the_state_is_one_graph():
    counting = CountingBackend("eager")
    cf = armature.compile(rotary_like, backend=counting, fullgraph=True)
    x = torch.randn(3, 4)
    for _ in range(2):
        torch.testing.assert_close(cf(x), rotary_like(x))
    assert counting.frame_count == 1
    theirs = CountingBackend("eager")
    torch._dynamo.reset()
    torch.compile(rotary_like, backend=theirs)(x)
    assert theirs.frame_count == 1


def test_region_that_switches_autocast_breaks_and_state_is_guarded():
    cf = armature.compile(rotary_like, backend="eager")
    x = torch.randn(3, 4)
    torch.testing.assert_close(cf(x), rotary_like(x))
    with torch.autocast("cpu", dtype=torch.bfloat16):   # now the region switches autocast off
        got, expected = cf(x), rotary_like(x)
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected)
    assert not torch.is_autocast_enabled("cpu")
    assert len(armature.cache_entries(cf)) >= 2


def test_break_inside_a_kept_region():
    def f(x):
        with torch.autocast(device_type="cpu", enabled=False):
            y = x @ x
            print("inside")
            z = y + 1
        return z

    cf = armature.compile(f, backend="eager")
    x = torch.randn(3, 3)
    for _ in range(2):
        torch.testing.assert_close(cf(x), f(x))
        assert not torch.is_autocast_enabled("cpu")
