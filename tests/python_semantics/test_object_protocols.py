"""Object protocols that used to make the frame run as Python (issue 15):
``sorted()``/``min``/``max``/``list.sort`` of user objects with ``__lt__``
(eager's comparisons, in eager's order, side effects included),
``object.__setattr__``/``__delattr__`` in a custom ``__setattr__``, user
exception classes with their own ``__init__`` or keyword arguments, and
``copy.deepcopy`` of plain objects.  Compiled vs eager: results, exceptions
and the inputs' state afterwards.
"""
import copy

import pytest
import torch

from helpers import dynamo_graph_count
from python_semantics.support import assert_same_objects

X = torch.arange(4.0)


def _x():
    return X.clone()


class Ranked:
    def __init__(self, rank, log):
        self.rank, self.log = rank, log

    def __lt__(self, other):
        self.log.append((self.rank, other.rank))
        return self.rank < other.rank


class Loose:
    def __lt__(self, other):
        return NotImplemented


def sorted_logs_comparisons(x, log):
    items = [Ranked(r, log) for r in (3, 1, 2, 5, 4)]
    out = sorted(items)
    back = sorted(items, reverse=True)
    return [o.rank for o in out], [o.rank for o in back], x + len(log)


def sort_in_place_with_key(x, log):
    a, b, c = (Ranked(r, log) for r in (2, 2, 1))
    items = [a, b, c]
    items.sort(key=lambda o: o)   # stable: equal ranks keep their order
    return [items[0] is c, items[1] is a, items[2] is b], [o.rank for o in items], x * 2


def min_max_of_objects(x, log):
    items = [Ranked(r, log) for r in (4, 1, 1, 7)]
    return min(items).rank, max(items).rank, x - 1


def sorted_of_passed_in(objs, x):
    return [o.rank for o in sorted(objs)], x + 1


def sorted_not_comparable(x):
    return sorted([Loose(), Loose()])


class Audited:
    def __init__(self, log):
        object.__setattr__(self, "log", log)

    def __setattr__(self, name, value):
        self.log.append(("set", name))
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self.log.append(("del", name))
        object.__delattr__(self, name)


def setattr_through_object(x, log):
    a = Audited(log)
    a.w = x * 2
    a.k = 3
    del a.k
    return a.w + 1, a


def setattr_on_passed_in(a, x):
    a.v = x
    a.v = a.v + 1
    del a.v
    a.z = 1
    return x * 2


class AppError(Exception):
    pass


class FieldError(AppError):
    def __init__(self, field, *, reason="bad"):
        super().__init__(field, reason)
        self.field = field
        self.reason = reason

    def describe(self):
        return f"{self.field}: {self.reason}"


class PlainInit(ValueError):
    def __init__(self, code):
        Exception.__init__(self, f"code {code}")
        self.code = code


def exception_with_init_caught(x):
    try:
        raise FieldError("lr", reason="negative")
    except AppError as e:
        info = (e.args, e.field, e.describe(), str(e), isinstance(e, FieldError), type(e).__name__)
    return x + 1, info


def exception_with_init_returned(x):
    return x * 2, FieldError("wd"), PlainInit(7)


def exception_with_init_escapes(x):
    raise PlainInit(3)


def builtin_exception_with_keywords(x):
    try:
        ValueError(x=1)
    except TypeError as e:
        return x + 1, str(e)


class Cfg:
    def __init__(self):
        self.d = 4
        self.names = ["a", "b"]
        self.shared = self.names
        self.nested = {"k": (1, 2), "l": [3]}


class Node:
    def __init__(self):
        self.me = self


def deepcopy_passed_in(cfg, x):
    c = copy.deepcopy(cfg)
    c.d = 8
    c.names.append("c")
    return x * c.d + len(cfg.names), c, c.shared is c.names, c.nested is not cfg.nested


def deepcopy_made_in_frame(x):
    cfg = Cfg()
    c = copy.deepcopy([cfg, cfg])
    c[0].d = 5
    return c[1].d, c[0] is c[1], x + 1


def deepcopy_cycle(x):
    n = copy.deepcopy(Node())
    return n.me is n, x + 1


CASES = [
    pytest.param(sorted_logs_comparisons, lambda: (_x(), []), 1, id="sorted_logs_comparisons"),
    pytest.param(sort_in_place_with_key, lambda: (_x(), []), 1, id="sort_in_place_with_key"),
    pytest.param(min_max_of_objects, lambda: (_x(), []), 1, id="min_max_of_objects"),
    pytest.param(sorted_of_passed_in, lambda: ([Ranked(2, []), Ranked(1, [])], _x()), 1, id="sorted_of_passed_in"),
    pytest.param(setattr_through_object, lambda: (_x(), []), 1, id="setattr_through_object"),
    pytest.param(setattr_on_passed_in, lambda: (Audited([]), _x()), 1, id="setattr_on_passed_in"),
    pytest.param(exception_with_init_caught, lambda: (_x(),), 1, id="exception_with_init_caught"),
    pytest.param(exception_with_init_returned, lambda: (_x(),), 1, id="exception_with_init_returned"),
    pytest.param(builtin_exception_with_keywords, lambda: (_x(),), 1, id="builtin_exception_with_keywords"),
    pytest.param(deepcopy_passed_in, lambda: (Cfg(), _x()), 1, id="deepcopy_passed_in"),
    pytest.param(deepcopy_cycle, lambda: (_x(),), 1, id="deepcopy_cycle"),
]


@pytest.mark.parametrize("fn,make_args,graphs", CASES)
def test_object_protocols(fn, make_args, graphs):
    assert_same_objects(fn, make_args, graphs=graphs)


def test_deepcopy_of_frame_made_objects_keeps_sharing():
    # (sharing inside the copy is kept: c[0] is c[1])
    assert_same_objects(deepcopy_made_in_frame, lambda: (_x(),), graphs=1)


@pytest.mark.parametrize("fn,make_args", [
    pytest.param(sorted_not_comparable, lambda: (_x(),), id="sorted_not_comparable"),
    pytest.param(exception_with_init_escapes, lambda: (_x(),), id="exception_with_init_escapes"),
])
def test_object_protocols_raise_like_eager(fn, make_args):
    assert_same_objects(fn, make_args, fullgraph=False, raises=True)


@pytest.mark.parametrize("fn,make_args", [(p.values[0], p.values[1]) for p in CASES[:3]])
def test_graph_counts_match_torch_compile(fn, make_args):
    from helpers import CountingBackend, compile_fn
    counter = CountingBackend("eager")
    compile_fn(fn, backend=counter, fullgraph=True)(*make_args())
    assert counter.frame_count == dynamo_graph_count(fn, *make_args())
