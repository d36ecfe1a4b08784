"""Bytecode families of CPython 3.11 inside compiled frames (compiled vs eager).

COPY/SWAP (swaps, chained comparisons, augmented subscripts),
UNPACK_SEQUENCE/UNPACK_EX, BUILD_* (tuple/list/set/map/const-key map/slice/
string), LIST_EXTEND/SET_UPDATE/DICT_MERGE/DICT_UPDATE, CALL_FUNCTION_EX,
KW_NAMES, FORMAT_VALUE/BUILD_STRING, MAKE_FUNCTION (defaults, kwdefaults,
annotations, closures), cells (MAKE_CELL/COPY_FREE_VARS/LOAD_DEREF/
STORE_DEREF/DELETE_DEREF), IS_OP/CONTAINS_OP and IMPORT_NAME/IMPORT_FROM of
modules that are already imported.

Every program is checked against eager Python first; ``graphs=1`` is the
default (one graph holding the tensor ops), ``graphs=0`` marks programs
without any tensor op.
"""

import pytest
import torch

from helpers import CASE_ARGS, case, t
from python_semantics.support import run_case, xfail

# --------------------------------------------------------------------------
# COPY / SWAP
# --------------------------------------------------------------------------


def swap_tensors(x, y):
    a, b = x, y
    a, b = b, a
    return a - b


def rotate_three(x, y, z):
    a, b, c = x, y, z
    a, b, c = c, a, b
    return a * 1 + b * 2 + c * 3


def swap_ints(a, b):
    a, b = b, a
    return a, b, a - b


def swap_list_items(xs):
    xs[0], xs[1] = xs[1], xs[0]
    return xs[0] - xs[1]


def chained_compare_ints(a, b, c):
    return a < b < c, a < b > c, a == b == c, a != b != c, a <= a < b


def chained_compare_shape(x):
    if 1 < x.shape[0] <= 4:
        return x + 1
    return x - 1


def chained_compare_short_circuit(x):
    calls = []

    def mid():
        calls.append("mid")
        return 5

    r = 10 < mid() < 20
    return x * len(calls), r


def chained_compare_in_is(x):
    lst = [1, 2]
    return x + 1, 1 in lst is not None, None is None is not False


def augassign_subscript_list(xs, x):
    xs[0] += x
    xs[1] *= 2
    return xs


def augassign_subscript_dict(x):
    d = {"a": x, "n": 1}
    d["a"] -= 1
    d["n"] += 41
    return d


class Acc:
    pass


def augassign_attribute(x):
    a = Acc()
    a.v = x
    a.v += 2
    a.v *= x
    return a.v


def augassign_nested_subscript(x):
    grid = [[0, 1], [2, 3]]
    grid[1][0] += 5
    return x * grid[1][0], grid


# --------------------------------------------------------------------------
# UNPACK_SEQUENCE / UNPACK_EX
# --------------------------------------------------------------------------


def unpack_chunk(x):
    a, b = x.chunk(2)
    return a * b


def unpack_list_arg(xs):
    a, b, c = xs
    return a + b * c


def unpack_ex_middle(x):
    a, *b, c = [1, 2, 3, 4, 5]
    return x * a + c, b


def unpack_ex_tensors(xs):
    first, *rest = xs
    return first + sum(rest)


def unpack_ex_empty_star(x):
    a, *b = (x,)
    return a + 1, b


def unpack_ex_tail(x):
    *init, last = range(5)
    return x * last, init


def unpack_nested(x):
    (a, b), c = (x, 2), 3
    return a * b + c


def unpack_string(x):
    a, b, c = "xyz"
    return x + 1, a + c + b


def unpack_dict_keys(x):
    a, b = {"k": 1, "j": 2}
    return x * 2, a, b


def unpack_shape(x):
    n, c = x.shape
    return x.reshape(c, n) * n


def unpack_for_nested(xs):
    out = 0
    for i, (a, b) in enumerate(zip(xs, xs[1:])):
        out = out + (a - b) * i
    return out


