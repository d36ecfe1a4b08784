"""``module.__dict__`` and a module class's own ``__setattr__``/
``__delattr__`` in traced code (values/nn/module_dict.py, ModuleValue.setattr):
compiled vs eager, the module's state after each call included (its
instance dict, registered members, what a logging ``__setattr__`` logged),
and graph counts with torch.compile's.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from helpers import USING_TORCH, CountingBackend, compile_fn, reset


class Logging(nn.Module):
    """Logs every attribute write through its own __setattr__."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.log = []

    def __setattr__(self, name, value):
        if "log" in self.__dict__:
            self.__dict__["log"].append(name)
        super().__setattr__(name, value)

    def forward(self, x):
        self.k = 2.0
        self.calls = self.__dict__.get("calls", 0) + 1
        return self.lin(x) * self.k


class Guarded(nn.Module):
    """A __setattr__ that refuses some names and rewrites others; a
    __delattr__ that keeps a tombstone."""

    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def __setattr__(self, name, value):
        if name == "frozen":
            raise AttributeError("frozen is read-only")
        if name == "scale":
            value = value * 2
        super().__setattr__(name, value)

    def __delattr__(self, name):
        super().__delattr__(name)
        self.__dict__["deleted_" + name] = True

    def forward(self, x):
        self.scale = 3.0
        self.tmp = 1
        del self.tmp
        try:
            self.frozen = 1
        except AttributeError:
            pass
        return x * self.scale


class DictReads(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("buf", torch.ones(4))
        self.offset = 0.5

    def forward(self, x):
        d = self.__dict__
        flags = ("lin" in d, "buf" in d, "offset" in d, "training" in d, "missing" in d)
        self.extra = 2                       # a plain attribute: in the dict
        self.act = nn.ReLU()                 # registered: not in the dict
        d["direct"] = 3                      # bypasses __setattr__
        return self.act(x * d["offset"] + self.direct), flags, "extra" in d, "act" in d, d.get("nothing", 7)


def _call(mod, x):
    return mod(x)


def _state(mod):
    out = {}
    for k, v in vars(mod).items():
        if k.startswith("_") and k not in ("_parameters", "_buffers", "_modules"):
            continue
        if k in ("_parameters", "_buffers", "_modules"):
            out[k] = sorted(v)
        elif isinstance(v, list):
            out[k] = list(v)
        else:
            out[k] = v
    return out


# graphs over 3 calls (torch.compile: 3, 1, 2; Logging's `calls` is an int
# attribute of the module, static as under torch.compile: each new value
# recompiles)
@pytest.mark.parametrize("cls,graphs", [(Logging, 3), (Guarded, 1), (DictReads, 1)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_against_eager(cls, graphs):
    torch.manual_seed(0)
    eager = cls()
    torch.manual_seed(0)
    model = cls()
    counter = CountingBackend("eager")
    compiled = compile_fn(_call, backend=counter)   # (torch.compile(module) writes attributes of its own)
    for _ in range(3):
        x = torch.randn(4)
        expected, got = eager(x), compiled(model, x)
        if isinstance(expected, tuple):
            torch.testing.assert_close(got[0], expected[0])
            assert got[1:] == expected[1:]
        else:
            torch.testing.assert_close(got, expected)
        assert _state(model) == _state(eager)
    if not USING_TORCH:
        assert counter.frame_count == graphs
    reset()


def test_fullgraph_logging_setattr():
    torch.manual_seed(0)
    eager = Logging()
    torch.manual_seed(0)
    model = Logging()
    compiled = compile_fn(_call, backend="eager", fullgraph=True)
    x = torch.randn(4)
    torch.testing.assert_close(compiled(model, x), eager(x))
    assert model.log == eager.log == ["k", "calls"]
    reset()
