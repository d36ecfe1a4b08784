"""Queries of process state that library code asks inside forward
(``logger.debug(...)`` -> ``isEnabledFor``, ``torch.distributed.is_initialized()``):
answered while tracing, guarded by asking again.  No graph break for a
disabled log call; enabling the logger recompiles and the record is
emitted exactly as eager emits it."""
import logging

import torch

import armature
from helpers import t

from .util import explain_fresh

LOG = logging.getLogger("armature.tests.state_queries")


def logs_debug(x):
    LOG.debug("shape %s", tuple(x.shape))
    return x + 1


def test_disabled_debug_log_is_not_a_break():
    LOG.setLevel(logging.WARNING)
    e = explain_fresh(logs_debug, t(3))
    assert e.graph_count == 1 and e.graph_break_count == 0, str(e)
    assert any("isEnabledFor(DEBUG) is False" in g.describe() for gs in e.guards for g in gs), str(e)


def test_enabling_the_logger_recompiles_and_logs(caplog):
    LOG.setLevel(logging.WARNING)
    cf = armature.compile(logs_debug, backend="eager")
    x = t(3)
    torch.testing.assert_close(cf(x), x + 1)
    n = len(armature.cache_entries(cf))
    with caplog.at_level(logging.DEBUG, logger=LOG.name):
        torch.testing.assert_close(cf(x), x + 1)
        assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == ["shape (3,)"]
    assert len(armature.cache_entries(cf)) == n + 1
    LOG.setLevel(logging.WARNING)
    caplog.clear()
    torch.testing.assert_close(cf(x), x + 1)   # back to the first entry, nothing logged
    assert not [r for r in caplog.records if r.name == LOG.name]


def distributed_aware(x):
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        x = x * torch.distributed.get_world_size()
    return x + 1


def test_distributed_queries_fold_with_a_guard():
    e = explain_fresh(distributed_aware, t(3))
    assert e.graph_count == 1 and e.graph_break_count == 0, str(e)
    labels = [g.describe() for gs in e.guards for g in gs]
    assert any("torch.distributed.is_initialized() == False" in g for g in labels), labels
    x = t(3)
    torch.testing.assert_close(armature.compile(distributed_aware, backend="eager")(x), distributed_aware(x))


def class_truth(x, typ):
    return x + 1, bool(typ and typ.__name__), not typ


def test_truth_of_a_class_is_traced():
    e = explain_fresh(class_truth, t(3), KeyError)
    assert e.graph_count == 1 and not e.fallbacks and e.graph_break_count == 0, str(e)
    x = t(3)
    got = armature.compile(class_truth, backend="eager", fullgraph=True)(x, KeyError)
    torch.testing.assert_close(got[0], x + 1)
    assert got[1:] == (True, False)