def unpack_for_star(x):
    total = 0
    for a, *rest in [(1, 2, 3), (4, 5), (6,)]:
        total += a * 10 + len(rest)
    return x + total


def unpack_too_many(x):
    a, b = [1, 2, 3]
    return x


def unpack_too_few(x):
    a, b, c = (x, x)
    return a


def unpack_ex_too_few(x):
    a, b, *c = [x]
    return a


def unpack_non_iterable(x):
    a, b = 5
    return x


# --------------------------------------------------------------------------
# BUILD_*
# --------------------------------------------------------------------------


def build_tuple_list_set(x):
    tup = (x, x + 1)
    lst = [x * 2, 3]
    st = {3, 1, 2}
    return tup, lst, sorted(st)


def build_const_key_map(x):
    return {"a": x + 1, "b": x * 2, "c": 3}


def build_map_computed_keys(x):
    k = "key" + str(2)
    return {k: x, k.upper(): x - 1, 3: "three"}


def build_map_duplicate_keys(x):
    return {"a": 1, "a": x}  # noqa: F601 - duplicate key is the point


def build_slices(x):
    return x[1:3], x[::2], x[slice(1, None)], x[-3:-1], x[::-1 * -1]


def build_slice_list(x):
    lst = [0, 1, 2, 3, 4, 5]
    s = slice(1, 5, 2)
    return x + 1, lst[s], lst[::-1], lst[:-2], lst[10:], s.start, s.stop, s.step


def build_slice_object_attrs(x):
    s = slice(2, None)
    return x[s], s.indices(6)


def build_string_fstring(x):
    n = x.shape[0]
    return x * 2, f"n={n}", f"{n}{n}"


def build_set_from_shapes(x):
    dims = {x.dim(), x.shape[0], x.shape[1]}
    return x + len(dims), sorted(dims)


def build_empty_containers(x):
    return x, [], (), {}, len(set())


def build_set_duplicates(x):
    s = {1, 2, 2, 3, 1}
    return x * len(s)


def build_list_of_lists(x):
    m = [[x, x + 1], [x + 2]]
    return m[0][1] + m[1][0], len(m), len(m[0])


# --------------------------------------------------------------------------
# LIST_EXTEND / SET_UPDATE / DICT_MERGE / DICT_UPDATE / CALL_FUNCTION_EX
# --------------------------------------------------------------------------


def _add3(a, b, c=0):
    return a + b + c


def _kw_only(a, *, scale=1, shift=0):
    return a * scale + shift


def _collect(*args, **kwargs):
    return args, kwargs


def list_extend_star(xs, ys):
    return [*xs, *ys]


def tuple_star(xs, x):
    return (*xs, x * 2)


def list_extend_range_and_str(x):
    return x + 1, [*range(3), *"ab", *(7, 8)]


def set_update_star(x):
    a = {1, 2}
    b = [2, 3]
    return x * 2, sorted({*a, *b, 9})


def dict_merge_override(x):
    a = {"p": 1, "q": 2}
    b = {"q": x, "r": 3}
    return {**a, **b}


def dict_update_literal(x):
    base = {"a": 1}
    return {**base, "k": x, **{"z": 0}}


def call_star_args(x, y):
    args = (x, y)
    return _add3(*args)


def call_star_and_positional(x, y):
    rest = [y]
    return _add3(x, *rest, c=2)


def call_star_kwargs(x):
    kw = {"scale": 3, "shift": 1}
    return _kw_only(x, **kw)


def call_star_both(x, y):
    args = [x]
    kwargs = {"b": y, "c": 5}
    return _add3(*args, **kwargs)


def call_collect_args(x):
    args, kwargs = _collect(x, 1, *[2, 3], k=4, **{"j": 5})
    return args[0] * args[1], args[1:], kwargs


def call_torch_star(xs):
    return torch.cat([*xs], dim=0), torch.add(*xs[:2])


def call_view_star_shape(x):
    shape = (x.shape[1], x.shape[0])
    return x.reshape(*shape)


