"""Asking a dynamic size its type (``isinstance``, ``type``) answers from
the type alone: it does not specialise the size (transformers asks
``isinstance(past_seen_tokens, torch.Tensor)`` of the KV-cache length on
every decode step; specialising it recompiled every step)."""
import torch

from .util import compiles, run_over


def type_queries(x):
    n = x.shape[0]
    offset = n.clone() if isinstance(n, torch.Tensor) else n   # transformers' pattern
    flags = (isinstance(n, int), isinstance(n, (float, torch.Tensor)), type(n) is int, type(n).__name__)
    return x.sum(0) * offset, flags


def test_isinstance_and_type_keep_a_size_dynamic():
    cf = run_over(type_queries, [(torch.randn(s, 3),) for s in range(4, 10)], dynamic=True)
    assert compiles(cf) == 1


def test_isinstance_and_type_automatic_dynamic():
    cf = run_over(type_queries, [(torch.randn(s, 3),) for s in range(4, 10)])
    assert compiles(cf) == 2
