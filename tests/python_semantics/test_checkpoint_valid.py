"""``torch.autograd._is_checkpoint_valid()`` (what reentrant checkpointing
asks): answered while tracing and guarded (values/tensors/state_queries.py), so it
stays in the graph as torch.compile keeps it, and a call where the answer
differs (inside a backward run by ``torch.autograd.grad``) recompiles."""
import torch

import armature
from helpers import assert_same, compiled_stats, compiled_with_oracle, reset, t


def uses_it(x):
    y = x.sin()
    return (y + torch.autograd._is_checkpoint_valid()).cos()


def test_one_graph_as_torch_compile():
    reset()
    assert_same(uses_it, t(3), fullgraph=True)
    theirs = compiled_with_oracle(uses_it, t(3)).graphs
    reset()
    assert compiled_stats(uses_it, t(3), fullgraph=False).frame_count == theirs == 1


def test_the_answer_is_guarded():
    """Called from a hook while ``torch.autograd.grad`` runs the backward,
    the query answers False: the compiled function must too."""
    reset()
    compiled = armature.compile(uses_it, backend="eager")
    seen = []

    def hook(grad):
        seen.append((uses_it(grad), compiled(grad)))
        return grad

    x = t(3, requires_grad=True)
    assert torch.equal(compiled(x.detach()), uses_it(x.detach()))   # True outside a backward
    w = x * 2
    w.register_hook(hook)
    torch.autograd.grad(w.sum(), x)
    (eager, got), = seen
    assert torch.equal(eager, got)
    assert len(armature.cache_entries(compiled)) == 2