def call_builtin_star(x):
    vals = [3, 9, 1]
    return x * max(*vals) + min(*vals)


def call_dict_merge_duplicate(x):
    kw = {"b": 1}
    return _add3(x, b=2, **kw)


def call_star_non_iterable(x):
    return _add3(*5)


def call_star_kwargs_not_mapping(x):
    return _kw_only(x, **[1])


def call_star_kwargs_generator(x):
    return _add3(*(v * 2 for v in (x, x)))


# --------------------------------------------------------------------------
# KW_NAMES
# --------------------------------------------------------------------------


def _scaled(x, scale=1, shift=0, *, power=1):
    return (x * scale + shift) ** power


def kw_names_user(x):
    return _scaled(x, scale=2, shift=1), _scaled(x, power=2, shift=3)


def kw_names_torch(x):
    return torch.sum(x, dim=0, keepdim=True), x.sum(dim=1), torch.clamp(x, min=-0.5, max=0.5)


def kw_names_builtin(x):
    lst = [3, 1, 2]
    return x + 1, sorted(lst, reverse=True), sorted(lst, key=lambda v: -v)


def kw_names_lambda(x):
    f = lambda a, b=1, *, c=2: a * b + c  # noqa: E731
    return f(x, c=5), f(b=3, a=x)


def kw_names_unexpected(x):
    return _scaled(x, bogus=1)


def kw_names_missing_required(x):
    return _add3(x, c=1)


# --------------------------------------------------------------------------
# FORMAT_VALUE / BUILD_STRING
# --------------------------------------------------------------------------


def fstring_specs(x):
    n = 7
    f = 3.14159
    s = "ab"
    return x + 1, [f"{n:03d}", f"{f:.2f}", f"{n:>5}|", f"{n:<4}|", f"{n:^5}|", f"{f:e}", f"{n:x}", f"{n:b}"]


def fstring_conversions(x):
    s = "hé"
    return x * 2, [f"{s!r}", f"{s!s}", f"{s!a}", f"{3!r}", f"{None}", f"{True}", f"{1.5!r:>6}"]


def fstring_shape(x):
    return x.sum(), f"{x.shape}", f"{x.shape[0]}x{x.shape[1]}", f"{tuple(x.shape)}", f"{x.dim()}d"


def fstring_dtype_device(x):
    return x + 0, f"{x.dtype}", f"{x.device}", f"{x.dtype}".split(".")[-1]


def fstring_nested_spec(x):
    width, prec = 8, 3
    v = 2.0 / 3.0
    return x * 0, f"{v:{width}.{prec}f}", f"{'ab':*^{width}}"


def fstring_containers(x):
    lst = [1, "a", None]
    d = {"k": (1, 2)}
    return x * 3, f"{lst}", f"{d}", f"{(1,)}", f"{set()}"


def fstring_as_dict_keys(x):
    out = {}
    for i in range(3):
        out[f"layer{i}"] = x * i
    return out


def fstring_expression(x):
    a, b = 2, 5
    return x - 1, f"{a + b}", f"{'a' + 'b'}", f"{a * b:04}", f"{[i for i in range(3)]}"


def percent_formatting(x):
    return x + 1, "%d-%s" % (3, "a"), "%.3f" % 1.5, "%5s|" % "ab", "%(k)s" % {"k": 9}


def str_format_method(x):
    return x * 1, "{}-{}".format(1, "b"), "{a}{b:>3}".format(a=1, b=2), "{0}{0}".format("z")


def format_builtin(x):
    return x + 2, format(255, "x"), format(3.5, ".1f"), format("s", "^3"), repr("q"), ascii("é")


class Money:
    def __init__(self, v):
        self.v = v

    def __format__(self, spec):
        return f"${self.v:{spec or 'd'}}"

    def __str__(self):
        return f"M{self.v}"

    def __repr__(self):
        return f"Money({self.v})"


