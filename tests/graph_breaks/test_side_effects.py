"""Side effects: mutations of state that existed before the frame, replayed
once per call, in program order, after the graph (and before a break's
native instruction).  Every case runs with and without a graph break in
the middle, for 3 calls, comparing the state after each call with eager."""
import pytest
import torch

import armature

from .util import check_calls, explain_fresh, snap

X0 = torch.tensor([1.0, -2.0, 3.0])

BRK = pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])


def run(fn, make_state, brk, snapshot=None, **kw):
    return check_calls(fn, make_state, snapshot or (lambda s: snap(s)), kwargs={"brk": brk}, **kw)


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


# --------------------------------------------------------------------------
# attributes of user objects, modules and classes
# --------------------------------------------------------------------------


def attr_counter(x, o, brk):
    o.count += 1
    y = x * o.count
    if brk:
        armature.graph_break()
    o.count += 10
    o.last = y
    return y + o.count


def attr_new_and_delete(x, o, brk):
    o.fresh = x + 1
    del o.old
    if brk:
        armature.graph_break()
    o.old = o.fresh * 2
    del o.fresh
    return o.old.sum()


def attr_tensor_inplace_and_rebind(x, o, brk):
    o.buf.add_(x)
    if brk:
        armature.graph_break()
    o.buf = o.buf * 2
    return o.buf


@BRK
def test_attr_counter(brk):
    run(attr_counter, lambda: (X0.clone(), Obj(count=0)), brk)


@BRK
def test_attr_new_and_delete(brk):
    run(attr_new_and_delete, lambda: (X0.clone(), Obj(old=1)), brk)


@BRK
def test_attr_tensor_inplace_and_rebind(brk):
    run(attr_tensor_inplace_and_rebind, lambda: (X0.clone(), Obj(buf=torch.zeros(3))), brk)


class Counted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = 0
        self.history = []

    def forward(self, x):
        self.calls += 1
        self.history.append(self.calls)
        return self.lin(x) * self.calls


def module_counter_fn(x, m, brk):
    m.calls += 1
    h = m.lin(x)
    if brk:
        armature.graph_break()
    m.history.append(m.calls)
    m.tag = "seen"
    return h * m.calls


@BRK
def test_module_attribute_counter_passed_in(brk):
    torch.manual_seed(0)
    m0 = Counted()

    def make():
        import copy
        return (X0.clone().view(1, 3), copy.deepcopy(m0))

    run(module_counter_fn, make, brk)


def test_compiled_module_counter():
    torch.manual_seed(0)
    m_e, m_c = Counted(), Counted()
    m_c.load_state_dict(m_e.state_dict())
    cm = armature.compile(m_c, backend="eager")
    x = X0.view(1, 3)
    for i in range(3):
        torch.testing.assert_close(cm(x), m_e(x))
    assert m_c.calls == m_e.calls == 3
    assert m_c.history == m_e.history == [1, 2, 3]


class WithClassCount:
    count = 0
    names = []


def class_attr(x, brk):
    WithClassCount.count += 1
    WithClassCount.names.append("c")
    if brk:
        armature.graph_break()
    WithClassCount.count += 1
    return x * WithClassCount.count


def _reset_class():
    WithClassCount.count = 0
    WithClassCount.names = []
    return (X0.clone(),)


@BRK
def test_class_attribute(brk):
    run(class_attr, _reset_class, brk,
        snapshot=lambda s: (WithClassCount.count, list(WithClassCount.names)))


def class_attr_via_instance_type(x, o, brk):
    type(o).count += 1
    if brk:
        armature.graph_break()
    return x + o.count  # the class attribute, read through the instance


@BRK
def test_class_attribute_via_type_of_instance(brk):
    def make():
        _reset_class()
        return (X0.clone(), WithClassCount())
    run(class_attr_via_instance_type, make, brk, snapshot=lambda s: WithClassCount.count)


# --------------------------------------------------------------------------
# items of lists and dicts passed in
# --------------------------------------------------------------------------


def item_store_delete(x, lst, d, brk):
    lst[0] = x * 2
    del lst[1]
    d["new"] = x + 1
    del d["gone"]
    if brk:
        armature.graph_break()
    lst[-1] = len(lst)
    d["n"] = len(d)
    lst[1:2] = [7, 8]
    return x.sum()


@BRK
def test_item_store_delete(brk):
    run(item_store_delete, lambda: (X0.clone(), [0, 1, 2, 3], {"gone": 1, "keep": 2}), brk)


