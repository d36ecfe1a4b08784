"""CPython attribute semantics on replay: data descriptors (property,
custom __set__/__delete__), read-only properties, writes into __dict__,
instance attributes shadowing methods, __dict__ replacement, custom
__setattr__/__delattr__, set-then-delete, __slots__.  Each case runs with
and without a graph break in the middle, 3 calls, state compared with eager
after every call, exceptions compared by type and message."""
import pytest
import torch

import armature

from .util import check_calls, snap

X0 = torch.tensor([1.0, -2.0, 3.0])
BRK = pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])


def run(fn, make_state, brk, **kw):
    return check_calls(fn, make_state, lambda s: snap(s), kwargs={"brk": brk}, **kw)


# --------------------------------------------------------------------------
# property with setter / deleter that have side effects
# --------------------------------------------------------------------------


class Prop:
    def __init__(self, log):
        self.log = log
        self._v = 0

    @property
    def v(self):
        self.log.append("get")
        return self._v

    @v.setter
    def v(self, value):
        self.log.append(("set", value if not isinstance(value, torch.Tensor) else "tensor"))
        self._v = value

    @v.deleter
    def v(self):
        self.log.append("del")
        self._v = -1

    @property
    def ro(self):
        return 42


def property_store_delete(x, p, brk):
    p.v = 1
    p.v = p.v + 1
    if brk:
        armature.graph_break()
    del p.v
    p.v = x * p.v
    return p.v + 1


@BRK
def test_property_setter_deleter(brk):
    run(property_store_delete, lambda: (X0.clone(), Prop([])), brk)


def property_read_only(x, p, log, brk):
    log.append("before")
    p.v = 5
    if brk:
        armature.graph_break()
    y = x * 2
    p.ro = 3          # AttributeError here, like eager
    log.append("after")
    return y


@BRK
def test_read_only_property_raises_at_the_same_point(brk):
    def make():
        log = []
        return (X0.clone(), Prop(log), log)
    check_calls(property_read_only, make, lambda s: snap(s), kwargs={"brk": brk}, min_graphs=0)


def property_delete_without_deleter(x, o, brk):
    o.count = 1
    if brk:
        armature.graph_break()
    del o.ro
    return x


@BRK
def test_property_delete_without_deleter_raises(brk):
    check_calls(property_delete_without_deleter, lambda: (X0.clone(), Prop([])), lambda s: snap(s),
                kwargs={"brk": brk}, min_graphs=0)


# --------------------------------------------------------------------------
# custom data descriptor
# --------------------------------------------------------------------------


class Logged:
    """Data descriptor storing in the instance dict under another name."""

    def __set_name__(self, owner, name):
        self.name = name
        self.key = "_logged_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        obj.events.append(("get", self.name))
        return obj.__dict__.get(self.key, 0)

    def __set__(self, obj, value):
        obj.events.append(("set", self.name))
        obj.__dict__[self.key] = value

    def __delete__(self, obj):
        obj.events.append(("del", self.name))
        obj.__dict__.pop(self.key, None)


class WithDesc:
    a = Logged()
    b = Logged()

    def __init__(self):
        self.events = []


def descriptor_store_delete(x, o, brk):
    o.a = 10
    o.b = o.a + 1
    if brk:
        armature.graph_break()
    del o.a
    o.a = o.b * 2
    return x * o.a


@BRK
def test_custom_data_descriptor(brk):
    run(descriptor_store_delete, lambda: (X0.clone(), WithDesc()), brk)


def dict_write_bypasses_descriptor(x, o, brk):
    o.__dict__["a"] = 99        # no __set__ call
    o.__dict__["_logged_b"] = 7
    if brk:
        armature.graph_break()
    r = o.a                     # the data descriptor still wins over __dict__["a"]
    return x * r, r, o.b, o.__dict__["a"]


@pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])
def test_dict_write_bypasses_data_descriptor(brk):
    run(dict_write_bypasses_descriptor, lambda: (X0.clone(), WithDesc()), brk)


# --------------------------------------------------------------------------
# instance attribute shadowing a method (non-data descriptor)
# --------------------------------------------------------------------------


class WithMethod:
    def __init__(self):
        self.k = 2

    def scale(self, t):
        return t * self.k


def shadow_method(x, o, brk):
    a = o.scale(x)
    o.scale = lambda t: t + 100
    b = o.scale(x)
    if brk:
        armature.graph_break()
    c = o.scale(x)
    del o.scale
    d = o.scale(x)
    return a, b, c, d, hasattr(o, "scale")


@BRK
def test_instance_attribute_shadows_method_until_deleted(brk):
    # (the lambda stored and deleted again leaves no trace in the state)
    run(shadow_method, lambda: (X0.clone(), WithMethod()), brk)


def shadow_method_left_in_place(x, o, brk):
    o.scale = lambda t: t - 1
    if brk:
        armature.graph_break()
    return o.scale(x)


