"""``class`` statements whose class (or an instance of it) is live at a graph
break, and class statements with a metaclass of the user's, compiled vs
eager over the same calls (results, side effects), with graph counts
compared with torch.compile and the cache entries of every resume function
counted: eager makes a new class on every call, so the resume function
receives a new class on every call; it is guarded by the class statement
that made it, not by identity, and one compiled resume function serves
every call (values/objects/per_call_classes.py).
"""
import abc
import dataclasses

import pytest
import torch

import armature
from armature.runtime.wrappers import _RESUME
from helpers import CountingBackend, assert_equal
from python_semantics.test_class_statement import same

CALLS = 6


def _resume_entries(fn) -> int:
    code = fn.__code__
    return sum(len(armature.cache_entries(r)) for k, r in _RESUME.items() if k[0] is code)


def _resume_count(fn) -> int:
    return sum(1 for k in _RESUME if k[0] is fn.__code__)


def _oracle_graphs(fn, calls) -> int:
    """torch.compile's graph count over the same calls."""
    import torch._dynamo
    torch._dynamo.reset()
    counter = CountingBackend("eager")
    compiled = torch.compile(fn, backend=counter)
    try:
        for args in calls:
            compiled(*args)
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def run(fn, make_args, calls=CALLS, history=None):
    """Eager and compiled over ``calls`` calls on independent arguments:
    same results and mutated arguments.  The counter, the results, and the
    number of entries of the function and of its resume functions
    (``history``: a list that gets that number after every call)."""
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    results = []
    for i in range(calls):
        e_args, c_args = make_args(i), make_args(i)
        expected, got = fn(*e_args), compiled(*c_args)
        same(expected, got, f"out (call #{i + 1})")
        same(list(e_args), list(c_args), f"inputs after call #{i + 1}")
        results.append(got)
        if history is not None:
            history.append(len(armature.cache_entries(compiled)) + _resume_entries(fn))
    entries = len(armature.cache_entries(compiled)) + _resume_entries(fn)
    return counter, results, entries


X = torch.arange(4.0)


# --- a class made by a traced class statement, live at a break --------------------------

def class_and_instance_live(x):
    class Local:
        k = 3

        def f(self, v):
            return v * self.k

    o = Local()
    armature.graph_break()
    Local.k = 5
    return o.f(x), type(o).__name__, type(o) is Local, isinstance(o, Local)


def body_reads_frame_value(x, n):
    class Local:
        scale = n

        def f(self, v):
            return v * self.scale

    armature.graph_break()
    return Local().f(x), Local.scale


def method_closes_over_frame(x, w):
    bias = x.sum()

    class Local:
        def f(self, v):
            return v * w + bias

    o = Local()
    armature.graph_break()
    return o.f(x + 1)


class Root:
    def f(self):
        return 1


def inheritance_and_super(x, log):
    class A(Root):
        def f(self):
            log.append("A.f")
            return super().f() + 10

    class B(A):
        def f(self):
            log.append("B.f")
            return super().f() * 2

    b = B()
    armature.graph_break()
    log.append(isinstance(b, A))
    return x * b.f(), issubclass(B, Root), [c.__name__ for c in type(b).__mro__]


def descriptors(x):
    class Local:
        n = 2

        @staticmethod
        def twice(v):
            return v * 2

        @classmethod
        def make(cls, v):
            o = cls()
            o.v = v
            return o

        @property
        def double(self):
            return self.twice(self.v)

    armature.graph_break()
    o = Local.make(x)
    return o.double + Local.n, Local.twice(3)


def property_setter_closes_over_frame(x, k):
    class Local:
        def __init__(self):
            self._v = 0

        @property
        def v(self):
            return self._v

        @v.setter
        def v(self, value):
            self._v = value * k

        @v.deleter
        def v(self):
            self._v = -k

    o = Local()
    armature.graph_break()
    o.v = x.sum()
    first = o.v
    del o.v
    return first, o.v


def test_property_functions_are_read_per_call():
    # the setter and deleter close over k, new every call: read through the
    # property (a guard failure once, then dynamic), never the first call's
    _, results, _ = run(property_setter_closes_over_frame, lambda i: (X.clone(), i + 1))
    assert [int(r[1]) for r in results] == [-1, -2, -3, -4, -5, -6]


def class_escapes_after_break(x):
    class Local:
        def __init__(self, v):
            self.v = v

    o = Local(x + 1)
    armature.graph_break()
    o.v = o.v * 2
    return Local, o, Local(x)