LIST_METHODS = {
    "append": lambda lst, x: lst.append(x * 2),
    "extend": lambda lst, x: lst.extend([x, 5]),
    "insert": lambda lst, x: lst.insert(1, x.sum()),
    "pop": lambda lst, x: lst.pop(),
    "pop0": lambda lst, x: lst.pop(0),
    "remove": lambda lst, x: lst.remove(2),
    "clear": lambda lst, x: lst.clear(),
    "sort": lambda lst, x: lst.sort(reverse=True),
    "reverse": lambda lst, x: lst.reverse(),
    "iadd": lambda lst, x: lst.__iadd__([9]),
    "setitem_slice": lambda lst, x: lst.__setitem__(slice(0, 2), ["a"]),
}


def list_method(x, lst, name, brk):
    y = x + len(lst)
    LIST_METHODS[name](lst, x)
    if brk:
        armature.graph_break()
    lst.append(len(lst))
    return y


def list_method_inline(x, lst, op, brk):
    y = x + len(lst)
    if op == "append":
        lst.append(x * 2)
    elif op == "extend":
        lst.extend([x, 5])
    elif op == "insert":
        lst.insert(1, x.sum())
    elif op == "pop":
        lst.pop()
    elif op == "pop0":
        lst.pop(0)
    elif op == "remove":
        lst.remove(2)
    elif op == "clear":
        lst.clear()
    elif op == "sort":
        lst.sort(reverse=True)
    elif op == "reverse":
        lst.reverse()
    elif op == "iadd":
        lst += [9]
    elif op == "imul":
        lst *= 2
    if brk:
        armature.graph_break()
    lst.append(len(lst))
    return y


@BRK
@pytest.mark.parametrize("op", ["append", "extend", "insert", "pop", "pop0", "remove", "clear", "sort",
                                "reverse", "iadd", "imul"])
def test_list_methods(op, brk):
    def make():
        return (X0.clone(), [3, 2, 1, 2])

    check_calls(list_method_inline, make, snap, kwargs={"op": op, "brk": brk})


def dict_method_inline(x, d, op, brk):
    y = x * len(d)
    if op == "update":
        d.update({"z": 26}, w=23)
    elif op == "setdefault":
        v = d.setdefault("a", 100) + d.setdefault("q", 17)
        y = y + v
    elif op == "popitem":
        k, v = d.popitem()
        d["popped_" + k] = v
    elif op == "pop":
        d.pop("a")
        d.pop("nope", None)
    elif op == "clear":
        d.clear()
    elif op == "ior":
        d |= {"o": 1}
    elif op == "setitem_existing":
        d["a"] = x
    if brk:
        armature.graph_break()
    d["len"] = len(d)
    return y


@BRK
@pytest.mark.parametrize("op", ["update", "setdefault", "popitem", "pop", "clear", "ior", "setitem_existing"])
def test_dict_methods(op, brk):
    check_calls(dict_method_inline, lambda: (X0.clone(), {"a": 1, "b": 2}), snap, kwargs={"op": op, "brk": brk})


def set_method_inline(x, s, op, brk):
    y = x * len(s)
    if op == "add":
        s.add(10)
    elif op == "discard":
        s.discard(1)
        s.discard(99)
    elif op == "remove":
        s.remove(2)
    elif op == "update":
        s.update([7, 8])
    elif op == "clear":
        s.clear()
    elif op == "ior":
        s |= {42}
    elif op == "difference_update":
        s.difference_update({1, 2})
    if brk:
        armature.graph_break()
    s.add(len(s) + 100)
    return y


@BRK
@pytest.mark.parametrize("op", ["add", "discard", "remove", "update", "clear", "ior", "difference_update"])
def test_set_methods(op, brk):
    check_calls(set_method_inline, lambda: (X0.clone(), {1, 2, 3}), snap, kwargs={"op": op, "brk": brk})


def nested_container_mutation(x, d, brk):
    d["list"].append(x.sum())
    d["inner"]["k"] += 1
    if brk:
        armature.graph_break()
    d["list"][0] = len(d["list"])
    return x


@BRK
def test_nested_containers(brk):
    run(nested_container_mutation, lambda: (X0.clone(), {"list": [0], "inner": {"k": 0}}), brk)


def same_list_twice(x, a, b, brk):
    a.append(1)
    if brk:
        armature.graph_break()
    b.append(2)
    return x + len(a)


