"""Tuples, lists, dicts, slices and None as values inside the function.

Input containers are only read (never appended to); new containers built
inside the function may be mutated freely.
"""

import pytest
import torch

from helpers import CASE_ARGS, assert_raises_same, assert_same, assert_same_calls, case, t


def tuple_build_index(x, y):
    tup = (x, y, x + y)
    return tup[2] * tup[0]


def tuple_unpack(x):
    a, b = x * 2, x + 1
    return b - a


def tuple_star_unpack(xs):
    first, *rest = xs
    return first + rest[-1], len(rest)


def tuple_input(pair):
    a, b = pair
    return a @ b


def tuple_concat_repeat(x):
    dims = (1,) + (2,) * 2
    return x.view(-1, *dims[1:]), len(dims)


def list_build_append(x):
    out = []
    out.append(x)
    out.append(x * 2)
    out.extend([x + 1, x - 1])
    return out[1] + out[3], len(out)


def list_setitem_pop(x):
    lst = [x, x + 1, x + 2]
    lst[0] = x * 10
    last = lst.pop()
    return lst[0] + last, len(lst)


def list_input_index(xs):
    return xs[0] + xs[-1] * xs[1]


def list_input_slice(xs):
    return xs[1:], xs[::-1][0]


def list_concat(xs, ys):
    both = xs + ys
    return torch.stack(both)


def list_of_tensors_to_cat(xs):
    return torch.cat(xs, dim=1)


def list_comprehension(xs):
    return [x * i for i, x in enumerate(xs)]


def list_insert_reverse(x):
    lst = [x, x * 2]
    lst.insert(0, x - 1)
    lst.reverse()
    return lst


def list_contains_const(x):
    opts = ["a", "b"]
    return x * 2 if "b" in opts else x, "c" in opts


def list_of_constants(x, ks):
    return x * ks[0] + ks[1], ks


def list_index_method(x):
    names = ["q", "k", "v"]
    return x * names.index("k")


def dict_build_get(x):
    d = {"a": x, "b": x * 2}
    return d["a"] + d.get("b") + d.get("c", x)


def dict_setitem_update(x):
    d = {}
    d["a"] = x
    d.update({"b": x + 1})
    d["a"] = d["a"] * 3
    return d


def dict_input(d):
    return d["w"] @ d["x"] + d["b"]


def dict_iteration(d):
    acc = 0
    for k, v in d.items():
        acc = acc + v
    return acc, list(d.keys())


def dict_keys_values(d):
    return sum_list(list(d.values())), len(d), "x" in d


def sum_list(vals):
    acc = vals[0]
    for v in vals[1:]:
        acc = acc + v
    return acc


def dict_comprehension(x):
    return {k: x * i for i, k in enumerate(("a", "b", "c"))}


def dict_int_keys(x):
    d = {0: x, 1: x + 1}
    return d[1] - d[0]


def dict_pop(x):
    d = {"a": x, "b": x * 2}
    b = d.pop("b")
    return b, d


def nested_containers(cfg):
    return cfg["layers"][1]["w"] * cfg["scale"][0]


def none_default_branch(x, y=None):
    if y is None:
        return x * 2
    return x + y


def none_is_not(x, bias):
    out = x * 3
    if bias is not None:
        out = out + bias
    return out


def none_in_tuple(x):
    pair = (x, None)
    return pair[0] + 1 if pair[1] is None else pair[0]


def slice_object(x):
    s = slice(1, None)
    return x[s], x[:, s]


def slice_in_container(x, spec):
    return x[spec["rows"]]


def tuple_compare_const(x):
    return x * 2 if (1, 2) < (1, 3) else x


def len_of_list_input(x, xs):
    return x * len(xs)


def zip_to_dict(xs):
    names = ("a", "b")
    return dict(zip(names, xs))


def list_mul_const(x):
    lst = [x] * 3
    return torch.stack(lst), len(lst)


