"""``copy.deepcopy`` of config objects inside compiled frames: classes with
their own ``__getattribute__`` (transformers' ``PretrainedConfig`` maps
aliases through ``attribute_map``; T5's ``get_text_config`` deep-copies the
config, and ``to_dict`` deep-copies ``self.__dict__``).  The hook is traced
for the names copy.py asks and the copy modelled where it answers as the
generic lookup does (values/stdlib/copy.py); otherwise a graph break, with
eager's result.  Compared with eager (results, the objects afterwards) and
graphs with torch.compile's."""
from __future__ import annotations

import copy

import pytest
import torch

from helpers import USING_TORCH, dynamo_graph_count
from python_semantics.support import assert_same_objects

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


class AliasConfig:
    """PretrainedConfig's attribute protocol, reduced."""
    attribute_map = {"hidden_size": "d_model", "num_layers": "n_layer"}

    def __init__(self, d_model=8, n_layer=2):
        self.d_model = d_model
        self.n_layer = n_layer
        self.id2label = {0: "A", 1: "B"}
        self.dtype = torch.float32
        self.tags = ["x"]

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    def to_dict(self):
        return copy.deepcopy(self.__dict__)


class LayeredConfig(AliasConfig):
    """transformers 5's second hook (HeterogeneousConfigMixin), reduced."""

    def __getattribute__(self, key):
        spec = super().__getattribute__("__dict__").get("_spec")
        if spec is not None and key in spec:
            raise AttributeError(key)
        return super().__getattribute__(key)


class ComposedConfig(AliasConfig):
    def __init__(self):
        super().__init__()
        self.decoder = AliasConfig(16, 4)


class DictAlias(AliasConfig):
    """Maps ``__dict__`` elsewhere: copy.py's ``y.__dict__.update`` would
    write into another dict; not modelled."""
    attribute_map = {"__dict__": "other"}
    other = {}


class Lazy:
    """``__getattr__`` answering everything: copy.py would find a
    ``__deepcopy__`` (None-returning callable); not modelled."""

    def __init__(self):
        self.n = 3

    def __getattr__(self, name):
        return lambda *a: None


def deepcopy_alias_config(cfg, x):
    c = copy.deepcopy(cfg)
    c.hidden_size = 32
    c.tags.append("y")
    return x * c.hidden_size + cfg.hidden_size, c.n_layer, cfg.tags, c.tags, c.dtype is cfg.dtype, type(c).__name__


def deepcopy_layered(cfg, x):
    c = copy.deepcopy(cfg)
    return x + c.num_layers, c.id2label is not cfg.id2label, c.id2label == cfg.id2label


def deepcopy_composed(cfg, x):
    c = copy.deepcopy(cfg)
    c.decoder.hidden_size = 1
    return x * cfg.decoder.hidden_size + c.decoder.d_model, c.decoder is not cfg.decoder


def config_to_dict(cfg, x):
    d = cfg.to_dict()
    d["d_model"] = 0
    return x * cfg.d_model, sorted(d), d["id2label"] is not cfg.id2label


def deepcopy_dict_alias(cfg, x):
    return x + 1, type(copy.deepcopy(cfg)).__name__


def deepcopy_lazy(obj, x):
    return x + 1, copy.deepcopy(obj)


CASES = [
    pytest.param(deepcopy_alias_config, lambda: (AliasConfig(), torch.arange(3.0)), id="alias_config"),
    pytest.param(deepcopy_layered, lambda: (LayeredConfig(), torch.arange(3.0)), id="two_hooks"),
    pytest.param(deepcopy_composed, lambda: (ComposedConfig(), torch.arange(3.0)), id="nested_configs"),
    pytest.param(config_to_dict, lambda: (AliasConfig(), torch.arange(3.0)), id="to_dict"),
]


@pytest.mark.parametrize("fn,make_args", CASES)
def test_deepcopy_of_config_in_one_graph(fn, make_args):
    assert_same_objects(fn, make_args, graphs=1)
    assert dynamo_graph_count(fn, *make_args()) == 1


@pytest.mark.parametrize("fn,make_args", [
    pytest.param(deepcopy_dict_alias, lambda: (DictAlias(), torch.arange(3.0)), id="hook_maps___dict__"),
    pytest.param(deepcopy_lazy, lambda: (Lazy(), torch.arange(3.0)), id="getattr_answers___deepcopy__"),
])
def test_deepcopy_hook_that_is_not_generic_runs_natively(fn, make_args):
    assert_same_objects(fn, make_args, fullgraph=False)


def test_deepcopy_caches_slotnames_as_eager():
    class Fresh(AliasConfig):
        pass
    assert "__slotnames__" not in Fresh.__dict__

    def f(cfg, x):
        return x * copy.deepcopy(cfg).d_model
    assert_same_objects(f, lambda: (Fresh(), torch.arange(3.0)), graphs=1)
    assert Fresh.__dict__["__slotnames__"] == []


def test_hook_guarded_after_attribute_map_changes():
    # the trace read attribute_map while checking the hook: a change to it
    # (now mapping __deepcopy__) must not reuse the copy model
    class Swapped(AliasConfig):
        attribute_map = {"hidden_size": "d_model"}

    def f(cfg, x):
        c = copy.deepcopy(cfg)
        return x * 2, type(c).__name__
    import armature
    from helpers import CountingBackend, assert_equal
    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter)
    x = torch.arange(3.0)
    assert_equal(f(Swapped(), x), compiled(Swapped(), x))
    Swapped.attribute_map = {"hidden_size": "d_model", "__deepcopy__": "marker"}
    Swapped.marker = staticmethod(lambda memo: "copied by marker")
    try:
        assert f(Swapped(), x)[1] == "str"
        out = compiled(Swapped(), x)
        assert out[1] == "str", out
    finally:
        Swapped.attribute_map = {"hidden_size": "d_model"}
