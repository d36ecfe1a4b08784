"""Collectives in compiled functions on 2 ranks: functional collectives and
the in-place c10d calls (rewritten) are graph nodes under fullgraph=True,
async_op=True is a graph break (an error under fullgraph), rank queries are
guarded constants, and ranks that break their graphs differently still pair
their collectives up; results equal eager's, on fresh and cached calls."""

NAMES = ["coll_functional", "coll_inplace", "coll_async_op", "coll_rank_branch", "coll_uneven_breaks"]

_FUNCTIONAL = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast"]


def _kinds(names):
    return [n.split(".")[1] for n in names if "wait_tensor" not in n]


def test_functional_collectives_are_graph_nodes(run):
    for r in run.scenario("coll_functional"):
        assert r["same"], r
        assert r["graphs"] == 1 and _kinds(r["collectives"]) == _FUNCTIONAL, r
        if "torch_graphs" in r:   # (not asked before torch 2.13: scenarios_collectives.coll_functional)
            assert r["torch_graphs"] == 1 and _kinds(r["torch_collectives"]) == _FUNCTIONAL, r


def test_inplace_c10d_calls_rewritten(run):
    """torch.compile breaks at dist.broadcast (2 graphs); armature rewrites
    all four calls into one graph."""
    for r in run.scenario("coll_inplace"):
        assert r["same"], r
        assert r["graphs"] == 1 and r["torch_graphs"] == 2, r
        assert _kinds(r["collectives"]) == _FUNCTIONAL, r
        assert _kinds(r["torch_collectives"]) == _FUNCTIONAL[:3], r


def test_async_op_is_a_graph_break(run):
    for r in run.scenario("coll_async_op"):
        assert r["same"], r
        # (the resume function after the break starts with work.wait(), a
        # method of a pybind class: on 3.11/torch 2.13 armature runs that
        # resume function as Python (1 graph); on 3.12/torch 2.11 and
        # 3.13/torch 2.15 it compiles the `y + 1` after it, as torch.compile
        # does (2 graphs))
        assert 1 <= r["graphs"] <= r["torch_graphs"] == 2 and r["collectives"] == [], r
        assert "async_op=True" in r["fullgraph_error"], r


def test_rank_queries_are_guarded_constants(run):
    for r in run.scenario("coll_rank_branch"):
        assert r["same"] and r["graphs"] == r["torch_graphs"] == 1, r


def test_ranks_breaking_differently_do_not_hang(run):
    r0, r1 = run.scenario("coll_uneven_breaks")
    assert r0["same"] and r1["same"]
    assert r0["graphs"] == 2 and r1["graphs"] == 1, (r0, r1)   # rank 0: one more break