def instances_in_a_list(x):
    class Item:
        def __init__(self, i):
            self.i = i

        def apply(self, v):
            return v + self.i

    items = [Item(i) for i in range(3)]
    armature.graph_break()
    out = x
    for it in items:
        out = it.apply(out)
    return out, [type(it) is Item for it in items]


def exception_class_across_break(x):
    class LocalError(ValueError):
        def __init__(self, code):
            super().__init__(f"code {code}")
            self.code = code

    armature.graph_break()
    try:
        raise LocalError(int(x.shape[0]))
    except LocalError as e:
        return x + e.code, str(e)


def dataclass_across_break(x):
    @dataclasses.dataclass
    class P:
        a: int
        b: int = 2

    p = P(1)
    armature.graph_break()
    return x * (p.a + p.b), repr(p), P(5) == P(5, 2)


def abstract_base_across_break(x):
    class Shape(abc.ABC):
        @abc.abstractmethod
        def area(self):
            ...

        def twice(self):
            return 2 * self.area()

    class Square(Shape):
        def area(self):
            return 4

    armature.graph_break()
    return x * Square().twice()


def break_in_a_loop_with_class(x):
    class Acc:
        total = 0

    for i in range(3):
        Acc.total += i
        armature.graph_break()
        x = x + Acc.total
    return x, Acc.total


def exception_instance_across_break(x):
    class LocalError(ValueError):
        pass

    err = LocalError("bad")
    armature.graph_break()
    try:
        raise err
    except LocalError as e:
        return x + 1, str(e), type(e) is LocalError


def dict_subclass_across_break(x):
    class D(dict):
        def total(self):
            return sum(self.values())

    d = D(a=1, b=2)
    armature.graph_break()
    return x * d.total(), type(d).__name__


def class_as_dict_key(x):
    class K:
        pass

    table = {K: 1, "other": 2}
    armature.graph_break()
    return x + table[K], K in table


def print_with_instance(x):
    class Local:
        def __init__(self):
            self.v = 2

    o = Local()
    print("value", o.v)   # a graph break: the object is live across it
    return x * o.v


CASES = [
    pytest.param(class_and_instance_live, lambda i: (X.clone(),), id="class_and_instance_live"),
    pytest.param(body_reads_frame_value, lambda i: (X.clone(), 3), id="body_reads_frame_value"),
    pytest.param(method_closes_over_frame, lambda i: (X.clone() + i, 2), id="method_closes_over_frame"),
    pytest.param(inheritance_and_super, lambda i: (X.clone(), []), id="inheritance_and_super"),
    pytest.param(descriptors, lambda i: (X.clone(),), id="descriptors"),
    pytest.param(class_escapes_after_break, lambda i: (X.clone(),), id="class_escapes_after_break"),
    pytest.param(instances_in_a_list, lambda i: (X.clone(),), id="instances_in_a_list"),
    pytest.param(exception_class_across_break, lambda i: (X.clone(),), id="exception_class_across_break"),
    pytest.param(dataclass_across_break, lambda i: (X.clone(),), id="dataclass_across_break"),
    pytest.param(abstract_base_across_break, lambda i: (X.clone(),), id="abstract_base_across_break"),
    pytest.param(print_with_instance, lambda i: (X.clone(),), id="print_with_instance"),
    pytest.param(exception_instance_across_break, lambda i: (X.clone(),), id="exception_instance_across_break"),
    pytest.param(dict_subclass_across_break, lambda i: (X.clone(),), id="dict_subclass_across_break"),
    pytest.param(class_as_dict_key, lambda i: (X.clone(),), id="class_as_dict_key"),
]


@pytest.mark.parametrize("fn,make_args", CASES)
def test_class_live_at_a_break_compiles_once(fn, make_args, capsys):
    history = []
    counter, _, entries = run(fn, make_args, history=history)
    assert _resume_count(fn) >= 1, "the frame was not split"
    # at most one entry for the function and one per resume function, all
    # made by the first call: no recompile per call
    assert history[0] == history[-1] and entries <= 1 + _resume_count(fn), \
        f"entries after each call: {history}, {_resume_count(fn)} resume functions"
    graphs = counter.frame_count
    oracle = _oracle_graphs(fn, [make_args(i) for i in range(CALLS)])
    # torch.compile recompiles its resume function on every call (an
    # identity guard on the class), or runs the frame as Python (0 graphs:
    # which ones differs between torch versions)
    assert oracle == 0 or graphs < oracle, f"armature captured {graphs} graphs, torch.compile {oracle}"


def test_graph_counts_against_torch_compile():
    # torch.compile guards the class handed to its resume function by
    # identity: a recompile (a graph) per call; armature compiles it once
    calls = [(X.clone(),) for _ in range(CALLS)]
    counter, _, _ = run(class_and_instance_live, lambda i: calls[i])
    assert (counter.frame_count, _oracle_graphs(class_and_instance_live, calls)) == (1, CALLS)