CASES = [
    case(tuple_build_index, t(3), t(3)),
    case(tuple_unpack, t(3)),
    case(tuple_star_unpack, (t(3), t(3), t(3))),
    case(tuple_input, (t(2, 3), t(3, 2))),
    case(tuple_concat_repeat, t(2, 2, 2)),
    case(list_build_append, t(3)),
    case(list_setitem_pop, t(3)),
    case(list_input_index, [t(3), t(3), t(3)]),
    case(list_input_slice, [t(3), t(2), t(1)], graphs=None),
    case(list_concat, [t(3)], [t(3), t(3)]),
    case(list_of_tensors_to_cat, [t(2, 1), t(2, 3)]),
    case(list_comprehension, [t(3), t(3), t(3)]),
    case(list_insert_reverse, t(3)),
    case(list_contains_const, t(3)),
    case(list_of_constants, t(3), [2, 5]),
    case(list_index_method, t(3)),
    case(dict_build_get, t(3)),
    case(dict_setitem_update, t(3)),
    case(dict_input, {"w": t(2, 3), "x": t(3, 4), "b": t(4)}),
    case(dict_iteration, {"a": t(3), "b": t(3), "c": t(3)}),
    case(dict_keys_values, {"x": t(3), "y": t(3)}),
    case(dict_comprehension, t(3)),
    case(dict_int_keys, t(3)),
    case(dict_pop, t(3)),
    case(nested_containers, {"layers": [{"w": t(3)}, {"w": t(3)}], "scale": (2, 3)}),
    case(none_default_branch, t(3), id="none_default_branch_none"),
    case(none_default_branch, t(3), t(3), id="none_default_branch_tensor"),
    case(none_is_not, t(3), None, id="none_is_not_none"),
    case(none_is_not, t(3), t(3), id="none_is_not_tensor"),
    case(none_in_tuple, t(3)),
    case(slice_object, t(3, 3)),
    case(slice_in_container, t(5, 2), {"rows": slice(0, 4, 2)}),
    case(tuple_compare_const, t(3)),
    case(len_of_list_input, t(3), [t(1), t(1)]),
    case(zip_to_dict, [t(3), t(2)], graphs=None),
    case(list_mul_const, t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_containers(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(dict_input, {"w": t(2, 3), "x": t(3, 4), "b": t(4)}),
    case(list_build_append, t(3)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_containers_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def tuple_index_error(x):
    tup = (x, x)
    return tup[5]


def dict_key_error(x, key):
    d = {"a": x}
    return d[key] + 1


def test_tuple_index_error_raises():
    assert_raises_same(tuple_index_error, t(3))


def test_dict_key_error_raises():
    assert_raises_same(dict_key_error, t(3), "b")


def test_container_structure_changes_between_calls():
    assert_same_calls(list_input_index, [([t(3), t(3), t(3)],), ([t(3), t(3), t(3), t(3)],), ([t(2), t(2)],)])
    assert_same_calls(dict_input, [({"w": t(2, 3), "x": t(3, 4), "b": t(4)},), ({"b": t(4), "w": t(2, 3), "x": t(3, 4)},)])
    assert_same_calls(none_is_not, [(t(3), None), (t(3), t(3)), (t(3), None)])
    assert_same_calls(list_of_constants, [(t(3), [2, 5]), (t(3), [3, 5]), (t(3), [2, 5, 1])])


class _EqualsEverything:
    """A user object whose ``__eq__`` says True to anything (unhashable)."""

    def __eq__(self, other):
        return True

    __hash__ = None


def _user_eq_in_containers(x, o):
    return x + 1, (1, o) == (1, 5), 5 in [o], [o] == [3], (o,) != (2,), (2, 5) == (2, o), o in (4,)


def test_user_eq_inside_sequences_and_in():
    # PyObject_RichCompareBool inside tuple/list equality and `in` calls the
    # object's own __eq__ (reflected too); it used to answer False
    assert_same(_user_eq_in_containers, t(2), _EqualsEverything())