def fstring_object_dunder_format(x):
    m = Money(5)
    return x * 2, f"{m}", f"{m:03d}", f"{m!s}", f"{m!r}", str(m), repr(m)


def fstring_bad_spec(x):
    return f"{'abc':d}"


# --------------------------------------------------------------------------
# MAKE_FUNCTION: defaults, kwdefaults, annotations, closures
# --------------------------------------------------------------------------


def make_function_defaults(x):
    def g(a, b=2, c=3):
        return a * b + c

    return g(x), g(x, 4), g(x, c=0)


def make_function_kwdefaults(x):
    def g(a, *, k=3, m):
        return a * k + m

    return g(x, m=1), g(x, k=1, m=0)


def make_function_annotations(x):
    def g(a: torch.Tensor, b: int = 2) -> torch.Tensor:
        return a * b

    return g(x), g(x, b=5)


def make_function_default_from_frame(x):
    k = x.shape[0]

    def g(a, scale=k):
        return a * scale

    k = 100
    return g(x)


def make_function_tensor_default(x):
    def g(a, b=x * 2):
        return a + b

    return g(x), g(x, x)


def make_function_closure(x):
    k = 3

    def g(a):
        return a * k + x

    return g(x)


def make_function_lambdas_default_capture(x):
    fs = [lambda v, i=i: v * i for i in range(3)]
    return [f(x) for f in fs]


def make_function_lambdas_late_binding(x):
    fs = [lambda v: v * i for i in range(3)]
    return [f(x) for f in fs]


def make_function_attributes(x):
    def g(a, b=1, *, c=2):
        return a

    return g(x) + 1, g.__name__, g.__defaults__, g.__kwdefaults__, g.__code__.co_argcount


def make_function_mutable_default(x):
    def g(v, acc=[]):  # noqa: B006 - shared default is the point
        acc.append(v)
        return len(acc)

    return x * (g(1) + g(2) * 10)


def make_function_varargs_defaults(x):
    def g(a, *rest, scale=2, **extra):
        return a * scale + len(rest) + len(extra)

    return g(x), g(x, 1, 2), g(x, scale=3, k=1)


# --------------------------------------------------------------------------
# cells: MAKE_CELL / COPY_FREE_VARS / LOAD_DEREF / STORE_DEREF / DELETE_DEREF
# --------------------------------------------------------------------------


def cell_nonlocal_counter(x):
    n = 0

    def inc():
        nonlocal n
        n += 1

    inc()
    inc()
    inc()
    return x * n


def cell_nonlocal_tensor_acc(x):
    acc = x

    def add(v):
        nonlocal acc
        acc = acc + v

    add(x)
    add(1)
    return acc


def cell_argument_captured(x):
    def g():
        return x + 1

    return g() * 2


def cell_argument_rebound_by_inner(x):
    def g():
        nonlocal x
        x = x * 3

    g()
    return x


def cell_frame_write_after_closure(x):
    k = 1

    def g(v):
        return v * k

    k = 5
    return g(x)


def cell_two_levels(x):
    total = 0

    def outer():
        def inner():
            nonlocal total
            total += 10

        inner()
        inner()

    outer()
    return x + total


def cell_shared_between_closures(x):
    state = 0

    def inc():
        nonlocal state
        state += 1

    def get():
        return state

    inc()
    inc()
    return x * get()


def cell_loop_closures(x):
    counters = []
    for i in range(3):

        def make(j):
            def f(v):
                return v + j

            return f

        counters.append(make(i))
    return [c(x) for c in counters]


def cell_closure_list_mutation(x):
    seen = []

    def record(v):
        seen.append(v)

    record(x)
    record(x * 2)
    return seen, len(seen)


def cell_delete_deref(x):
    k = 2

    def g():
        return k

    r = g()
    del k
    return x * r


def cell_unbound_read(x):
    def g():
        return k

    r = g()
    k = 1
    return x * r