def test_frame_value_read_by_the_body_is_guarded():
    # the class attribute comes from an argument: a new value is a guard
    # failure (a recompile), never the old value; after one it is dynamic
    # (and the class statement, whose attribute is then a symbol, a break)
    history = []
    _, results, _ = run(body_reads_frame_value, lambda i: (X.clone(), 3 if i < 2 else i), history=history)
    assert [r[1] for r in results] == [3, 3, 2, 3, 4, 5]
    assert history[0] == history[1] and history[-3] == history[-2] == history[-1], history


@armature.config.patch(loop_breaks="split")   # (resume functions inside the loop)
def test_class_attribute_changed_in_a_loop_that_breaks():
    history = []
    run(break_in_a_loop_with_class, lambda i: (X.clone(),), history=history)
    assert _resume_count(break_in_a_loop_with_class) >= 2
    assert history[-4] == history[-1], history   # nothing recompiles per call


def test_closure_of_a_method_is_read_per_call():
    # the cell the method closes over holds a new int every call: read
    # through the method (a guard failure once, then a dynamic int)
    counter, results, entries = run(method_closes_over_frame, lambda i: (X.clone() + i, i))
    torch.testing.assert_close(results[4], (X + 5) * 4 + (X + 4).sum())
    assert entries == 1 + _resume_count(method_closes_over_frame) + 1


def test_escaping_class_is_new_per_call_after_a_break():
    compiled = armature.compile(class_escapes_after_break, backend="eager")
    (c1, o1, p1), (c2, o2, p2) = compiled(X.clone()), compiled(X.clone())
    assert c1 is not c2 and type(o1) is c1 and type(p2) is c2 and type(o2) is c2
    torch.testing.assert_close(o1.v, (X + 1) * 2)


def older_class_vs_new(x, keep):
    class Local:
        pass

    o = Local()
    keep.append(o)
    armature.graph_break()
    first = keep[0]
    return x + 1, isinstance(first, Local), type(first) is Local, type(o) is Local


def test_classes_of_one_statement_from_other_calls_stay_apart():
    # an instance kept from the first call is of another class than the one
    # this call made (same statement): isinstance is False from call 2 on
    keep_e, keep_c = [], []
    compiled = armature.compile(older_class_vs_new, backend="eager")
    for i in range(CALLS):
        expected = older_class_vs_new(X.clone(), keep_e)
        got = compiled(X.clone(), keep_c)
        assert_equal(expected, got, f"call #{i + 1}")
    assert [type(o).__name__ for o in keep_c] == ["Local"] * CALLS
    assert len({type(o) for o in keep_c}) == CALLS


def fresh_class_seen_first_as_old(x, keep):
    class Local:
        pass

    keep.append(Local)
    armature.graph_break()
    return x + 1, keep[0] is Local, keep[-1] is Local


def test_identity_between_per_call_classes_is_guarded():
    # first call: keep[0] is Local (one object); later calls: it is not
    keep_e, keep_c = [], []
    compiled = armature.compile(fresh_class_seen_first_as_old, backend="eager")
    for i in range(CALLS):
        assert_equal(fresh_class_seen_first_as_old(X.clone(), keep_e), compiled(X.clone(), keep_c), f"call #{i + 1}")


def list_subclass_across_break(x):
    class L(list):
        pass

    items = L([1, 2])
    armature.graph_break()
    items.append(3)
    return x * len(items), items


def test_list_subclass_instance_across_break():
    compiled = armature.compile(list_subclass_across_break, backend="eager")
    outs = [compiled(X.clone()) for _ in range(CALLS)]
    for out, items in outs:
        expected_out, expected = list_subclass_across_break(X.clone())
        assert_equal(expected_out, out)
        assert list(items) == list(expected) and type(items).__qualname__ == type(expected).__qualname__
    assert len({type(items) for _, items in outs}) == CALLS   # a new class per call, as eager
    assert _resume_entries(list_subclass_across_break) <= _resume_count(list_subclass_across_break)


def changes_class_after_break(x, flag):
    class Local:
        k = 1

    o = Local()
    armature.graph_break()
    if flag:
        Local.extra = 7
    return x + getattr(o, "extra", 0) + Local.k


def test_class_dict_changes_are_seen():
    counter, results, _ = run(changes_class_after_break, lambda i: (X.clone(), i % 2 == 1))
    torch.testing.assert_close(results[1], X + 8)
    torch.testing.assert_close(results[2], X + 1)


# --- class statements the trace does not model: a graph break at the statement ----------

