"""The per-block recipe on 2 ranks (scenarios_per_block.py): every block
compiled on its own under FSDP2 (torchtitan's recipe), FSDP1
(use_orig_params=True) and DDP: the losses and parameters of eager training
on every rank, and no more graphs than torch.compile makes (the blocks
share one compiled code, as torch.compile's do)."""
import pytest

NAMES = ["per_block_fsdp2", "per_block_fsdp2_aot_eager", "per_block_fsdp1", "per_block_ddp",
         "per_block_ddp_aot_eager"]


@pytest.mark.parametrize("name", NAMES)
def test_per_block_recipe(run, name):
    results = run.scenario(name)
    for r in results:
        assert r["losses"] == r["eager_losses"], r
        assert r["param_diff"] == 0.0, r
        assert r["graphs"] <= r["torch_graphs"], r
        assert r["graphs"] <= 2, r    # one for the first block (its input needs no grad), one for the rest
