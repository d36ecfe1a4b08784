"""transformers' generation helpers that are subclasses of ``list``
(``LogitsProcessorList``, ``StoppingCriteriaList``), passed into a
compiled function as ``generate()`` passes them: one graph, as
torch.compile (the frame ran as Python before), eager's results."""
from __future__ import annotations

import pytest
import torch

import armature

lp = pytest.importorskip("transformers.generation.logits_process")
sc = pytest.importorskip("transformers.generation.stopping_criteria")


def _lists():
    procs = lp.LogitsProcessorList([
        lp.RepetitionPenaltyLogitsProcessor(1.2), lp.MinLengthLogitsProcessor(3, eos_token_id=2),
        lp.TemperatureLogitsWarper(0.7), lp.TopKLogitsWarper(5), lp.TopPLogitsWarper(0.9)])
    crit = sc.StoppingCriteriaList([sc.MaxLengthCriteria(max_length=8), sc.EosTokenCriteria(eos_token_id=2)])
    return procs, crit


def step(ids, scores, procs, crit):
    s = procs(ids, scores)
    return s, crit(ids, s)


def step_adding_a_processor(ids, scores, procs, crit, temperature):
    procs.append(lp.TemperatureLogitsWarper(temperature))
    s = procs(ids, scores)
    return s, crit(ids, s), len(procs)


class _Counter:
    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


@pytest.mark.parametrize("fn,extra", [(step, ()), (step_adding_a_processor, (1.5,))],
                         ids=["step", "step_adding_a_processor"])
def test_generation_lists_compile_whole(fn, extra):
    torch.manual_seed(0)
    ids, scores = torch.randint(0, 20, (2, 6)), torch.randn(2, 20)
    e_lists, c_lists, t_lists = _lists(), _lists(), _lists()
    expected = fn(ids, scores, *e_lists, *extra)
    ours = _Counter()
    armature.reset()
    got = armature.compile(fn, backend=ours)(ids, scores, *c_lists, *extra)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e) if isinstance(e, torch.Tensor) else (g == e or pytest.fail(f"{g} != {e}"))
    assert [type(p) for p in c_lists[0]] == [type(p) for p in e_lists[0]]
    theirs = _Counter()
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=theirs)(ids, scores, *t_lists, *extra)
    finally:
        torch._dynamo.reset()
    assert ours.graphs == 1 <= theirs.graphs
