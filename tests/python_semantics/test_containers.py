"""Built-in containers with their method sets inside compiled frames
(compiled vs eager): list, tuple, dict (views, get/setdefault/pop/popitem/
update/``|``, key order), set and frozenset (set results are returned
sorted so the comparison is deterministic).  Containers are created in the
frame or passed in; mutations of passed-in lists and dicts are compared
with eager's after the call.
"""

import pytest
import torch

from helpers import CASE_ARGS, case, t
from python_semantics.support import run_case, xfail

# --------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------


def list_append_extend_insert(x):
    lst = [1]
    lst.append(x)
    lst.extend([2, 3])
    lst.extend(range(2))
    lst.insert(0, "head")
    lst.insert(-1, 9)
    lst.insert(100, "tail")
    return lst


def list_pop_variants(x):
    lst = [x, 1, 2, 3, x * 2]
    last = lst.pop()
    first = lst.pop(0)
    mid = lst.pop(-2)
    return last + first, mid, lst


def list_remove_clear(x):
    lst = [3, 1, 3, 2]
    lst.remove(3)
    before = list(lst)
    lst.clear()
    return x * len(before), before, lst


def list_sort_key_reverse(x):
    words = ["pear", "fig", "banana", "kiwi"]
    a = sorted(words)
    words.sort(key=len)
    b = list(words)
    words.sort(key=lambda w: (len(w), w), reverse=True)
    return x + 1, a, b, words


def list_sort_stable(x):
    pairs = [(1, "b"), (0, "a"), (1, "a"), (0, "b")]
    pairs.sort(key=lambda p: p[0])
    return x * 2, pairs


def list_reverse_index_count(x):
    lst = [1, 2, 3, 2, 1, 2]
    lst.reverse()
    return x + lst.index(3), lst.count(2), lst.index(2, 2), lst


def list_copy_independent(x):
    a = [x, 1]
    b = a.copy()
    b.append(2)
    c = a[:]
    c[0] = 5
    return a, b, c


def list_slicing(x):
    lst = list(range(10))
    return x * 2, lst[2:5], lst[::-2], lst[-3:], lst[:0], lst[5:2], lst[1:8:3]


def list_slice_assignment(x):
    lst = [0, 1, 2, 3, 4, 5]
    lst[1:3] = ["a", "b", "c"]
    lst[::2] = [7, 8, 9, 10]
    lst[-1:] = []
    return x + len(lst), lst


def list_del(x):
    lst = [0, 1, 2, 3, 4, 5, 6]
    del lst[0]
    del lst[-1]
    del lst[1:3]
    del lst[::2]
    return x * 3, lst


def list_operators(x):
    a = [1, 2]
    b = a + [3]
    c = a * 2
    d = [x] * 3
    a += [4]
    a *= 2
    return b, c, d, a, [1, 2] < [1, 3], [1, 2] == [1, 2], [2] > [1, 9]


def list_of_tensors_mutated_arg(xs, x):
    xs.append(x)
    xs[0] = xs[0] * 2
    xs.insert(1, x + 1)
    return len(xs)


def list_arg_pop_and_extend(xs):
    last = xs.pop()
    xs.extend([last, last * 2])
    return last.sum()


def list_arg_sort_ints(lst, x):
    lst.sort(reverse=True)
    lst.append(0)
    return x * lst[0]


def list_arg_clear(xs):
    n = len(xs)
    total = sum(xs)
    xs.clear()
    return total * n


def list_arg_del_slice(xs):
    first = xs[0]
    del xs[1:]
    return first + 1


def list_constructor(x):
    return x + 1, list("abc"), list(range(3)), list((1, 2)), list({"k": 1, "j": 2}), list()


def list_nested_mutation(x):
    grid = [[0] * 3 for _ in range(2)]
    grid[1][2] = 5
    row = grid[0]
    row.append(9)
    return x * grid[1][2], grid


def list_iteration_append_during(x):
    lst = [1, 2]
    for v in lst:
        if v < 4:
            lst.append(v + 2)
    return x + len(lst), lst


def list_bool_len(x):
    empty = []
    full = [x]
    return (x if full else -x) + (1 if not empty else 0), len(full), bool(empty)


def list_in_tensor_ops(x):
    parts = [x, x * 2, x * 3]
    return torch.stack(parts).sum(0), torch.cat(parts[::2])


def list_index_missing(x):
    return [1, 2].index(3)


def list_remove_missing(x):
    lst = [1]
    lst.remove(5)
    return x


def list_pop_empty(x):
    return [].pop()


def list_index_out_of_range(x):
    return [x][3]


def list_slice_assign_extended_mismatch(x):
    lst = [0, 1, 2, 3]
    lst[::2] = [1, 2, 3]
    return x


# --------------------------------------------------------------------------
# tuple
# --------------------------------------------------------------------------


def tuple_basics(x):
    tp = (x, 1, "a", 1)
    ints = (1, "a", 1, 2)
    return tp[0] * 2, tp[1:], ints.count(1), ints.index("a"), len(tp), tp[-1], ints.index(1, 1)


