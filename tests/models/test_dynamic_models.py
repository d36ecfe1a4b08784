"""Real models over varying sizes (dynamic shapes): GPT-2 over six sequence
lengths and BERT over five batch x length shapes compile at most twice with
the default policy (once with dynamic=True), match eager on every call, and
never compile more often than torch.compile on the same sequence of calls;
one inductor run with dynamic sizes."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

import armature  # noqa: E402
import libsets  # noqa: E402

from zoo import VOCAB, hf_bert, hf_gpt2  # noqa: E402

GPT2_LENGTHS = (5, 9, 17, 12, 24, 31)
BERT_SHAPES = ((2, 8), (3, 12), (2, 6), (4, 5), (3, 16))   # (batch 1 would specialise, as in torch)


def _ids(batch, seq, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, seq), generator=g)


def _bert_inputs(batch, seq):
    ids = _ids(batch, seq)
    mask = torch.ones_like(ids)
    if seq > 2:
        mask[0, -2:] = 0
    return (ids,), {"attention_mask": mask}


def _gpt2_inputs(batch, seq):
    return (_ids(batch, seq),), {}


def _counting(counter):
    def backend(gm, example_inputs):
        counter.append(gm)
        return gm
    return backend


def _run(model, calls, compile_fn):
    compiles: list = []
    compiled = compile_fn(model, _counting(compiles))
    with torch.no_grad():
        for args, kwargs in calls:
            expected = model(*args, **kwargs)
            got = compiled(*args, **kwargs)
            out_e = expected.last_hidden_state if hasattr(expected, "last_hidden_state") else expected.logits
            out_g = got.last_hidden_state if hasattr(got, "last_hidden_state") else got.logits
            torch.testing.assert_close(out_g, out_e, rtol=1e-4, atol=1e-5)
    return len(compiles)


def _armature(dynamic=None):
    return lambda model, backend: armature.compile(model, backend=backend, dynamic=dynamic)


def _torch_compile(model, backend):
    import torch._dynamo
    torch._dynamo.reset()
    return torch.compile(model, backend=backend)


CASES = {
    "gpt2": (hf_gpt2, [_gpt2_inputs(2, s) for s in GPT2_LENGTHS]),
    "bert": (hf_bert, [_bert_inputs(b, s) for b, s in BERT_SHAPES]),
}


NAMES = sorted(CASES)


@pytest.mark.parametrize("name", NAMES)
def test_varying_sizes_compile_at_most_twice(name):
    build, calls = CASES[name]
    model = build().model
    n = _run(model, calls, _armature())
    assert n <= 2, f"{name}: {n} compiles over {len(calls)} shapes"
    oracle = _run(model, calls, _torch_compile)
    assert n <= oracle, f"{name}: armature {n} compiles, torch.compile {oracle}"


@pytest.mark.parametrize("name", NAMES)
def test_dynamic_true_compiles_once(name):
    build, calls = CASES[name]
    n = _run(build().model, calls, _armature(dynamic=True))
    assert n == 1


def test_inductor_with_dynamic_sizes():
    model = hf_bert().model
    calls = [_bert_inputs(b, s) for b, s in ((2, 8), (3, 6), (2, 11))]
    compiled = armature.compile(model, backend="inductor", dynamic=True)
    with torch.no_grad():
        for args, kwargs in calls:
            torch.testing.assert_close(compiled(*args, **kwargs).last_hidden_state,
                                       model(*args, **kwargs).last_hidden_state, rtol=1e-4, atol=1e-4)
    assert len(armature.cache_entries(compiled)) == 1
