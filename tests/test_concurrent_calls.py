"""Concurrent first calls: threads calling one compiled function or module
at once make the entries and dynamic-shape decisions one thread makes.

Before the cache's compile lock, 7 threads with batch sizes 2..8 each traced
on their own and each added a static entry before automatic dynamic shapes
took over (7 entries; with 8 the recompile limit, then Python).
"""
import threading

import pytest
import torch

import armature
from helpers import armature_only
from machine import generous

pytestmark = armature_only

SIZES = range(2, 9)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, k):
        return self.lin(x).relu() * k


def _scaled(x, k):
    return (x.sin() + k).sum(0)


def _calls_at_once(fn, make_call):
    """Call ``fn`` from one thread per size, all released together; returns
    {size: (args, result)} and re-raises a thread's error."""
    barrier = threading.Barrier(len(SIZES))
    out, errors = {}, []

    def worker(size):
        args = make_call(size)
        barrier.wait()
        try:
            out[size] = (args, fn(*args))
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in SIZES]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=generous(300))
    assert not any(th.is_alive() for th in threads), "a thread did not finish"
    if errors:
        raise errors[0]
    return out


def _entries_one_thread(make_compiled, make_call):
    compiled = make_compiled()
    for size in SIZES:
        compiled(*make_call(size))
    return armature.cache_entries(compiled)


def _make_call(size):
    g = torch.Generator().manual_seed(size)
    return torch.randn(size, 4, generator=g), size


@pytest.mark.parametrize("kind", ["module", "function"])
def test_concurrent_first_calls_make_the_entries_of_one_thread(kind):
    eager_module = Scaled()

    def make_compiled():
        armature.reset()
        target = eager_module if kind == "module" else _scaled
        return armature.compile(target, backend="eager")

    eager = eager_module if kind == "module" else _scaled
    sequential = _entries_one_thread(make_compiled, _make_call)
    compiled = make_compiled()
    with armature.config.patch(recompile_limit=3):
        results = _calls_at_once(compiled, _make_call)
    for size, (args, got) in results.items():
        torch.testing.assert_close(got, eager(*args))
    entries = armature.cache_entries(compiled)
    assert len(entries) == len(sequential) == 2
    assert not any(e.is_fallback for e in entries)
    # the later entry serves every size, as one thread's second entry does
    for size in SIZES:
        args = _make_call(size)
        torch.testing.assert_close(compiled(*args), eager(*args))
    assert len(armature.cache_entries(compiled)) == 2


def test_a_compile_that_raises_releases_the_lock():
    """fullgraph=True: the Unsupported of one thread does not leave the lock
    held (the next call raises the same way instead of hanging)."""
    def breaks(x):
        armature.graph_break()
        return x + 1

    compiled = armature.compile(breaks, backend="eager", fullgraph=True)
    for _ in range(2):
        with pytest.raises(armature.Unsupported):
            compiled(torch.ones(2))
    assert compiled._cache.lock.acquire(blocking=False)
    compiled._cache.lock.release()
