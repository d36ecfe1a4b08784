"""Minimal repros of what stops the real models of test_models.py, in plain
Python + torch (no torchvision/transformers/timm needed).

Each is the smallest program showing one construct a model's code uses at
the place named in its docstring.  They are strict xfails: the day armature
handles one, its test XPASSes and fails, so remove the mark and it becomes a
regression test (and the models it unblocked move on in test_models.py).
Every test checks eager's answer as well, so a fix must also be right.
"""
from __future__ import annotations

import abc
import collections
import copy
import dataclasses
import functools
import inspect
import os
import types

import pytest
import torch

import armature


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=f"armature: {reason}")


def check(fn, *args):
    """fullgraph compile, exactly one graph, same answer as eager."""
    expected = fn(*args)
    armature.reset()
    actual = armature.compile(fn, backend="eager", fullgraph=True)(*args)
    torch.testing.assert_close(actual, expected)


X = torch.ones(2)


# --- all four transformers models --------------------------------------------------


class _Config:
    """The shape of transformers' PretrainedConfig: attribute_map aliases."""
    attribute_map = {"hidden_size": "d_model"}

    def __init__(self):
        self.d_model = 4
        self.return_dict = True

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


_CFG = _Config()


def test_config_custom_getattribute():
    def f(x):
        return x * _CFG.hidden_size if _CFG.return_dict else x
    check(f, X)


def _forward(self, input_ids, use_cache=None):
    return input_ids


def test_function_code_varnames():
    def f(x):
        return x + ("use_cache" in _forward.__code__.co_varnames)
    check(f, X)


def test_jump_to_extended_arg():
    src = "def f(x):\n    for i in range(2):\n" + "        x = x + 1\n" * 70 + "    return x\n"
    ns: dict = {}
    exec(src, ns)
    check(ns["f"], X)


class _Registry(dict):
    """The shape of transformers' _CanRecordRegistry."""

    def get(self, key):
        return super().get(key) or {}


_REG = _Registry()


def test_dict_subclass_super_get():
    def f(x):
        return x + len(_REG.get("k"))
    check(f, X)


_LIN = torch.nn.Linear(2, 2)


def test_module_dunder_class():
    def f(x):
        return x + len(str(_LIN.__class__)) + (type(_LIN) is _LIN.__class__)
    check(f, X)


def test_import_inside_function():
    def f(x):
        import torch
        from torch.nn import functional as F
        return F.relu(x) + torch.ones(1)
    check(f, X)


class _Interface(collections.abc.MutableMapping):
    """The shape of transformers' GeneralInterface (ALL_ATTENTION_FUNCTIONS)."""
    _global_mapping = {"sdpa": 1}

    def __init__(self):
        self._local_mapping = {}

    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]

    def __setitem__(self, key, value):
        self._local_mapping[key] = value

    def __delitem__(self, key):
        del self._local_mapping[key]

    def __iter__(self):
        return iter({**self._global_mapping, **self._local_mapping})

    def __len__(self):
        return len(self._global_mapping.keys() | self._local_mapping.keys())


_IFACE = _Interface()


def test_in_on_mapping_object():
    def f(x):
        return x + ("sdpa" in _IFACE) + ("flash" in _IFACE)
    check(f, X)


@dataclasses.dataclass
class _Output(collections.OrderedDict):
    """The shape of transformers' ModelOutput: an OrderedDict dataclass with __new__."""
    last_hidden_state: torch.Tensor = None
    pooler_output: torch.Tensor = None

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v


def test_model_output():
    def f(x):
        out = _Output(last_hidden_state=x + 1)
        return out.last_hidden_state + out["last_hidden_state"] + out.to_tuple()[0] \
            if hasattr(out, "to_tuple") else out.last_hidden_state + out["last_hidden_state"]
    check(f, X)


class _BCCacheNameMeta(type):
    """transformers 5.24 gave every model output class (ModelOutput) this
    metaclass, which only defines __setattr__ (renaming old keyword names in
    the dataclass __init__); armature broke the graph at every output made
    in forward (BERT, GPT-2, LLaMA, T5, BART, ViT: 2-4 graphs instead of 1)."""

    def __setattr__(cls, name, value):
        if name == "__init__":
            init = value

            @functools.wraps(init)
            def __init__(self, *args, **kwargs):
                if "past_key_values" in kwargs:
                    kwargs["cache"] = kwargs.pop("past_key_values")
                init(self, *args, **kwargs)

            value = __init__
        super().__setattr__(name, value)


class _MetaOutput(collections.OrderedDict, metaclass=_BCCacheNameMeta):
    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v


@dataclasses.dataclass
class _CachedOutput(_MetaOutput):
    last_hidden_state: torch.Tensor = None
    cache: torch.Tensor = None


def test_model_output_with_transformers_5_24_metaclass():
    def f(x):
        out = _CachedOutput(last_hidden_state=x + 1, past_key_values=x * 2)
        return out.last_hidden_state + out["cache"]
    check(f, X)


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2)
        self.b = torch.nn.Linear(2, 2)

    def forward(self, x):
        x = self.a(x).relu()
        armature.graph_break()
        return self.b(x)