@BRK
def test_aliased_inputs(brk):
    def make():
        shared = []
        return (X0.clone(), shared, shared)
    run(same_list_twice, make, brk, snapshot=lambda s: (list(s[1]), s[1] is s[2]))


# --------------------------------------------------------------------------
# globals and nonlocals
# --------------------------------------------------------------------------

COUNTER = 0
GLOBAL_LIST = []
GLOBAL_DICT = {}


def global_writes(x, brk):
    global COUNTER
    COUNTER += 1
    GLOBAL_LIST.append(COUNTER)
    if brk:
        armature.graph_break()
    GLOBAL_DICT[COUNTER] = x.sum()
    COUNTER += 1
    return x * COUNTER


def _reset_globals():
    global COUNTER, GLOBAL_LIST, GLOBAL_DICT, CREATED
    COUNTER = 0
    GLOBAL_LIST = []
    GLOBAL_DICT = {}
    CREATED = None
    globals().pop("MAYBE", None)
    return (X0.clone(),)


def _globals_snapshot(_):
    return snap((COUNTER, GLOBAL_LIST, GLOBAL_DICT, CREATED, globals().get("MAYBE", "<unset>")))


@BRK
def test_global_writes(brk):
    run(global_writes, _reset_globals, brk, snapshot=_globals_snapshot)


CREATED = None


def global_create_and_delete(x, brk):
    global MAYBE, CREATED
    MAYBE = x + 1
    CREATED = [x * 2]
    if brk:
        armature.graph_break()
    y = MAYBE * 2
    del MAYBE
    return y


@BRK
def test_global_create_and_delete(brk):
    run(global_create_and_delete, _reset_globals, brk, snapshot=_globals_snapshot)


def global_rebind_list(x, brk):
    global GLOBAL_LIST
    old = GLOBAL_LIST
    GLOBAL_LIST = old + [1]
    old.append("old")
    if brk:
        armature.graph_break()
    GLOBAL_LIST.append(len(old))
    return x + 1


@BRK
def test_global_rebind(brk):
    run(global_rebind_list, _reset_globals, brk, snapshot=_globals_snapshot)


def make_counter():
    count = 0
    seen = []

    def inc(x, brk):
        nonlocal count
        count += 1
        seen.append(count)
        if brk:
            armature.graph_break()
        count += 1
        return x * count

    def get():
        return count, list(seen)

    return inc, get


