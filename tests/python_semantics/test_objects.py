"""User-defined classes and their instances inside compiled frames
(compiled vs eager).

Attribute reads follow CPython's lookup order (data descriptors, instance
__dict__, non-data descriptors and class attributes along the MRO,
__getattr__); property getter/setter/deleter, classmethod, staticmethod,
__slots__, bound and unbound methods, operator dunders (with NotImplemented
fallbacks), isinstance, super() (with and without arguments, also in
nn.Module subclasses), instances created in the frame and returned, and
attribute writes/deletes on instances passed in.

``helpers.deep_copy`` does not copy user objects, so the object cases use
``support.assert_same_objects``: the inputs come from a factory called
afresh for every run, and results and inputs are compared by type and
attribute state (``support.obj_equal``).
"""

import pytest
import torch

from helpers import CASE_ARGS, case, t
from python_semantics.support import assert_same_objects, run_case, xfail

X = t(4)
Y = t(4)


def _x():
    return X.clone()


def _y():
    return Y.clone()


# --------------------------------------------------------------------------
# classes used by the programs
# --------------------------------------------------------------------------


class Scaled:
    """A data descriptor: stores on the instance under _name, reads scaled."""

    def __init__(self, factor):
        self.factor = factor

    def __set_name__(self, owner, name):
        self.private = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.private) * self.factor

    def __set__(self, obj, value):
        setattr(obj, self.private, value)


class Constant:
    """A non-data descriptor (only __get__)."""

    def __init__(self, v):
        self.v = v

    def __get__(self, obj, objtype=None):
        return self.v


class Holder:
    w = Scaled(10)
    c = Constant(7)
    shared = 1

    def __init__(self, w):
        self.w = w

    def method(self):
        return "method"


class Base:
    kind = "base"
    level = 0

    def __init__(self, x):
        self.x = x

    def scale(self):
        return 2

    def forward(self):
        return self.x * self.scale()

    def describe(self):
        return self.kind + str(self.level)


class Mid(Base):
    kind = "mid"

    def scale(self):
        return 3


class Leaf(Mid):
    level = 2

    def forward(self):
        return super().forward() + 1


class Left(Base):
    def who(self):
        return "L" + super().describe()


class Right(Base):
    kind = "right"

    def who(self):
        return "R"

    def describe(self):
        return "right-desc"


class Diamond(Left, Right):
    pass


class Dynamic:
    def __init__(self):
        self.real = 1

    def __getattr__(self, name):
        if name.startswith("x_"):
            return int(name[2:])
        raise AttributeError(f"no {name}")


class Temperature:
    def __init__(self, c):
        self._c = c

    @property
    def celsius(self):
        return self._c

    @celsius.setter
    def celsius(self, v):
        if v < -273:
            raise ValueError("below absolute zero")
        self._c = v

    @celsius.deleter
    def celsius(self):
        del self._c

    @property
    def fahrenheit(self):
        return self._c * 9 / 5 + 32


class TensorBox:
    def __init__(self, data, scale=1):
        self.data = data
        self.scale = scale

    @property
    def scaled(self):
        return self.data * self.scale

    @scaled.setter
    def scaled(self, value):
        self.data = value / self.scale

    @classmethod
    def zeros_like(cls, x):
        return cls(torch.zeros_like(x), 2)

    @staticmethod
    def combine(a, b):
        return a + b

    def double(self):
        self.data = self.data * 2
        return self

    def __eq__(self, other):  # used by `in` / == on the Python side only
        return isinstance(other, TensorBox) and self.scale == other.scale


class SubBox(TensorBox):
    @classmethod
    def make(cls):
        return cls.__name__


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


class SlottedChild(Slotted):
    __slots__ = ("c",)