def test_break_inside_compiled_module_still_compiles_parts():
    """A break inside a compiled nn.Module's forward still compiles the parts
    around it (it once left zero graphs: the break surfaced at the
    CALL_FUNCTION_EX of api._module_call, where the callee was not swapped for
    its compiled wrapper), as torch.compile does (2 graphs)."""
    model = _Inner()
    x = torch.randn(3, 2)
    armature.reset()
    explained = armature.explain(model)(x)
    torch.testing.assert_close(explained.out, model(x))
    assert explained.graph_count == 2, str(explained)


def _wraps_deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@_wraps_deco
def _wrapped_add(x):
    return x + 1


def _wraps_deco_break(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        armature.graph_break()
        return fn(*args, **kwargs)
    return wrapper


@_wraps_deco_break
def _wrapped_add_break(x):
    return x + 1


def test_functools_wraps_root():
    check(_wrapped_add, X)


def test_functools_wraps_with_break():
    expected = _wrapped_add_break(X)
    armature.reset()
    actual = armature.compile(_wrapped_add_break, backend="eager")(X)
    torch.testing.assert_close(actual, expected)


# --- one or two models each -----------------------------------------------------------


class _Owner:
    def chunk(self, a, b):
        return a


_OWNER = _Owner()


def test_inspect_signature_of_bound_method():
    def f(x):
        return x + len(inspect.signature(_OWNER.chunk).parameters) + (_OWNER.chunk.__func__ is _Owner.chunk)
    check(f, X)


class _Layer(abc.ABC):
    def __init__(self):
        self.keys = None


def test_instantiate_abc_subclass():
    def f(x):
        layer = _Layer()
        return x + (layer.keys is None)
    check(f, X)


def test_getattr_default_on_none():
    def f(x):
        return x + getattr(None, "is_compileable", False)
    check(f, X)


def test_torch_finfo():
    def f(x):
        return x.clamp(min=torch.finfo(x.dtype).min) + torch.finfo(torch.float16).eps
    check(f, X)


@torch.no_grad()
def _no_grad_helper(x):
    return x * 2


def test_no_grad_decorator():
    def f(x):
        return _no_grad_helper(x) + 1
    check(f, X)


def test_os_environ_get():
    def f(x):
        if os.environ.get("ARMATURE_TEST_SOME_FLAG", "0") == "1":
            return x - 1
        return x + 1
    check(f, X)


# --- the second library set and the new architectures ---------------------------------


def _log_api_usage_once(obj):
    # torchvision.utils._log_api_usage_once, called in forward by Swin-T's
    # stochastic depth (torchvision.ops.stochastic_depth)
    module = obj.__module__
    name = obj.__class__.__name__
    if isinstance(obj, types.FunctionType):
        name = obj.__name__
    return f"{module}.{name}"


def test_function_dunder_class():
    """Swin-T: function.__class__ raised AttributeError (19 graphs, not 1)."""
    def f(x):
        return x + len(_log_api_usage_once(_forward)) + len(_log_api_usage_once(_CFG))
    check(f, X)


def test_module_created_in_forward():
    """DistilBertForSequenceClassification: ``nn.ReLU()(pooled_output)`` in
    forward (creating a module was refused: 2 graphs, not 1)."""
    def f(x):
        return torch.nn.ReLU()(x - 1) + torch.nn.Softmax(dim=-1)(x)
    check(f, X)


class _PlainConfig:
    def __init__(self):
        self.d_model = 4
        self.names = ["encoder", "decoder"]


_PLAIN_CFG = _PlainConfig()


# (former blocker: copy.deepcopy of an object; T5's DynamicCache(config=...)
# deep-copies the config in get_text_config(decoder=True): values/stdlib/copy.py)
def test_deepcopy_plain_object():
    def f(x):
        c = copy.deepcopy(_PLAIN_CFG)
        c.d_model = 8
        return x * c.d_model + len(c.names)
    check(f, X)


_LAYERS = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])


# (former blocker: the resume function could not iterate the loop's real
# iterator, one more break per iteration; values/containers/real_iterator.py)
def test_break_in_loop_keeps_iterating():
    def f(x, p):
        for idx, layer in enumerate(_LAYERS):
            if p[idx] < 0.5:  # data-dependent, as LayerDrop's `if dropout_probability < self.layerdrop`
                continue
            x = layer(x)
        return x
    x, p = torch.randn(2, 2), torch.tensor([0.9, 0.1, 0.9])
    armature.reset()
    explained = armature.explain(f)(x, p)
    torch.testing.assert_close(explained.out, f(x, p))
    others = [str(r).splitlines()[0] for r in explained.break_reasons if "data-dependent" not in str(r)]
    assert not others, others


def test_size_across_a_break_stays_dynamic():
    # (former blocker: a torch.Size crossing a break was guarded as one
    # constant in the resume function, one recompile per size; its items
    # now stay dynamic where they were)
    def f(x):
        s = x.shape
        armature.graph_break()
        return x.reshape(s[0] * s[1]) + s[0]
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    armature.reset()
    compiled = armature.compile(f, backend=backend)
    for n in range(3, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(compiled(x), f(x))
    assert len(graphs) <= 3, f"{len(graphs)} graphs over 6 sizes"
