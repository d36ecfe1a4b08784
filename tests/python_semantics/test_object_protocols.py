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

import armature

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


class Accumulator:
    """In-place operators of its own: ``a += x`` calls ``__iadd__(x)``."""

    def __init__(self):
        self.total = 0
        self.seen = []

    def __iadd__(self, other):
        self.total = self.total + other
        self.seen.append("iadd")
        return self

    def __imul__(self, other):
        self.seen.append("imul")
        return [self.total * other]      # (an in-place operator may return another object)

    def __add__(self, other):
        self.seen.append("add")
        return self.total + other


def inplace_dunders_with_operand(x, acc):
    acc += x
    acc += x * 2
    b = acc + 1
    acc *= 3
    return acc, b


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
    # (torch.compile: 2 graphs, it breaks at the in-place operator)
    pytest.param(inplace_dunders_with_operand, lambda: (_x(), Accumulator()), 1, id="inplace_dunders_with_operand"),
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


# --- sets of objects hashed by identity -------------------------------------
# Their order follows addresses, so eager and compiled runs are compared on
# the *same* set (fresh sets on every call: the order changes between calls).


class Named:
    def __init__(self, name):
        self.name = name


def iterate_set_of_tensors(s, x):
    return [t * x for t in s], len(s)


def iterate_set_of_objects(s, x):
    return [o.name * x for o in s]


def iterate_set_made_in_frame(a, b, c):
    s = {a, b, c}
    return [t + 1 for t in s]


def iterate_set_after_add(s, x):
    s.add(x)
    return [t + 1 for t in s]


def _run_on_same_inputs(fn, make_args, fullgraph):
    from helpers import CountingBackend, assert_equal, compile_fn
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter, fullgraph=fullgraph)
    for call in range(3):
        args = make_args()
        expected = fn(*[set(a) if isinstance(a, set) else a for a in args])
        got = compiled(*[set(a) if isinstance(a, set) else a for a in args])
        assert_equal(expected, got, f"call #{call}")
    return counter


def _tensors(n=4):
    return {torch.randn(3) for _ in range(n)}


def test_iterate_passed_in_set_of_tensors_in_its_order():
    # (set(a) copies keep the order of a here: same table size, copied slot by slot)
    counter = _run_on_same_inputs(iterate_set_of_tensors, lambda: (_tensors(), torch.ones(3)), fullgraph=True)
    assert counter.frame_count == 1


def test_iterate_passed_in_set_of_objects_in_its_order():
    # (objects holding tensors: one graph for every set of six; constants
    # read from them would be guarded per position, i.e. per order)
    counter = _run_on_same_inputs(iterate_set_of_objects,
                                  lambda: ({Named(torch.randn(2)) for _ in range(6)}, torch.ones(2)), fullgraph=True)
    assert counter.frame_count == 1


@pytest.mark.parametrize("fn,make_args", [
    pytest.param(iterate_set_made_in_frame, lambda: (torch.ones(2), torch.zeros(2), torch.full((2,), 2.0)),
                 id="made_in_frame"),
    pytest.param(iterate_set_after_add, lambda: (_tensors(), torch.ones(3)), id="after_add"),
])
def test_set_in_an_unknown_order_is_iterated_natively(fn, make_args):
    # the order is only known at run time: never guessed (a break or Python)
    _run_on_same_inputs(fn, make_args, fullgraph=False)
    with pytest.raises(armature.Unsupported, match="hashed by identity"):
        armature.compile(fn, fullgraph=True)(*make_args())


def set_ops_then_returned(a, b, c, d):
    s = {a, b}
    s.add(c)
    s.discard(a)
    t = s | {d, a}
    t -= {b}
    u = frozenset([d, c, b]) & t
    return s, t, u


def set_passed_in_mutated(s, x, y):
    s.add(x)
    s.discard(y)
    s |= {y}
    return len(s)


def _assert_same_order(expected, got):
    # the same members, in the same iteration order (same objects: identity)
    assert type(got) is type(expected)
    assert [id(v) for v in got] == [id(v) for v in expected], "set order differs from eager"


def test_sets_of_objects_made_in_the_frame_keep_eagers_order():
    from helpers import CountingBackend, compile_fn
    counter = CountingBackend("eager")
    compiled = compile_fn(set_ops_then_returned, backend=counter, fullgraph=True)
    for _ in range(5):
        objs = [torch.randn(1) for _ in range(4)]
        for e, g in zip(set_ops_then_returned(*objs), compiled(*objs)):
            _assert_same_order(e, g)


def test_set_passed_in_and_mutated_keeps_eagers_order():
    from helpers import compile_fn
    compiled = compile_fn(set_passed_in_mutated, fullgraph=True)
    for _ in range(5):
        base = [Named(i) for i in range(9)]
        x, y = Named(10), base[3]
        s1, s2 = set(base), set(base)
        assert set_passed_in_mutated(s1, x, y) == compiled(s2, x, y)
        _assert_same_order(s1, s2)


def sort_in_place_raises_caught(x, log):
    items = [Ranked(r, log) for r in (3, 1, 4, None, 2)]
    try:
        items.sort()
        err = None
    except TypeError as e:
        err = str(e)
    # CPython leaves the list partly sorted: read it back
    return [o.rank for o in items], err, x + 1


def test_sort_in_place_that_raises_leaves_eagers_list():
    assert_same_objects(sort_in_place_raises_caught, lambda: (_x(), []), fullgraph=False)


class Plain:
    """No __eq__ of its own: == is identity."""


def equality_of_plain_objects(x, a, b):
    return (x + (1 if a == b else 0), a != b, a in [b], [b, a].index(a), [a, b].count(b))


def test_equality_of_passed_in_objects_is_guarded_by_identity():
    """``a == b`` of objects without __eq__ is ``a is b``: a call passing one
    object twice after a call passing two must not reuse the first answer."""
    armature.reset()
    compiled = armature.compile(equality_of_plain_objects, backend="eager")
    x = torch.zeros(2)
    o1, o2 = Plain(), Plain()
    for a, b in ((o1, o2), (o1, o1), (o2, o1), (o2, o2)):
        expected = equality_of_plain_objects(x, a, b)
        got = compiled(x, a, b)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1:] == expected[1:], (got[1:], expected[1:])