def cell_counter_factory(x):
    def make_counter():
        c = 0

        def step():
            nonlocal c
            c += 1
            return c

        return step

    s1 = make_counter()
    s2 = make_counter()
    s1()
    s1()
    s2()
    return x * s1() + s2()


# --------------------------------------------------------------------------
# IS_OP / CONTAINS_OP
# --------------------------------------------------------------------------


def is_none_checks(x, y=None):
    return (x + 1 if y is None else x + y), y is not None, x is not None


def is_same_object(x, y):
    return x + y, x is y, x is x, y is not x


def is_same_object_alias(x):
    y = x
    return x * 2, y is x


def is_singletons(x):
    return x + 1, True is True, (None is False), [] is not [], x.dtype is torch.float32


def contains_list_tuple(x):
    return x * 2, 1 in [1, 2], 3 not in (1, 2), "b" in ("a", "b"), None in [0, None]


def contains_dict(x):
    d = {"k": x, "j": 1}
    return ("k" in d), ("z" not in d), ("j" in d.keys()), d["k"] + 1, 1 in {"a": 1}.values()


def contains_range_str_set(x):
    return x * 3, 3 in range(5), 7 in range(0, 10, 2), "ab" in "cabd", 2 in {1, 2}, 3 in frozenset([3])


def contains_tensor_identity(x, y):
    lst = [x, y]
    return x + y, x in lst, y in (y,), x in [x]


def contains_shape(x):
    return x + 1, 3 in x.shape, 99 in x.shape


class EvenBag:
    def __contains__(self, item):
        return item % 2 == 0


def contains_user_object(x):
    b = EvenBag()
    return x * 2, 4 in b, 3 in b, 3 not in b


def contains_unhashable_in_set(x):
    return [1] in {1, 2}


def contains_not_container(x):
    return 1 in 5


# --------------------------------------------------------------------------
# IMPORT_NAME / IMPORT_FROM of already-imported modules
# --------------------------------------------------------------------------


def import_math(x):
    import math

    return x * math.sqrt(4.0) + math.floor(2.7), math.pi > 3


def import_from_as(x):
    from torch.nn import functional as F

    return F.relu(x) + F.gelu(x)


def import_dotted_as(x):
    import torch.nn.functional as F2

    return F2.softmax(x, dim=-1)


def import_from_names(x):
    from math import floor, pi

    return x * floor(pi)


def import_submodule_attr(x):
    import torch.nn

    lin_cls = torch.nn.Linear
    return x + 1, lin_cls.__name__


def import_collections_abc(x):
    import collections.abc

    return x * 2, isinstance([], collections.abc.Sequence), isinstance({}, collections.abc.Mapping)


def import_operator(x):
    import operator

    return operator.add(x, 1), operator.mul(3, 4), operator.itemgetter(1)([5, 6])


def import_torch_inside(x):
    import torch as T

    return T.relu(x) * T.tensor(2.0)


def import_os_path(x):
    import os.path

    return x + 1, os.path.join("a", "b"), os.path.basename("/q/r.txt")


def import_star_via_getattr(x):
    import math as m

    return x + getattr(m, "e")


# --------------------------------------------------------------------------
# loops, jumps and small statements
# --------------------------------------------------------------------------


def for_else_no_break(x):
    for i in range(3):
        x = x + i
    else:
        x = x * 2
    return x


def for_else_with_break(x):
    for i in range(5):
        if i == 2:
            break
        x = x + i
    else:
        x = x * 100
    return x, i


def while_else_and_counter(x):
    i = 0
    while i < 3:
        x = x * 1.5
        i += 1
    else:
        x = x - i
    return x


def nested_loops_break_continue(x):
    pairs = []
    for i in range(4):
        if i == 1:
            continue
        for j in range(4):
            if j > i:
                break
            pairs.append((i, j))
    return x + len(pairs), pairs


def walrus_in_condition(x):
    data = [3, 8, 1]
    if (n := len(data)) > 2:
        x = x * n
    while (k := data.pop()) != 8:
        x = x + k
    return x, n, k, data