def tuple_concat_repeat_compare(x):
    a = (1, 2)
    b = a + (3,)
    return x + 1, b, a * 2, a < b, a == (1, 2), (1, (2, 3)) == (1, (2, 3)), hash(a) == hash((1, 2))


def tuple_constructor(x):
    return x * 2, tuple([1, 2]), tuple("ab"), tuple(range(3)), tuple(), tuple(v for v in (5, 6))


def tuple_arg(tp):
    a, b = tp
    return a - b, tp[::-1]


def tuple_nested_unpack_return(x):
    tp = ((x, 1), (x * 2, 2))
    return tuple(v * k for v, k in tp)


def tuple_item_assign(x):
    tp = (1, 2)
    tp[0] = 5
    return x


# --------------------------------------------------------------------------
# dict
# --------------------------------------------------------------------------


def dict_views(x):
    d = {"b": 1, "a": x, "c": 3}
    return list(d.keys()), list(d.values()), list(d.items()), len(d.keys())


def dict_get_setdefault(x):
    d = {"a": x}
    g1 = d.get("a")
    g2 = d.get("z", 5)
    g3 = d.get("z")
    s1 = d.setdefault("a", 100)
    s2 = d.setdefault("n", 7)
    return g1 + s1, g2, g3, s2, d


def dict_pop_popitem(x):
    d = {"a": 1, "b": x, "c": 3}
    p = d.pop("b")
    q = d.pop("z", "missing")
    last = d.popitem()
    return p * 2, q, last, d


def dict_update_variants(x):
    d = {"a": 1}
    d.update({"b": x})
    d.update([("c", 3)])
    d.update(d2=4)
    d.update({"a": 10}, e=5)
    return d


def dict_or_operators(x):
    a = {"a": 1, "b": 2}
    b = {"b": x, "c": 3}
    m = a | b
    a |= {"z": 0}
    return m, a


def dict_key_order_after_mutation(x):
    d = {}
    d["z"] = 1
    d["a"] = 2
    d["m"] = x
    d["z"] = 5
    del d["a"]
    d["a"] = 6
    return list(d), d


def dict_iteration(x):
    d = {"p": 1, "q": 2}
    out = x
    for k in d:
        out = out + d[k]
    for k, v in d.items():
        out = out * v
    return out


def dict_constructor(x):
    return (
        x + 1,
        dict(a=1, b=2),
        dict([("k", 1), ("j", 2)]),
        dict({"a": 1}, b=3),
        dict(zip("ab", [1, 2])),
        dict.fromkeys(["u", "v"], 0),
        dict(),
    )


def dict_copy_clear(x):
    a = {"k": x, "n": 1}
    b = a.copy()
    b["n"] = 2
    c = dict(a)
    a.clear()
    return a, b, c


def dict_int_and_tuple_keys(x):
    d = {1: x, (2, 3): x * 2, None: 0, True: "t"}
    return d[1], d[(2, 3)], d[None], len(d)


def dict_equality(x):
    a = {"a": 1, "b": 2}
    b = {"b": 2, "a": 1}
    return x * 2, a == b, a != {"a": 1}, {"a": 1}.keys() == {"a": 1}.keys()


def dict_arg_mutation(d, x):
    d["new"] = x
    d["a"] = d["a"] * 2
    del d["b"]
    return len(d)


def dict_arg_update_pop(d):
    v = d.pop("a")
    d.update({"c": v + 1})
    d.setdefault("a", v * 3)
    return v


def dict_arg_iterate_values(d):
    return sum(d.values()), [k for k in d]


def dict_missing_key(x):
    d = {"a": x}
    return d["b"]


def dict_pop_missing(x):
    return {"a": 1}.pop("b")


def dict_popitem_empty(x):
    return {}.popitem()


def dict_unhashable_key(x):
    return {[1]: 2}


def dict_mutate_during_iteration(x):
    d = {"a": 1}
    for k in d:
        d[k + "x"] = 2
    return x


# --------------------------------------------------------------------------
# set and frozenset
# --------------------------------------------------------------------------


def set_add_discard_remove(x):
    s = {1, 2}
    s.add(3)
    s.add(2)
    s.discard(1)
    s.discard(99)
    s.remove(2)
    return x * len(s), sorted(s)


def set_algebra_methods(x):
    a = {1, 2, 3, 4}
    b = {3, 4, 5}
    return (
        x + 1,
        sorted(a.union(b)),
        sorted(a.intersection(b)),
        sorted(a.difference(b)),
        sorted(a.symmetric_difference(b)),
        a.issubset({1, 2, 3, 4, 5}),
        a.issuperset({1}),
        a.isdisjoint({9}),
    )


def set_operators(x):
    a = {1, 2, 3}
    b = {2, 3, 4}
    return x * 2, sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a <= a, a < a, {1} < a


def set_inplace_operators(x):
    a = {1, 2, 3}
    a |= {9}
    a &= {1, 2, 9}
    a -= {2}
    a ^= {1, 7}
    return x + len(a), sorted(a)