class Meta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        cls.initialised = True


def metaclass_with_init(x):
    y = x + 1

    class Local(metaclass=Meta):
        k = 2

    return y * Local.k, type(Local).__name__, Local.initialised


class RegisteringMeta(type):
    made = []

    def __new__(mcs, name, bases, ns):
        cls = super().__new__(mcs, name, bases, ns)
        mcs.made.append(name)
        return cls

    def __call__(cls, *args):
        obj = super().__call__(*args)
        obj.tag = "made"
        return obj


def metaclass_with_new_and_call(x, n):
    y = x + 1

    class Local(metaclass=RegisteringMeta):
        scale = n

        def __init__(self, v):
            self.v = v

        def go(self, t):
            return t * self.scale + self.v

    o = Local(3)
    return o.go(y), o.tag, isinstance(o, Local), type(o) is Local, Local.__name__


class Registered:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.registered_as = cls.__name__.lower()


def init_subclass_base(x):
    y = x * 2

    class Local(Registered):
        def f(self, v):
            return v - 1

    return Local().f(y), Local.registered_as


META_CASES = [
    pytest.param(metaclass_with_init, lambda i: (X.clone(),), id="metaclass_with_init"),
    pytest.param(metaclass_with_new_and_call, lambda i: (X.clone(), 2), id="metaclass_with_new_and_call"),
    pytest.param(init_subclass_base, lambda i: (X.clone(),), id="init_subclass_base"),
]


@pytest.mark.parametrize("fn,make_args", META_CASES)
def test_unmodelled_class_statement_is_a_graph_break(fn, make_args):
    made_before = len(RegisteringMeta.made)
    counter, _, entries = run(fn, make_args)
    if fn is metaclass_with_new_and_call:   # the metaclass ran once per call, eager and compiled alike
        assert len(RegisteringMeta.made) - made_before == 2 * CALLS
    assert _resume_count(fn) >= 1
    assert entries == 1 + _resume_count(fn), f"{entries} entries"
    assert counter.frame_count >= 2   # the code before and after the statement
    oracle = _oracle_graphs(fn, [make_args(i) for i in range(CALLS)])
    assert oracle == 0 or counter.frame_count <= oracle


def test_unmodelled_class_statement_with_fullgraph_raises():
    with pytest.raises(armature.Unsupported, match="metaclass Meta"):
        armature.compile(metaclass_with_init, fullgraph=True)(X.clone())


class Describing(type):
    """A metaclass that only adds methods: classes are made as type makes them."""

    def describe(cls):
        return cls.__name__ + "!"


def metaclass_that_only_adds_methods(x, log):
    class Local(metaclass=Describing):
        k = 2

        def g(self, v):
            return v * self.k

    o = Local()
    log.append(Local.describe())
    return o.g(x), Local, o, isinstance(Local, Describing), type(Local) is Describing


def metaclass_that_only_adds_methods_across_break(x):
    class Local(metaclass=Describing):
        k = 2

    armature.graph_break()
    return x * Local.k, Local.describe(), type(Local) is Describing


def test_metaclass_that_only_adds_methods_is_traced():
    counter, results, _ = run(metaclass_that_only_adds_methods, lambda i: (X.clone(), []))
    assert counter.frame_count == 1
    armature.compile(metaclass_that_only_adds_methods, fullgraph=True)(X.clone(), [])   # one graph
    _, cls, obj, _, _ = results[0]
    assert type(cls) is Describing and type(obj) is cls and results[1][1] is not cls
    counter, _, entries = run(metaclass_that_only_adds_methods_across_break, lambda i: (X.clone(),))
    assert entries == 1 + _resume_count(metaclass_that_only_adds_methods_across_break)


def metaclass_statement_in_callee(x):
    return helper_with_metaclass(x + 1) * 2


def helper_with_metaclass(v):
    class Local(metaclass=Meta):
        k = 3

    return v * Local.k


def test_unmodelled_class_statement_in_a_callee():
    counter, _, _ = run(metaclass_statement_in_callee, lambda i: (X.clone(),))
    assert counter.frame_count >= 2


def test_a_class_made_per_call_passed_to_another_compiled_function():
    # a class returned by one compiled function and passed to another: the
    # receiver guards it by its class statement (one entry for every call)
    maker = armature.compile(class_escapes_after_break, backend="eager")

    def use(cls, v):
        return cls(v).v * 3

    user = armature.compile(use, backend="eager")
    for i in range(CALLS):
        cls, _, _ = maker(X.clone())
        torch.testing.assert_close(user(cls, X + i), (X + i) * 3)
    assert len(armature.cache_entries(user)) == 1
