"""FSDP2 (fully_shard on each block and the root; the per-block recipe:
compile each block, then fully_shard) and FSDP1 (use_orig_params=True) on
2 ranks: FSDP's hooks and collectives run eagerly, the blocks' math is
compiled; losses and parameters after 3 steps equal eager's."""
import pytest


NAMES = ["fsdp2_whole", "fsdp2_per_block", "fsdp2_per_block_and_root", "fsdp1", "fsdp2_skip_guards"]



def _same_as_eager(results):
    for r in results:
        assert r["losses"] == r["eager_losses"], r
        assert r["param_diff"] == 0.0, r


def test_fsdp2_whole_model(run):
    """One graph for the blocks (their parameters are graph inputs, so both
    blocks share it), as torch.compile."""
    results = run.scenario("fsdp2_whole")
    _same_as_eager(results)
    for r in results:
        assert r["graphs"] == r["torch_graphs"] == 1, r


def test_fsdp2_blocks_compiled_before_fully_shard(run):
    """fully_shard on an armature-compiled block (it used to raise KeyError
    '_orig_mod': the class change went to the wrapped block)."""
    results = run.scenario("fsdp2_per_block")
    _same_as_eager(results)
    for r in results:
        assert r["graphs"] == 1, r     # the blocks share one compiled code (torch: one shared)


def test_fsdp2_compiled_blocks_under_a_compiled_root(run):
    results = run.scenario("fsdp2_per_block_and_root")
    _same_as_eager(results)
    for r in results:
        assert r["graphs"] == 1, r     # the compiled blocks share one; the root adds none


def test_fsdp1_use_orig_params(run):
    results = run.scenario("fsdp1")
    _same_as_eager(results)
    for r in results:
        assert 1 <= r["graphs"] <= 2 and r["torch_graphs"] >= 1, r


def test_skip_fsdp_guards(run):
    """The parameters' metadata checks go (one per parameter of a block), the
    results stay."""
    for r in run.scenario("fsdp2_skip_guards"):
        assert r["losses_True"] == r["losses_False"], r
        assert r["graphs_True"] == r["graphs_False"] == 1, r
        assert r["guards_True"] < r["guards_False"], r