@BRK
def test_nonlocal_cell_of_enclosing_function(brk):
    x = X0.clone()
    inc_e, get_e = make_counter()
    inc_c, get_c = make_counter()
    cf = armature.compile(inc_c, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(cf(x, brk), inc_e(x, brk))
        assert get_c() == get_e()
    assert get_c() == (6, [1, 3, 5])


def make_rebinder():
    state = {"v": 0}
    current = None

    def set_current(x, brk):
        nonlocal current
        current = x * 2
        if brk:
            armature.graph_break()
        state["v"] += 1
        return current + state["v"]

    def get():
        return current, state["v"]

    return set_current, get


@BRK
def test_nonlocal_rebinding_to_tensor(brk):
    x = X0.clone()
    f_e, g_e = make_rebinder()
    f_c, g_c = make_rebinder()
    cf = armature.compile(f_c, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(cf(x, brk), f_e(x, brk))
        (ce, ve), (cc, vc) = g_e(), g_c()
        torch.testing.assert_close(cc, ce)
        assert vc == ve


# --------------------------------------------------------------------------
# objects created in the frame that escape
# --------------------------------------------------------------------------

ESCAPED = None


def escape_to_global(x, brk):
    global ESCAPED
    b = Obj(v=x * 2, items=[1, 2])
    ESCAPED = b
    if brk:
        armature.graph_break()
    b.items.append(3)
    b.w = x + 1
    return b


def test_escape_to_global_identity():
    global ESCAPED
    for brk in (False, True):
        ESCAPED = None
        cf = armature.compile(escape_to_global, backend="eager")
        out = cf(X0.clone(), brk)
        assert out is ESCAPED
        assert out.items == [1, 2, 3]
        torch.testing.assert_close(out.v, X0 * 2)
        torch.testing.assert_close(out.w, X0 + 1)
        armature.reset()


def escape_onto_input(x, holder, lst, brk):
    child = Obj(data=x.sin(), tags={"a": 1})
    holder.child = child
    lst.append(child)
    if brk:
        armature.graph_break()
    child.tags["b"] = 2
    return child


@BRK
def test_escape_onto_input(brk):
    def make():
        return (X0.clone(), Obj(), [])

    st = make()
    cf = armature.compile(escape_onto_input, backend="eager")
    out = cf(*st, brk)
    _, holder, lst = st
    assert holder.child is out and lst[0] is out
    assert out.tags == {"a": 1, "b": 2}
    torch.testing.assert_close(out.data, X0.sin())
    out2 = cf(*st, brk)
    assert holder.child is out2 and lst == [out, out2] and out2 is not out


def escape_returned_containers(x, brk):
    lst = [x, x + 1]
    d = {"l": lst, "t": (lst,)}
    if brk:
        armature.graph_break()
    lst.append(x + 2)
    return d, lst


@BRK
def test_escape_returned_containers_keep_identity(brk):
    cf = armature.compile(escape_returned_containers, backend="eager")
    d, lst = cf(X0.clone(), brk)
    assert d["l"] is lst and d["t"][0] is lst and len(lst) == 3


# --------------------------------------------------------------------------
# reads see pending writes
# --------------------------------------------------------------------------


def read_after_write(x, o, lst, d, brk):
    o.a = 5
    d["k"] = 3
    lst.append(x)
    global COUNTER
    COUNTER = 7
    y = x * o.a * d["k"] * len(lst) + COUNTER
    o.a = o.a + 1
    d["k"] += 1
    if brk:
        armature.graph_break()
    z = y + o.a + d["k"] + len(lst) + COUNTER
    return y, z, hasattr(o, "a"), "k" in d


@BRK
def test_reads_see_pending_writes(brk):
    def make():
        _reset_globals()
        return (X0.clone(), Obj(a=1), [], {"k": 0})
    run(read_after_write, make, brk, snapshot=lambda s: snap((s, COUNTER)))


def test_write_then_read_single_graph():
    """Without a break, a write-then-read stays in one graph: the read of
    the pending write is answered at trace time."""
    def fn(x, o):
        o.scale = 3
        return x * o.scale

    e = explain_fresh(fn, X0.clone(), Obj(scale=1))
    assert e.graph_count == 1 and e.graph_break_count == 0, str(e)
    assert_same_scale = fn(X0.clone(), Obj(scale=1))
    torch.testing.assert_close(e.out, assert_same_scale)


# --------------------------------------------------------------------------
# program order relative to the break's native instruction
# --------------------------------------------------------------------------

OBSERVED = []


@armature.disable
def observe(o, lst):
    OBSERVED.append((o.count, list(lst), COUNTER))


def order_around_native_call(x, o, lst, brk):
    global COUNTER
    o.count += 1
    lst.append("before")
    COUNTER += 1
    observe(o, lst)          # runs natively: must see the writes above
    o.count += 1
    lst.append("after")
    COUNTER += 1
    observe(o, lst)
    return x * o.count


def test_effects_applied_before_native_instruction():
    def make():
        _reset_globals()
        OBSERVED.clear()
        return (X0.clone(), Obj(count=0), [])

    check_calls(order_around_native_call, make,
                snapshot=lambda s: snap((s, COUNTER, OBSERVED)), kwargs={"brk": False}, graphs=None)
    assert OBSERVED == [(1, ["before"], 1), (2, ["before", "after"], 2),
                        (3, ["before", "after", "before"], 3), (4, ["before", "after", "before", "after"], 4),
                        (5, ["before", "after", "before", "after", "before"], 5),
                        (6, ["before", "after", "before", "after", "before", "after"], 6)]


def order_print_sees_state(x, lst, brk):
    lst.append(1)
    print("len is", len(lst), lst)
    lst.append(2)
    return x


def test_print_sees_pending_writes(capsys):
    lst_e, lst_c = [], []
    order_print_sees_state(X0, lst_e, False)
    eager_out = capsys.readouterr().out
    armature.compile(order_print_sees_state, backend="eager")(X0, lst_c, False)
    assert capsys.readouterr().out == eager_out
    assert lst_c == lst_e


def effects_many_kinds_in_order(x, o, lst, d, brk):
    global COUNTER
    lst.append(o.count)     # 0
    o.count = 5
    lst.append(o.count)     # 5
    d["c"] = COUNTER
    COUNTER = len(lst)
    if brk:
        armature.graph_break()
    lst.append(COUNTER)
    o.count = len(d)
    return x * 2


@BRK
def test_effects_many_kinds_in_order(brk):
    def make():
        _reset_globals()
        return (X0.clone(), Obj(count=0), [], {})
    run(effects_many_kinds_in_order, make, brk, snapshot=lambda s: snap((s, COUNTER)))


# --------------------------------------------------------------------------
# exactly once
# --------------------------------------------------------------------------


def once_each(x, o, lst, d, s, brk):
    global COUNTER
    COUNTER += 1
    o.n += 1
    lst.append(0)
    d[len(d)] = 0
    s.add(len(s))
    if brk:
        armature.graph_break()
    return x + 1


@BRK
def test_each_effect_exactly_once_per_call(brk):
    _reset_globals()
    o, lst, d, s = Obj(n=0), [], {}, set()
    cf = armature.compile(once_each, backend="eager")
    for _ in range(3):
        cf(X0, o, lst, d, s, brk)
    assert (COUNTER, o.n, len(lst), len(d), len(s)) == (3, 3, 3, 3, 3)


# --------------------------------------------------------------------------
# more receivers: module buffers and properties, classmethods, objects
# reached through globals, sort with a key, deleted globals
# --------------------------------------------------------------------------


class WithBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(3))
        self.plain_t = torch.ones(3)
        self.history = []
        self._scale = 1

    @property
    def scale(self):
        return self._scale

    @scale.setter
    def scale(self, v):
        self._scale = v
        self.history.append(v)


def module_buffer_and_property(x, m, brk):
    m.running = m.running * 0.9 + x          # nn.Module.__setattr__ -> _buffers
    m.plain_t = m.plain_t + 1
    if brk:
        armature.graph_break()
    m.scale = m.scale + 1
    return m.running + m.plain_t * m.scale


@BRK
def test_module_buffer_and_property(brk):
    run(module_buffer_and_property, lambda: (X0.clone(), WithBuffer()), brk)


class Bumper:
    count = 0

    @classmethod
    def bump(cls):
        cls.count += 1
        return cls.count


def classmethod_bump(x, brk):
    a = Bumper.bump()
    if brk:
        armature.graph_break()
    b = Bumper.bump()
    return x * a * b


@BRK
def test_classmethod_class_attribute(brk):
    def make():
        Bumper.count = 0
        return (X0.clone(),)
    run(classmethod_bump, make, brk, snapshot=lambda s: Bumper.count)


def sort_with_key(x, lst, brk):
    lst.sort(key=lambda v: -v)
    if brk:
        armature.graph_break()
    lst.append(len(lst))
    return x + lst[0]


@BRK
def test_sort_with_key(brk):
    run(sort_with_key, lambda: (X0.clone(), [3, 1, 2]), brk)


class _Holder:
    pass


GLOBAL_OBJ = _Holder()


def global_object_attrs(x, brk):
    GLOBAL_OBJ.v = x * 2
    GLOBAL_OBJ.n = getattr(GLOBAL_OBJ, "n", 0) + 1
    if brk:
        armature.graph_break()
    return GLOBAL_OBJ.v + GLOBAL_OBJ.n


@BRK
def test_object_reached_through_global(brk):
    def make():
        GLOBAL_OBJ.__dict__.clear()
        return (X0.clone(),)
    run(global_object_attrs, make, brk, snapshot=lambda s: snap(vars(GLOBAL_OBJ)))


def deleted_global_read(x, brk):
    global TEMP_GLOBAL
    TEMP_GLOBAL = 1
    del TEMP_GLOBAL
    if brk:
        armature.graph_break()
    return x + TEMP_GLOBAL  # noqa: F821 - NameError, as in eager


@BRK
def test_read_of_deleted_global_raises_name_error(brk):
    run(deleted_global_read, lambda: (X0.clone(),), brk, min_graphs=0)


# --------------------------------------------------------------------------
# a list that grows on every call
# --------------------------------------------------------------------------

GROWING = []


def append_to_growing_global(x):
    GROWING.append(1)
    return x + 1


def append_to_growing_input(x, lst):
    lst.append(len(lst))
    return x + 1


@pytest.mark.parametrize("which", ["global", "input"])
def test_growing_list_does_not_recompile_every_call(which):
    import warnings
    from helpers import CountingBackend
    GROWING.clear()
    lst = []
    counter = CountingBackend()
    fn = append_to_growing_global if which == "global" else append_to_growing_input
    cf = armature.compile(fn, backend=counter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(12):
            cf(X0) if which == "global" else cf(X0, lst)
    assert len(GROWING) == 12 or len(lst) == 12
    assert counter.frame_count <= 2, counter.frame_count