def del_local_and_rebind(x):
    y = x + 1
    del y
    y = x * 3
    return y


def augmented_immutables(x):
    tp = (1,)
    tp += (2, 3)
    s = "a"
    s += "bc"
    s *= 2
    n = 5
    n **= 2
    n //= 3
    n %= 5
    n <<= 3
    n |= 1
    return x * n, tp, s


def ternary_chain(x, k):
    label = "neg" if k < 0 else "zero" if k == 0 else "small" if k < 3 else "big"
    return x * (1 if label == "big" else 2), label


def star_in_return_and_subscript(x):
    rest = [1, 2]
    d = {(1, 2): x}
    return (x, *rest), d[1, 2] * 2, d[(*rest,)] + 1


def not_and_unary_ops(x):
    a, b = 3, 0
    return x * (not b), not a, -(-a), ~b, +a, not [], not [0]


def nested_functions_same_names(x):
    def f(v):
        def f(v):
            return v * 2

        return f(v) + 1

    return f(x)


def loop_over_dict_while_building(x):
    src = {"a": 1, "b": 2}
    out = {}
    for k, v in src.items():
        out[k * 2] = x * v
    return out


def global_constant_reads(x):
    return x * SCALE_CONST + len(NAMES_CONST), NAMES_CONST[-1]


SCALE_CONST = 3
NAMES_CONST = ("a", "b", "c")


# --------------------------------------------------------------------------
# case table
# --------------------------------------------------------------------------

X = t(4)
Y = t(4)
M = t(3, 4)
XS = [t(3), t(3), t(3)]