@BRK
def test_shadowing_attribute_persists_after_call(brk):
    o_e, o_c = WithMethod(), WithMethod()
    shadow_method_left_in_place(X0, o_e, brk)
    out = armature.compile(shadow_method_left_in_place, backend="eager")(X0, o_c, brk)
    torch.testing.assert_close(out, X0 - 1)
    assert set(vars(o_c)) == set(vars(o_e)) == {"k", "scale"}
    torch.testing.assert_close(o_c.scale(X0), o_e.scale(X0))
    del o_c.scale
    torch.testing.assert_close(o_c.scale(X0), X0 * 2)  # the class's method again


# --------------------------------------------------------------------------
# __dict__ replacement
# --------------------------------------------------------------------------


class Plain:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def replace_dict(x, o, brk):
    old = o.__dict__
    o.__dict__ = {"fresh": x * 2, "n": 3}
    old["stale"] = 1
    if brk:
        armature.graph_break()
    o.extra = o.fresh + 1
    return hasattr(o, "stale"), hasattr(o, "a"), o.n


@pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])
def test_instance_dict_replacement(brk):
    run(replace_dict, lambda: (X0.clone(), Plain(a=1, b=2)), brk)


def replace_dict_simple(x, o, brk):
    o.__dict__ = {"fresh": x * 2, "n": 3}
    if brk:
        armature.graph_break()
    o.extra = o.fresh + 1
    return hasattr(o, "a"), o.n


@BRK
def test_instance_dict_replacement_simple(brk):
    run(replace_dict_simple, lambda: (X0.clone(), Plain(a=1, b=2)), brk)


# --------------------------------------------------------------------------
# custom __setattr__ / __delattr__
# --------------------------------------------------------------------------


class Guarded:
    def __init__(self):
        object.__setattr__(self, "journal", [])

    def __setattr__(self, name, value):
        self.journal.append(("set", name))
        if name.startswith("_"):
            raise AttributeError(f"private attribute {name!r} is read-only")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self.journal.append(("del", name))
        object.__delattr__(self, name)


def custom_setattr(x, o, brk):
    o.a = x + 1
    o.b = 2
    if brk:
        armature.graph_break()
    del o.b
    o.c = o.a * 3
    return o.c


@BRK
def test_custom_setattr_delattr(brk):
    run(custom_setattr, lambda: (X0.clone(), Guarded()), brk)


def custom_setattr_raises(x, o, brk):
    o.a = 1
    if brk:
        armature.graph_break()
    o._hidden = x
    o.after = 2
    return x


@BRK
def test_custom_setattr_raising(brk):
    check_calls(custom_setattr_raises, lambda: (X0.clone(), Guarded()), lambda s: snap(s),
                kwargs={"brk": brk}, min_graphs=0)


class Redirect:
    """__setattr__ that stores somewhere else entirely."""

    def __init__(self):
        object.__setattr__(self, "store", {})

    def __setattr__(self, name, value):
        self.store[name] = value

    def __getattr__(self, name):
        try:
            return self.store[name]
        except KeyError:
            raise AttributeError(name) from None


def redirect_setattr(x, o, brk):
    o.w = x * 2
    if brk:
        armature.graph_break()
    return o.w + 1, hasattr(o, "w")


@BRK
def test_setattr_redirect_with_getattr(brk):
    run(redirect_setattr, lambda: (X0.clone(), Redirect()), brk)


# --------------------------------------------------------------------------
# set then delete in one frame
# --------------------------------------------------------------------------


def set_then_delete_new(x, o, brk):
    o.tmp = x * 2
    y = o.tmp + 1
    if brk:
        armature.graph_break()
    del o.tmp
    return y, hasattr(o, "tmp")


def set_then_delete_existing(x, o, brk):
    o.a = x
    del o.a
    if brk:
        armature.graph_break()
    return x + 1, hasattr(o, "a"), hasattr(o, "b")


def delete_then_set(x, o, brk):
    del o.a
    if brk:
        armature.graph_break()
    o.a = x * 3
    return o.a


def delete_missing(x, o, brk):
    o.z = 1
    if brk:
        armature.graph_break()
    del o.missing
    return x


@BRK
@pytest.mark.parametrize("fn", [set_then_delete_new, set_then_delete_existing, delete_then_set, delete_missing],
                         ids=lambda f: f.__name__)
def test_set_and_delete_same_attribute(fn, brk):
    check_calls(fn, lambda: (X0.clone(), Plain(a=1, b=2)), lambda s: snap(s), kwargs={"brk": brk},
                min_graphs=0)


def test_set_then_delete_leaves_dict_order_like_eager():
    def fn(x, o):
        o.a = 10      # existing key: keeps its position
        o.c = 3
        del o.b
        o.b = 5       # re-added at the end
        return x

    for brk_fn in (fn,):
        e, c = Plain(a=1, b=2), Plain(a=1, b=2)
        brk_fn(X0, e)
        armature.compile(brk_fn, backend="eager")(X0, c)
        assert list(c.__dict__.items()) == list(e.__dict__.items())


