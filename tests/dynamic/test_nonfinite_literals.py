"""Guards on symbolic numbers compared with ``inf`` or ``nan`` literals.

A comparison of a number kept symbolic (``abs(n) != math.inf``) is guarded
by which way it went; its guard text held the literal's repr, ``inf``, which
is no Python name: the guard raised NameError on every call, so every call
failed it and recompiled (the report said ``now: <NameError ...>``).
"""
import math

import torch

import armature
from helpers import CountingBackend


def finite_branch(x, n):
    if abs(n) != math.inf and n == n:
        return x * 2
    return x - 1


def test_comparison_with_inf_holds_for_other_finite_values():
    counter = CountingBackend("eager")
    compiled = armature.compile(finite_branch, backend=counter)
    x = torch.ones(2)
    for n in (1.5, 2.5, -3.0, 7.25):   # (the second makes n dynamic; the branch guard then holds)
        assert torch.equal(compiled(x, n), finite_branch(x, n))
    assert counter.frame_count == 2
    for n in (math.inf, -math.inf, float("nan"), 4.0):   # (the other branch: eager's answers)
        assert torch.equal(compiled(x, n), finite_branch(x, n))

