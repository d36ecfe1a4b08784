"""Automatic generic modules and functions (api._note_changed_number): an
argument that is another instance of the module class (or another function
object with the same code and no closure) where the entry saw one object is,
on the recompile, guarded by type and structure, with its parameters as
graph inputs: one entry then serves every instance, instead of a recompile
per instance up to the limit."""
import warnings

import torch
from torch import nn

import armature

from helpers import CountingBackend


def _apply(layer, x):
    return torch.relu(layer(x)) + 1


def test_one_function_many_layers():
    layers = [nn.Linear(4, 4) for _ in range(12)]
    counting = CountingBackend("eager")
    f = armature.compile(_apply, backend=counting)
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for layer in layers:
            torch.testing.assert_close(f(layer, x), _apply(layer, x))
    assert not [w for w in caught if "recompile limit" in str(w.message)]
    assert counting.frame_count == 2          # the first layer's entry, then one for every layer
    with torch.no_grad():                      # parameters are read on every call
        layers[3].weight.mul_(3)
    torch.testing.assert_close(f(layers[3], x), _apply(layers[3], x))
    assert counting.frame_count == 2


def test_another_structure_recompiles():
    counting = CountingBackend("eager")
    f = armature.compile(_apply, backend=counting)
    x = torch.randn(2, 4)
    for layer in (nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4, bias=False), nn.Linear(4, 4)):
        torch.testing.assert_close(f(layer, x), _apply(layer, x))
    wide = nn.Linear(4, 8)
    torch.testing.assert_close(f(wide, x), _apply(wide, x))


_FIRST = nn.Linear(4, 4)


def _pick(layer, x):
    if layer is _FIRST:
        return layer(x)
    return -layer(x)


def test_identity_comparisons_stay_right():
    f = armature.compile(_pick, backend="eager")
    x = torch.randn(2, 4)
    others = [nn.Linear(4, 4) for _ in range(3)]
    for layer in (_FIRST, others[0], _FIRST, others[1], others[2], _FIRST):
        torch.testing.assert_close(f(layer, x), _pick(layer, x))


def _call(x, fn):
    return fn(x) * 2


def test_a_lambda_made_per_call():
    counting = CountingBackend("eager")
    f = armature.compile(_call, backend=counting)
    x = torch.randn(3)
    for k in range(6):
        fn = lambda t: t.sin() + 1   # noqa: E731 - a new function object each call, same code
        torch.testing.assert_close(f(x, fn), _call(x, fn))
    # a function defined inside another is guarded by its code from the
    # first call (torch.compile: one graph too)
    assert counting.frame_count == 1
    other = lambda t: t.cos()   # noqa: E731 - other code: its own entry
    torch.testing.assert_close(f(x, other), _call(x, other))
    assert counting.frame_count == 2


def test_closures_keep_identity_guards():
    """A closure made per call shares cells with the frame that made it:
    it is not made generic (each call's cell contents are its own)."""
    f = armature.compile(_call, backend="eager")
    x = torch.randn(3)
    for k in range(4):
        fn = (lambda t: t * k)
        torch.testing.assert_close(f(x, fn), _call(x, fn))


_TABLE = {}


def _membership(layer, x):
    scale = 2.0 if layer in (_FIRST,) else 1.0
    if layer == _FIRST:
        scale += 1.0
    return layer(x) * scale + _TABLE.get(layer, 0.0)


def test_membership_equality_and_dict_keys_stay_right():
    others = [nn.Linear(4, 4) for _ in range(3)]
    _TABLE.clear()
    _TABLE[others[1]] = 5.0
    f = armature.compile(_membership, backend="eager")
    x = torch.randn(2, 4)
    for layer in (others[0], _FIRST, others[1], others[2], _FIRST, others[1]):
        torch.testing.assert_close(f(layer, x), _membership(layer, x))
