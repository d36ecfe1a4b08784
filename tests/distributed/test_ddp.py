"""DistributedDataParallel compiled three ways (armature.compile(DDP(m)),
DDP(armature.compile(m)), a DDP call inside a compiled function), trained
next to eager DDP on 2 ranks: the same parameters after N steps on every
rank, and the graphs split at DDP's bucket boundaries as torch.compile's
DDPOptimizer splits them."""
import pytest


NAMES = ["ddp_outer", "ddp_inner", "ddp_lambda", "ddp_aot_eager", "ddp_no_split", "ddp_sequential",
         "ddp_no_sync", "ddp_find_unused", "ddp_static_graph", "ddp_buffers", "gpt_ddp"]



def _same_as_eager(results):
    for r in results:
        assert r["param_diff"] == 0.0, r
        if "loss_diff" in r:
            assert r["loss_diff"] == 0.0, r


@pytest.mark.parametrize("name", ["ddp_outer", "ddp_inner"])
def test_split_like_torch_compile(run, name):
    results = run.scenario(name)
    _same_as_eager(results)
    for r in results:
        assert r["graphs"] == r["torch_graphs"] > 1, r   # one graph per bucket


def test_ddp_call_inside_compiled_function(run):
    results = run.scenario("ddp_lambda")
    _same_as_eager(results)
    assert all(r["graphs"] == 3 for r in results), results


def test_split_pieces_through_aot_autograd(run):
    results = run.scenario("ddp_aot_eager")
    _same_as_eager(results)
    assert all(r["graphs"] == 3 for r in results), results


def test_optimize_ddp_off_compiles_one_graph(run):
    results = run.scenario("ddp_no_split")
    _same_as_eager(results)
    assert all(r["graphs"] == 1 for r in results), results


def test_sequential_is_compiled(run):
    """torch.compile(DDP(nn.Sequential(...))) compiles nothing (every frame
    is torch.nn's); armature compiles the Sequential's forward."""
    results = run.scenario("ddp_sequential")
    _same_as_eager(results)
    for r in results:
        assert r["torch_graphs"] == 0 and r["graphs"] >= 2, r


def test_no_sync_accumulation(run):
    for r in run.scenario("ddp_no_sync"):
        assert r["param_diff"] == 0.0 and r["local_grad_diff"] == 0.0 and r["graphs"] == 3, r


@pytest.mark.parametrize("name", ["ddp_find_unused", "ddp_static_graph"])
def test_reducer_modes(run, name):
    results = run.scenario(name)
    _same_as_eager(results)
    assert all(r["graphs"] >= 1 for r in results)


def test_buffers_broadcast(run):
    for r in run.scenario("ddp_buffers"):
        assert r["param_diff"] == 0.0 and r["buffer_diff"] == 0.0 and r["graphs"] == 1, r


def test_gpt_trains_like_eager(run):
    for r in run.scenario("gpt_ddp"):
        assert r["losses"] == r["eager_losses"], r
        assert r["param_diff"] == 0.0 and r["graphs"] == r["torch_graphs"] >= 2, r