def set_update_methods(x):
    a = {1, 2}
    a.update([3, 4], (5,))
    a.intersection_update({1, 3, 5, 7})
    a.difference_update({1})
    a.symmetric_difference_update({5, 8})
    return x * 3, sorted(a)


def set_iteration_sorted(x):
    s = set([5, 1, 3, 1])
    out = x
    for v in sorted(s):
        out = out * 2 + v
    return out


def set_pop_copy_clear(x):
    a = {7}
    b = a.copy()
    v = a.pop()
    b.add(8)
    b.clear()
    return x * v, len(a), len(b)


def set_from_strings(x):
    return x + 1, sorted(set("hello")), sorted(set(["b", "a"])), len(set())


def set_comparisons(x):
    return x * 2, {1, 2} == {2, 1}, {1} != {2}, set() == set(), {1, 2} >= {2}


def set_of_shapes_dedup(xs):
    shapes = {tuple(v.shape) for v in xs}
    return torch.cat([v.flatten() for v in xs]), sorted(shapes)


def frozenset_basics(x):
    f = frozenset([3, 1, 2])
    g = frozenset((2, 5))
    return (
        x + len(f),
        sorted(f | g),
        sorted(f & g),
        sorted(f - g),
        sorted(f.union([9])),
        type(f.union([9])) is frozenset,
        f.issubset([1, 2, 3, 4]),
        hash(f) == hash(frozenset([1, 2, 3])),
    )


def frozenset_as_dict_key(x):
    d = {frozenset([1, 2]): x, frozenset(): 0}
    return d[frozenset([2, 1])] * 2, len(d)


def set_remove_missing(x):
    s = {1}
    s.remove(2)
    return x


def set_pop_empty(x):
    return set().pop()


def frozenset_add(x):
    frozenset([1]).add(2)
    return x


# --------------------------------------------------------------------------
# case table
# --------------------------------------------------------------------------

X = t(4)

CASES = [
    # list
    case(list_append_extend_insert, X, graphs=0),
    case(list_pop_variants, X),
    case(list_remove_clear, X),
    case(list_sort_key_reverse, X),
    case(list_sort_stable, X),
    case(list_reverse_index_count, X),
    case(list_copy_independent, X, graphs=0),
    case(list_slicing, X),
    case(list_slice_assignment, X),
    case(list_del, X),
    case(list_operators, X, graphs=0),
    case(list_of_tensors_mutated_arg, [t(4), t(4)], X),
    case(list_arg_pop_and_extend, [t(3), t(3)]),
    case(list_arg_sort_ints, [3, 1, 2], X),
    case(list_arg_clear, [t(3), t(3)]),
    case(list_arg_del_slice, [t(2), t(2), t(2)]),
    case(list_constructor, X),
    case(list_nested_mutation, X),
    case(list_iteration_append_during, X),
    case(list_bool_len, X),
    case(list_in_tensor_ops, X),
    # tuple
    case(tuple_basics, X),
    case(tuple_concat_repeat_compare, X),
    case(tuple_constructor, X),
    case(tuple_arg, (t(3), t(3))),
    case(tuple_nested_unpack_return, X),
    # dict
    case(dict_views, X, graphs=0),
    case(dict_get_setdefault, X),
    case(dict_pop_popitem, X),
    case(dict_update_variants, X, graphs=0),
    case(dict_or_operators, X, graphs=0),
    case(dict_key_order_after_mutation, X, graphs=0),
    case(dict_iteration, X),
    case(dict_constructor, X),
    case(dict_copy_clear, X, graphs=0),
    case(dict_int_and_tuple_keys, X),
    case(dict_equality, X),
    case(dict_arg_mutation, {"a": t(3), "b": t(3)}, X),
    case(dict_arg_update_pop, {"a": t(3), "b": 1}),
    case(dict_arg_iterate_values, {"x": t(2), "y": t(2)}),
    # set / frozenset
    case(set_add_discard_remove, X),
    case(set_algebra_methods, X),
    case(set_operators, X),
    case(set_inplace_operators, X),
    case(set_update_methods, X),
    case(set_iteration_sorted, X),
    case(set_pop_copy_clear, X),
    case(set_from_strings, X),
    case(set_comparisons, X),
    case(set_of_shapes_dedup, [t(2), t(3), t(2)]),
    case(frozenset_basics, X),
    case(frozenset_as_dict_key, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_containers(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


RAISES = [
    case(list_index_missing, X),
    case(list_remove_missing, X),
    case(list_pop_empty, X),
    case(list_index_out_of_range, X),
    case(list_slice_assign_extended_mismatch, X),
    case(tuple_item_assign, X),
    case(dict_missing_key, X),
    case(dict_pop_missing, X),
    case(dict_popitem_empty, X),
    case(dict_unhashable_key, X),
    case(dict_mutate_during_iteration, X),
    case(set_remove_missing, X),
    case(set_pop_empty, X),
    case(frozenset_add, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_containers_raise_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)