class Vec:
    def __init__(self, *vals):
        self.vals = list(vals)

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(*[a + b for a, b in zip(self.vals, other.vals)])
        if isinstance(other, (int, float)):
            return Vec(*[a + other for a in self.vals])
        return NotImplemented

    def __radd__(self, other):
        if other == 0:
            return self
        return self.__add__(other)

    def __mul__(self, k):
        if not isinstance(k, (int, float)):
            return NotImplemented
        return Vec(*[a * k for a in self.vals])

    __rmul__ = __mul__

    def __neg__(self):
        return Vec(*[-a for a in self.vals])

    def __getitem__(self, i):
        return self.vals[i]

    def __setitem__(self, i, v):
        self.vals[i] = v

    def __len__(self):
        return len(self.vals)

    def __iter__(self):
        return iter(self.vals)

    def __contains__(self, v):
        return any(v is a for a in self.vals)

    def __eq__(self, other):
        return isinstance(other, Vec) and len(self) == len(other)

    def __bool__(self):
        return len(self.vals) > 0

    def __call__(self, k):
        return self.vals[k] * 10

    def __lt__(self, other):
        return len(self) < len(other)


class OnlyLeft:
    def __add__(self, other):
        return NotImplemented


class OnlyRight:
    def __radd__(self, other):
        return "radd"