CASES = [
    # COPY / SWAP
    case(swap_tensors, X, Y),
    case(rotate_three, X, Y, t(4)),
    case(swap_ints, 3, 7, graphs=0),
    case(swap_list_items, [t(2), t(2)]),
    case(chained_compare_ints, 1, 2, 3, graphs=0),
    case(chained_compare_ints, 3, 2, 1, id="chained_compare_ints_desc", graphs=0),
    case(chained_compare_shape, M),
    case(chained_compare_shape, t(6, 2), id="chained_compare_shape_false"),
    case(chained_compare_short_circuit, X),
    case(chained_compare_in_is, X),
    case(augassign_subscript_list, [t(3), t(3)], t(3)),
    case(augassign_subscript_dict, X),
    case(augassign_attribute, X),
    case(augassign_nested_subscript, X),
    # UNPACK
    case(unpack_chunk, t(6)),
    case(unpack_list_arg, XS),
    case(unpack_ex_middle, X),
    case(unpack_ex_tensors, XS),
    case(unpack_ex_empty_star, X),
    case(unpack_ex_tail, X),
    case(unpack_nested, X),
    case(unpack_string, X),
    case(unpack_dict_keys, X),
    case(unpack_shape, M),
    case(unpack_for_nested, XS),
    case(unpack_for_star, X),
    # BUILD_*
    case(build_tuple_list_set, X),
    case(build_const_key_map, X),
    case(build_map_computed_keys, X),
    case(build_map_duplicate_keys, X, graphs=0),
    case(build_slices, t(6)),
    case(build_slice_list, X),
    case(build_slice_object_attrs, t(6)),
    case(build_string_fstring, X),
    case(build_set_from_shapes, M),
    case(build_empty_containers, X, graphs=0),
    case(build_set_duplicates, X),
    case(build_list_of_lists, X),
    # LIST_EXTEND / DICT_MERGE / CALL_FUNCTION_EX
    case(list_extend_star, [t(2)], [t(2), t(2)], graphs=0),
    case(tuple_star, [t(2), t(2)], X),
    case(list_extend_range_and_str, X),
    case(set_update_star, X),
    case(dict_merge_override, X, graphs=0),
    case(dict_update_literal, X, graphs=0),
    case(call_star_args, X, Y),
    case(call_star_and_positional, X, Y),
    case(call_star_kwargs, X),
    case(call_star_both, X, Y),
    case(call_collect_args, X),
    case(call_torch_star, [t(2, 3), t(2, 3)]),
    case(call_view_star_shape, M),
    case(call_builtin_star, X),
    case(call_star_kwargs_generator, X),
    # KW_NAMES
    case(kw_names_user, X),
    case(kw_names_torch, M),
    case(kw_names_builtin, X),
    case(kw_names_lambda, X),
    # FORMAT_VALUE / BUILD_STRING
    case(fstring_specs, X),
    case(fstring_conversions, X),
    case(fstring_shape, M),
    case(fstring_dtype_device, X),
    case(fstring_nested_spec, X),
    case(fstring_containers, X),
    case(fstring_as_dict_keys, X),
    case(fstring_expression, X),
    case(percent_formatting, X),
    case(str_format_method, X),
    case(format_builtin, X),
    case(fstring_object_dunder_format, X),
    # MAKE_FUNCTION
    case(make_function_defaults, X),
    case(make_function_kwdefaults, X),
    case(make_function_annotations, X),
    case(make_function_default_from_frame, X),
    case(make_function_tensor_default, X),
    case(make_function_closure, X),
    case(make_function_lambdas_default_capture, X),
    case(make_function_lambdas_late_binding, X),
    case(make_function_attributes, X),
    case(make_function_mutable_default, X),
    case(make_function_varargs_defaults, X),
    # cells
    case(cell_nonlocal_counter, X),
    case(cell_nonlocal_tensor_acc, X),
    case(cell_argument_captured, X),
    case(cell_argument_rebound_by_inner, X),
    case(cell_frame_write_after_closure, X),
    case(cell_two_levels, X),
    case(cell_shared_between_closures, X),
    case(cell_loop_closures, X),
    case(cell_closure_list_mutation, X),
    case(cell_delete_deref, X),
    case(cell_counter_factory, X),
    # IS_OP / CONTAINS_OP
    case(is_none_checks, X),
    case(is_none_checks, X, Y, id="is_none_checks_given"),
    case(is_same_object, X, Y),
    case(is_same_object, X, X, id="is_same_object_aliased"),
    case(is_same_object_alias, X),
    case(is_singletons, X),
    case(contains_list_tuple, X),
    case(contains_dict, X),
    case(contains_range_str_set, X),
    case(contains_tensor_identity, X, Y),
    case(contains_shape, M),
    case(contains_user_object, X),
    # IMPORT
    case(import_math, X),
    case(import_from_as, X),
    case(import_dotted_as, M),
    case(import_from_names, X),
    case(import_submodule_attr, X),
    case(import_collections_abc, X),
    case(import_operator, X),
    case(import_torch_inside, X),
    case(import_os_path, X),
    case(import_star_via_getattr, X),
    # loops, jumps, small statements
    case(for_else_no_break, X),
    case(for_else_with_break, X),
    case(while_else_and_counter, X),
    case(nested_loops_break_continue, X),
    case(walrus_in_condition, X),
    case(del_local_and_rebind, X),
    case(augmented_immutables, X),
    case(ternary_chain, X, -1),
    case(ternary_chain, X, 0, id="ternary_chain_zero"),
    case(ternary_chain, X, 5, id="ternary_chain_big"),
    case(star_in_return_and_subscript, X),
    case(not_and_unary_ops, X),
    case(nested_functions_same_names, X),
    case(loop_over_dict_while_building, X),
    case(global_constant_reads, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_opcodes(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


RAISES = [
    case(unpack_too_many, X),
    case(unpack_too_few, X),
    case(unpack_ex_too_few, X),
    case(unpack_non_iterable, X),
    case(call_dict_merge_duplicate, X),
    case(call_star_non_iterable, X),
    case(call_star_kwargs_not_mapping, X),
    case(kw_names_unexpected, X),
    case(kw_names_missing_required, X),
    case(fstring_bad_spec, X),
    case(cell_unbound_read, X),
    case(contains_unhashable_in_set, X),
    case(contains_not_container, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_opcodes_raise_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)
