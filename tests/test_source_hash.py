"""Sources with a parent memoize their hash (guards/sources.py,
``_memoize_hash``): the memo must agree with equality (equal sources hash
equally however they were built, whichever was hashed first), and it must
never travel in a pickle or a copy to where string hashes differ."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

from armature.guards.sources import (AttrSource, DictEntrySource, ItemSource, LocalSource, ModuleMemberSource,
                                     global_source)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _chain():
    self_ = LocalSource("self")
    block = ModuleMemberSource(ModuleMemberSource(self_, "layers", "_modules"), "0", "_modules")
    return AttrSource(ModuleMemberSource(block, "weight", "_parameters"), "data")


def test_equal_sources_hash_equal_whoever_was_hashed_first():
    a, b = _chain(), _chain()
    hash(a.parent.parent)            # a memo on an inner link of one chain only
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    # fields decide, not the memo: a different table is a different source
    other = AttrSource(ModuleMemberSource(a.parent.parent, "weight", "_buffers"), "data")
    assert other != a
    assert {a: 1}.get(other) is None


def test_item_and_dict_entry_sources():
    base = LocalSource("xs")
    assert hash(ItemSource(base, 0)) == hash(ItemSource(base, 0))
    assert ItemSource(base, 0) != ItemSource(base, 1)
    assert hash(DictEntrySource(base, 2, "values")) == hash(DictEntrySource(base, 2, "values"))
    assert DictEntrySource(base, 2, "values") != DictEntrySource(base, 2, "keys")
    g = global_source(globals(), "ROOT", False)
    assert hash(g) == hash(global_source(globals(), "ROOT", False))


def test_memoized_hash_stays_out_of_pickles_and_copies():
    a = _chain()
    h = hash(a)
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert b == a and hash(b) == h
    state = a.__reduce_ex__(2)[2]
    assert "_hash" not in (state or {})
    assert repr(a) == repr(_chain())   # (the memo is no field)


def test_a_pickled_source_hashes_right_in_another_process():
    """String hashes differ between processes: a memo carried in the pickle
    would make the loaded source miss every dict it is looked up in."""
    a = _chain()
    hash(a)
    payload = pickle.dumps(a)
    code = ("import pickle, sys\n"
            "from armature.guards.sources import AttrSource, LocalSource, ModuleMemberSource\n"
            "a = pickle.loads(sys.stdin.buffer.read())\n"
            "self_ = LocalSource('self')\n"
            "block = ModuleMemberSource(ModuleMemberSource(self_, 'layers', '_modules'), '0', '_modules')\n"
            "b = AttrSource(ModuleMemberSource(block, 'weight', '_parameters'), 'data')\n"
            "assert a == b and hash(a) == hash(b), (hash(a), hash(b))\n"
            "assert {b: 1}[a] == 1\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