class Countdown:
    """An iterator class (__iter__ returns self, __next__ raises StopIteration)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


class Key:
    def __init__(self, k):
        self.k = k

    def __hash__(self):
        return hash(self.k)

    def __eq__(self, other):
        return isinstance(other, Key) and other.k == self.k


class Empty:
    pass


class Counter:
    total = 0

    def __init__(self):
        self.count = 0

    def bump(self, by=1):
        self.count += by
        Counter.total_seen = True
        return self.count


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x).relu()


class NetChild(Net):
    def __init__(self):
        super(NetChild, self).__init__()
        self.extra = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return super().forward(x) * self.extra


class NetExplicitSuper(Net):
    def forward(self, x):
        return super(NetExplicitSuper, self).forward(x) + 1


class NetHelper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 0.5

    def helper(self, x):
        return self.lin(x) * self.scale

    def forward(self, x):
        return self.helper(x) + self.helper(x * 2)


# --------------------------------------------------------------------------
# attribute lookup order
# --------------------------------------------------------------------------


def data_descriptor_beats_instance_dict(h):
    h.__dict__["w"] = 999  # shadowing entry is ignored: data descriptor wins
    return h.w, h._w


def instance_dict_beats_non_data_descriptor(h):
    before = h.c
    h.c = 100
    return before, h.c, Holder.c


def instance_dict_shadows_method(h):
    h.method = lambda: "instance"
    return h.method(), Holder.method(h)


def data_descriptor_set_in_frame(x):
    h = Holder(x)
    h.w = x + 1
    return h.w, h._w


def class_attr_along_mro(x):
    objs = [Base(x), Mid(x), Leaf(x)]
    return [(o.kind, o.level, o.describe()) for o in objs], objs[2].forward()


def diamond_mro(x):
    d = Diamond(x)
    return d.who(), d.kind, d.describe(), [c.__name__ for c in Diamond.__mro__], d.forward()


def getattr_fallback(x):
    d = Dynamic()
    return x * d.x_3, d.real, hasattr(d, "x_1"), hasattr(d, "nope"), getattr(d, "nope", "dflt")


def getattr_fallback_raises(x):
    return Dynamic().nope


def class_attr_shadowed_by_instance(h):
    h.shared = 5
    return h.shared, Holder.shared


def class_level_lookup_via_type(x):
    b = Leaf(x)
    return type(b).kind, type(b).__name__, b.__class__ is Leaf, x * type(b).level


# --------------------------------------------------------------------------
# property / classmethod / staticmethod / __slots__
# --------------------------------------------------------------------------


def property_get_set(tmp):
    f0 = tmp.fahrenheit
    tmp.celsius = 100
    return f0, tmp.celsius, tmp.fahrenheit


def property_setter_raises(tmp):
    tmp.celsius = -300
    return tmp.celsius


def property_deleter(tmp):
    del tmp.celsius
    return hasattr(tmp, "_c")


def property_tensor_roundtrip(box):
    s = box.scaled
    box.scaled = s + 1
    return s, box.data


def property_no_setter_raises(tmp):
    tmp.fahrenheit = 1
    return tmp


def classmethod_constructor(x):
    b = TensorBox.zeros_like(x)
    return b.data + x, b.scale, SubBox.make(), TensorBox.combine(x, 1), b.combine(x, x)


def classmethod_on_subclass(x):
    b = SubBox.zeros_like(x)
    return type(b) is SubBox, b.data + 1


def slots_get_set(x):
    s = Slotted(x)
    s.b = 2
    return s.a * s.b, hasattr(s, "__dict__")


def slots_child(x):
    s = SlottedChild(x)
    s.c = 3
    s.b = 1
    return s.a * s.c + s.b


def slots_new_attr_raises(x):
    s = Slotted(x)
    s.z = 1
    return s


def slots_unset_read_raises(x):
    s = Slotted(x)
    return s.b


def slots_passed_in_mutated(s):
    s.b = s.a * 2
    s.a = s.a + 1
    return s.b


# --------------------------------------------------------------------------
# methods: bound / unbound
# --------------------------------------------------------------------------


def bound_method_stored(x):
    b = TensorBox(x, 3)
    m = b.double
    m()
    f = m.__func__
    return b.data, m.__self__ is b, f is TensorBox.double


def unbound_method_call(x):
    b = Mid(x)
    return Base.forward(b), Mid.scale(b), Base.scale(b)


def methods_in_list(x):
    b = Base(x)
    fs = [b.forward, b.scale, b.describe]
    return [f() for f in fs]


def method_returning_self_chain(x):
    b = TensorBox(x)
    return b.double().double().data


def method_passed_in(box, x):
    return box.double().data + x


def method_mutates_passed_in(c):
    c.bump()
    c.bump(5)
    return c.count


# --------------------------------------------------------------------------
# operator overloading
# --------------------------------------------------------------------------


def dunder_add_radd(x):
    v = Vec(x, x * 2)
    w = v + Vec(1, 2)
    u = 1 + v
    s = sum([Vec(x), Vec(x * 3)])
    return w.vals, u.vals, s.vals


def dunder_mul_rmul_neg(x):
    v = Vec(x, 1)
    return (v * 2).vals, (3 * v).vals, (-v).vals


def dunder_not_implemented_fallback(x):
    return x + 1, OnlyLeft() + OnlyRight(), 5 + OnlyRight()


def dunder_not_implemented_both_raises(x):
    return OnlyLeft() + OnlyLeft()


def dunder_mul_type_error(x):
    return Vec(x) * "s"


def dunder_container_protocol(x):
    v = Vec(x, x + 1, x + 2)
    v[1] = x * 10
    total = 0
    for item in v:
        total = total + item
    return total, len(v), v[0], v[-1], x in v, bool(v), bool(Vec())


def dunder_eq_and_sorting(x):
    a, b = Vec(x), Vec(x, x)
    ordered = sorted([b, a])
    return a == Vec(1), a == b, a != b, [len(o) for o in ordered], x + 1


def dunder_call(x):
    v = Vec(x, x * 2)
    return v(0) + v(1)


def dunder_iter_class(x):
    out = x
    for i in Countdown(3):
        out = out + i
    return out, list(Countdown(2))


def dunder_hash_dict_key(x):
    d = {Key("a"): x, Key("b"): x * 2}
    return d[Key("a")] + d[Key("b")], Key("a") in d, len({Key(1): 0, Key(1): 1})


def dunder_bool_in_if(x):
    v = Vec()
    if v:
        return x + 1
    return x - 1


# --------------------------------------------------------------------------
# instances: created, returned, passed in, isinstance
# --------------------------------------------------------------------------


def create_and_return(x):
    b = TensorBox(x * 2, 3)
    b.extra = "tag"
    return b


def create_empty_and_fill(x):
    e = Empty()
    e.a = x
    e.b = [1, 2]
    return e, e.a + 1


def return_list_of_objects(x):
    return [Base(x + i) for i in range(3)]


def passed_in_attr_set(box, x):
    box.data = box.data + x
    box.new_attr = x * 2
    box.scale = 5
    return box.scaled


def passed_in_attr_delete(box):
    v = box.data
    del box.scale
    return v * 2, hasattr(box, "scale")


def passed_in_attr_delete_missing_raises(box):
    del box.nothing
    return box


def passed_in_object_read_only(box, x):
    return box.data * box.scale + x


def passed_in_list_of_objects(objs, x):
    for o in objs:
        o.data = o.data * x
    return len(objs)


def isinstance_user(x):
    objs = [Base(x), Leaf(x), TensorBox(x)]
    return [isinstance(o, Base) for o in objs], [isinstance(o, (Mid, TensorBox)) for o in objs], x + 1


def object_identity_checks(x):
    a = Base(x)
    b = a
    c = Base(x)
    return a is b, a is c, a is not c, x * 2


def class_in_frame(x):
    class Local:
        def __init__(self, v):
            self.v = v

        def get(self):
            return self.v * 2

    return Local(x).get()


def class_in_frame_with_base(x):
    class Local(Base):
        def scale(self):
            return 7

    return Local(x).forward()


# --------------------------------------------------------------------------
# super()
# --------------------------------------------------------------------------


class WithInit(Base):
    def __init__(self, x, extra):
        super().__init__(x)
        self.extra = extra

    def forward(self):
        return super().forward() + self.extra


class WithExplicitSuper(Base):
    def __init__(self, x):
        super(WithExplicitSuper, self).__init__(x * 2)

    def scale(self):
        return super(WithExplicitSuper, self).scale() + 10


class Grandchild(WithInit):
    def forward(self):
        return super(WithInit, self).forward() * 100


def super_init_and_method(x):
    w = WithInit(x, 5)
    return w.forward(), w.extra, w.x


def super_with_arguments(x):
    e = WithExplicitSuper(x)
    return e.x, e.scale(), e.forward()


def super_skipping_class(x):
    return Grandchild(x, 1).forward()


def super_in_mro_chain(x):
    return Leaf(x).forward(), Diamond(x).who()


# --------------------------------------------------------------------------
# more attribute semantics on passed-in and new objects
# --------------------------------------------------------------------------


class Logged:
    def __init__(self):
        object.__setattr__(self, "log", [])

    def __setattr__(self, name, value):
        self.log.append(name)
        object.__setattr__(self, name, value)


class Node:
    def __init__(self, v):
        self.v = v
        self.next = None


class Registry:
    registered = ()


def custom_setattr_passed_in(obj, x):
    obj.a = x
    obj.b = 2
    obj.a = obj.a * obj.b
    return len(obj.log)


def custom_setattr_new_object(x):
    obj = Logged()
    obj.w = x + 1
    obj.w = obj.w * 2
    return obj, obj.log


def instance_dict_access(box, x):
    d = box.__dict__
    d["extra"] = x
    return box.extra + 1, d["scale"]


def instance_dict_iterate(box):
    return sorted(box.__dict__), list(box.__dict__.items())[0][0], "scale" in box.__dict__


def vars_builtin(box):
    return sorted(vars(box)), vars(box)["scale"]


def delete_then_class_fallback(h):
    h.shared = 10
    first = h.shared
    del h.shared
    return first, h.shared


def tensor_attr_mutated_in_place(box):
    box.data.add_(1)
    box.data[0] = 0
    return box.data.sum()


def new_object_escapes_into_arg_list(lst, x):
    lst.append(TensorBox(x * 2, 4))
    lst.append(Node(3))
    return len(lst)


def linked_nodes(x):
    a, b, c = Node(x), Node(x + 1), Node(x + 2)
    a.next = b
    b.next = c
    total = 0
    node = a
    while node is not None:
        total = total + node.v
        node = node.next
    return total, a.next is b, c.next is None, b


def class_attribute_write(x):
    Registry.registered = ("a", "b")
    return x * len(Registry.registered), Registry.registered


def getattr_default_chain(x):
    objs = [TensorBox(x), Empty(), Holder(2)]
    return [getattr(o, "scale", getattr(o, "c", None)) for o in objs], x + 1


def object_in_dict_values(x):
    d = {"box": TensorBox(x, 3), "n": 1}
    d["box"].double()
    return d["box"].data * d["n"], d


# --------------------------------------------------------------------------
# case tables
# --------------------------------------------------------------------------


def obj_case(fn, make_args, id=None, marks=(), **opts):
    return pytest.param(fn, make_args, opts, id=id or fn.__name__, marks=marks)



OBJECT_CASES = [
    # lookup order
    obj_case(data_descriptor_beats_instance_dict, lambda: (Holder(3),), graphs=0),
    obj_case(instance_dict_beats_non_data_descriptor, lambda: (Holder(3),), graphs=0),
    obj_case(instance_dict_shadows_method, lambda: (Holder(3),), graphs=0),
    obj_case(data_descriptor_set_in_frame, lambda: (_x(),), graphs=1),
    obj_case(class_attr_along_mro, lambda: (_x(),), graphs=1),
    obj_case(diamond_mro, lambda: (_x(),), graphs=1),
    obj_case(getattr_fallback, lambda: (_x(),), graphs=1),
    obj_case(class_attr_shadowed_by_instance, lambda: (Holder(1),), graphs=0),
    obj_case(class_level_lookup_via_type, lambda: (_x(),), graphs=1),
    # property / classmethod / staticmethod / slots
    obj_case(property_get_set, lambda: (Temperature(20),), graphs=0),
    obj_case(property_deleter, lambda: (Temperature(20),), graphs=0),
    obj_case(property_tensor_roundtrip, lambda: (TensorBox(_x(), 2),), graphs=1),
    obj_case(classmethod_constructor, lambda: (_x(),), graphs=1),
    obj_case(classmethod_on_subclass, lambda: (_x(),), graphs=1),
    obj_case(slots_get_set, lambda: (_x(),), graphs=1),
    obj_case(slots_child, lambda: (_x(),), graphs=1),
    obj_case(slots_passed_in_mutated, lambda: (Slotted(_x()),), graphs=1),
    # methods
    obj_case(bound_method_stored, lambda: (_x(),), graphs=1),
    obj_case(unbound_method_call, lambda: (_x(),), graphs=1),
    obj_case(methods_in_list, lambda: (_x(),), graphs=1),
    obj_case(method_returning_self_chain, lambda: (_x(),), graphs=1),
    obj_case(method_passed_in, lambda: (TensorBox(_x()), _y()), graphs=1),
    obj_case(method_mutates_passed_in, lambda: (Counter(),), graphs=0),
    # operators
    obj_case(dunder_add_radd, lambda: (_x(),), graphs=1),
    obj_case(dunder_mul_rmul_neg, lambda: (_x(),), graphs=1),
    obj_case(dunder_not_implemented_fallback, lambda: (_x(),), graphs=1),
    obj_case(dunder_container_protocol, lambda: (_x(),), graphs=1),
    obj_case(dunder_eq_and_sorting, lambda: (_x(),), graphs=1),
    obj_case(dunder_call, lambda: (_x(),), graphs=1),
    obj_case(dunder_iter_class, lambda: (_x(),), graphs=1),
    obj_case(dunder_hash_dict_key, lambda: (_x(),), graphs=1),
    obj_case(dunder_bool_in_if, lambda: (_x(),), graphs=1),
    # instances
    obj_case(create_and_return, lambda: (_x(),), graphs=1),
    obj_case(create_empty_and_fill, lambda: (_x(),), graphs=1),
    obj_case(return_list_of_objects, lambda: (_x(),), graphs=1),
    obj_case(passed_in_attr_set, lambda: (TensorBox(_x(), 2), _y()), graphs=1),
    obj_case(passed_in_attr_delete, lambda: (TensorBox(_x(), 2),), graphs=1),
    obj_case(passed_in_object_read_only, lambda: (TensorBox(_x(), 3), _y()), graphs=1),
    obj_case(passed_in_list_of_objects, lambda: ([TensorBox(_x()), TensorBox(_y())], 3), graphs=1),
    obj_case(isinstance_user, lambda: (_x(),), graphs=1),
    obj_case(object_identity_checks, lambda: (_x(),), graphs=1),
    obj_case(class_in_frame, lambda: (_x(),), graphs=1),
    obj_case(class_in_frame_with_base, lambda: (_x(),), graphs=1),
    # super
    obj_case(super_init_and_method, lambda: (_x(),), graphs=1),
    obj_case(super_with_arguments, lambda: (_x(),), graphs=1),
    obj_case(super_skipping_class, lambda: (_x(),), graphs=1),
    obj_case(super_in_mro_chain, lambda: (_x(),), graphs=1),
    # more attribute semantics
    obj_case(custom_setattr_passed_in, lambda: (Logged(), _x()), graphs=1),
    obj_case(custom_setattr_new_object, lambda: (_x(),), graphs=1),
    obj_case(instance_dict_access, lambda: (TensorBox(_x()), _y()), graphs=1),
    obj_case(
        instance_dict_iterate,
        lambda: (TensorBox(_x(), 2),),
        graphs=0,
    ),
    obj_case(vars_builtin, lambda: (TensorBox(_x(), 2),), graphs=0),
    obj_case(delete_then_class_fallback, lambda: (Holder(1),), graphs=0),
    obj_case(tensor_attr_mutated_in_place, lambda: (TensorBox(_x()),), graphs=1),
    obj_case(new_object_escapes_into_arg_list, lambda: ([TensorBox(_y())], _x()), graphs=1),
    obj_case(linked_nodes, lambda: (_x(),), graphs=1),
    obj_case(class_attribute_write, lambda: (_x(),), graphs=1),
    obj_case(getattr_default_chain, lambda: (_x(),), graphs=1),
    obj_case(object_in_dict_values, lambda: (_x(),), graphs=1),
]


@pytest.mark.parametrize("fn,make_args,opts", OBJECT_CASES)
def test_objects(fn, make_args, opts):
    assert_same_objects(fn, make_args, **opts)


OBJECT_RAISES = [
    obj_case(getattr_fallback_raises, lambda: (_x(),)),
    obj_case(property_setter_raises, lambda: (Temperature(1),)),
    obj_case(property_no_setter_raises, lambda: (Temperature(1),)),
    obj_case(slots_new_attr_raises, lambda: (_x(),)),
    obj_case(slots_unset_read_raises, lambda: (_x(),)),
    obj_case(dunder_not_implemented_both_raises, lambda: (_x(),)),
    obj_case(dunder_mul_type_error, lambda: (_x(),)),
    obj_case(passed_in_attr_delete_missing_raises, lambda: (TensorBox(_x()),)),
]


@pytest.mark.parametrize("fn,make_args,opts", OBJECT_RAISES)
def test_objects_raise_like_eager(fn, make_args, opts):
    assert_same_objects(fn, make_args, fullgraph=False, raises=True, **opts)


def call_module_arg(m, x):
    return m(x) + 1


MODULE_CASES = [
    case(Net(), t(2, 4), id="module_plain"),
    case(NetChild(), t(2, 4), id="module_super_forward_no_args"),
    case(NetExplicitSuper(), t(2, 4), id="module_super_forward_with_args"),
    case(NetHelper(), t(2, 4), id="module_helper_method"),
    # a module passed as an argument is guarded by identity and the harness
    # passes a fresh copy on each call: one graph per call
    case(call_module_arg, NetChild(), t(2, 4), id="module_arg_super_forward_no_args", graphs=2),
    case(call_module_arg, NetExplicitSuper(), t(2, 4), id="module_arg_super_forward_with_args", graphs=2),
]


@pytest.mark.parametrize(CASE_ARGS, MODULE_CASES)
def test_module_subclasses(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)