# --------------------------------------------------------------------------
# __slots__
# --------------------------------------------------------------------------


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


class SlottedChild(Slotted):
    __slots__ = ("c",)


def slots_store_delete(x, o, brk):
    o.b = x * 2
    y = o.a + o.b
    if brk:
        armature.graph_break()
    del o.a
    o.a = y.sum()
    return y, hasattr(o, "b")


def slots_missing(x, o, brk):
    o.a = 5
    if brk:
        armature.graph_break()
    return x * o.b          # never set: AttributeError


def slots_no_dict(x, o, brk):
    o.a = 1
    if brk:
        armature.graph_break()
    o.not_a_slot = 2        # AttributeError: no __dict__
    return x


@BRK
@pytest.mark.parametrize("fn", [slots_store_delete, slots_missing, slots_no_dict], ids=lambda f: f.__name__)
@pytest.mark.parametrize("cls", [Slotted, SlottedChild], ids=lambda c: c.__name__)
def test_slots(fn, cls, brk):
    check_calls(fn, lambda: (X0.clone(), cls(1.5)), lambda s: snap(s), kwargs={"brk": brk}, min_graphs=0)


def new_slotted_escapes(x, brk):
    o = SlottedChild(x)
    o.c = x + 1
    if brk:
        armature.graph_break()
    o.b = 3
    return o


@BRK
def test_slots_object_created_in_frame(brk):
    out = armature.compile(new_slotted_escapes, backend="eager")(X0, brk)
    assert type(out) is SlottedChild
    torch.testing.assert_close(out.a, X0)
    torch.testing.assert_close(out.c, X0 + 1)
    assert out.b == 3
    assert not hasattr(out, "__dict__")


# --------------------------------------------------------------------------
# reading the instance dict as a whole
# --------------------------------------------------------------------------

def dict_contains(x, o):
    o.t = 1
    return x + 1, "t" in o.__dict__, "zz" in o.__dict__


def dict_len(x, o):
    o.t = 1
    return x * len(o.__dict__)


def dict_keys_sorted(x, o):
    del o.a
    return x + 1, sorted(o.__dict__)


@pytest.mark.parametrize("fn", [dict_contains, dict_len, dict_keys_sorted], ids=lambda f: f.__name__)
def test_instance_dict_as_a_whole(fn):
    check_calls(fn, lambda: (X0.clone(), Plain(a=1, b=2)), lambda s: snap(s))


@pytest.mark.parametrize("fn", [dict_contains, dict_len, dict_keys_sorted], ids=lambda f: f.__name__)
def test_instance_dict_as_a_whole_is_still_right(fn):
    check_calls(fn, lambda: (X0.clone(), Plain(a=1, b=2)), lambda s: snap(s), allow_fallback=True, min_graphs=0)


# --------------------------------------------------------------------------
# the instance dict after `obj.__dict__ = d`: one dict, two names
# --------------------------------------------------------------------------


def dict_shared_after_replace(x, o, brk):
    d = {"w": x + 1}
    o.__dict__ = d
    d["k"] = 5              # visible as o.k
    o.m = x * 3             # visible as d["m"]
    if brk:
        armature.graph_break()
    same = o.__dict__ is d
    return o.k, d["m"] + o.w, same, sorted(d), hasattr(o, "a")


def dict_delete_after_replace(x, o, brk):
    d = {"a": 1, "b": x}
    o.__dict__ = d
    del o.a
    if brk:
        armature.graph_break()
    return "a" in d, len(d), list(o.__dict__), d["b"] * 2


def dict_items_in_order(x, o, brk):
    o.z = x
    del o.a
    o.y = 2
    if brk:
        armature.graph_break()
    d = o.__dict__
    return list(d.keys()), [k for k, v in d.items()], len(d), "y" in d, "a" in d


def dict_of_new_object(x, brk):
    o = Plain()
    o.p = x + 1
    o.q = 2
    d = o.__dict__
    if brk:
        armature.graph_break()
    d["r"] = 3
    return sorted(vars(o)), sorted(d), o.r, o.p


def dict_delete_then_readd(x, o, brk):
    del o.a
    o.a = 10
    if brk:
        armature.graph_break()
    return list(o.__dict__), x + o.a


@BRK
@pytest.mark.parametrize("fn", [dict_shared_after_replace, dict_delete_after_replace, dict_items_in_order,
                                dict_delete_then_readd], ids=lambda f: f.__name__)
def test_instance_dict_semantics(fn, brk):
    run(fn, lambda: (X0.clone(), Plain(a=1, b=2)), brk, min_graphs=0, allow_fallback=fn is dict_delete_then_readd)


@BRK
def test_instance_dict_of_object_made_in_frame(brk):
    run(dict_of_new_object, lambda: (X0.clone(),), brk, min_graphs=0)
