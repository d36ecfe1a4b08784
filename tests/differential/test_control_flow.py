"""if/else and while/for over values known at trace time.

Conditions are constants, shapes, ``is None``, isinstance, ranges, and loops
run over range(), lists/tuples of tensors, enumerate/zip, dict items.  No
branch depends on tensor *values*.
"""

import pytest
import torch

from helpers import CASE_ARGS, assert_same, assert_same_calls, case, t


def if_flag(x, flag):
    if flag:
        return x.sin()
    else:
        return x.cos()


def if_elif_else(x, mode):
    if mode == "relu":
        y = torch.relu(x)
    elif mode == "tanh":
        y = torch.tanh(x)
    else:
        y = x
    return y + 1


def if_on_shape(x):
    if x.shape[0] > 2:
        return x[:2]
    return x * 2


def if_on_int_arg(x, n):
    if n % 2 == 0:
        return x * n
    return x - n


def if_is_none(x, y):
    if y is None:
        return x
    return x * y


def if_isinstance_tensor(x, y):
    if isinstance(y, torch.Tensor):
        return x + y
    return x * y


def if_isinstance_tuple(x, ks):
    if isinstance(ks, (list, tuple)):
        return x * ks[0]
    return x * ks


def ternary(x, flag):
    return x + 1 if flag else x - 1


def and_or_conditions(x, y):
    if y is not None and y.ndim == x.ndim:
        return x + y
    return x


def not_condition(x, flag):
    if not flag:
        return x * 5
    return x


def for_range(x):
    for i in range(3):
        x = x * 2 + i
    return x


def for_range_start_stop_step(x):
    acc = x
    for i in range(10, 2, -3):
        acc = acc + i
    return acc


def for_over_list(xs):
    acc = xs[0] * 0
    for v in xs:
        acc = acc + v
    return acc


def for_enumerate(xs):
    acc = 0
    for i, v in enumerate(xs):
        acc = acc + v * (i + 1)
    return acc


def for_zip(xs, ys):
    out = []
    for a, b in zip(xs, ys):
        out.append(a * b)
    return out


def for_range_len(xs):
    acc = xs[0]
    for i in range(1, len(xs)):
        acc = acc - xs[i]
    return acc


def for_dict_items(x, d):
    for k, v in d.items():
        if k == "scale":
            x = x * v
        else:
            x = x + v
    return x


def for_break(x):
    for i in range(10):
        if i == 3:
            break
        x = x + i
    return x


def for_continue(x):
    for i in range(5):
        if i % 2 == 1:
            continue
        x = x * 2 + i
    return x


def for_else(x):
    for i in range(3):
        x = x + i
    else:
        x = x * 10
    return x


def nested_loops(x):
    for i in range(2):
        for j in range(3):
            x = x + i * j
    return x


def while_counter(x):
    i = 0
    while i < 4:
        x = x * 0.5
        i += 1
    return x, i


def while_on_shape(x):
    while x.shape[0] > 1:
        x = x[::2] + x[1::2]
    return x


def loop_over_shape(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * i)
    return torch.stack(rows)


def early_return_in_loop(x):
    for i in range(5):
        x = x + 1
        if i == 2:
            return x, i
    return x, -1


def loop_over_tuple_of_constants(x):
    for s in (1, 2, 3):
        x = x * s
    return x


def branch_inside_loop_on_index(xs):
    acc = xs[0]
    for i, v in enumerate(xs[1:]):
        if i == 0:
            acc = acc * v
        else:
            acc = acc + v
    return acc


def loop_unpack_pairs(x):
    for a, b in [(1, 2), (3, 4)]:
        x = x * a + b
    return x


def if_on_dtype_and_ndim(x):
    if x.dtype == torch.float32 and x.ndim == 2:
        return x.t()
    return x


def loop_builds_dict(xs):
    out = {}
    for i, v in enumerate(xs):
        out[i] = v.sum()
    return out


def while_true_break(x):
    n = 0
    while True:
        n += 1
        x = x + n
        if n >= 3:
            break
    return x


CASES = [
    case(if_flag, t(3), True, id="if_flag_true"),
    case(if_flag, t(3), False, id="if_flag_false"),
    case(if_elif_else, t(3), "relu", id="if_elif_relu"),
    case(if_elif_else, t(3), "tanh", id="if_elif_tanh"),
    case(if_elif_else, t(3), "none", id="if_elif_else"),
    case(if_on_shape, t(4, 2), id="if_on_shape_big"),
    case(if_on_shape, t(2, 2), id="if_on_shape_small"),
    case(if_on_int_arg, t(3), 4, id="if_on_int_even"),
    case(if_on_int_arg, t(3), 3, id="if_on_int_odd"),
    case(if_is_none, t(3), None, graphs=None, id="if_is_none_none"),
    case(if_is_none, t(3), t(3), id="if_is_none_tensor"),
    case(if_isinstance_tensor, t(3), t(3), id="isinstance_tensor"),
    case(if_isinstance_tensor, t(3), 3, id="isinstance_int"),
    case(if_isinstance_tuple, t(3), (2, 3), id="isinstance_tuple"),
    case(if_isinstance_tuple, t(3), 5, id="isinstance_tuple_scalar"),
    case(ternary, t(3), True, id="ternary_true"),
    case(ternary, t(3), False, id="ternary_false"),
    case(and_or_conditions, t(3), t(3), id="and_or_same_ndim"),
    case(and_or_conditions, t(3), t(2, 3), id="and_or_other_ndim", graphs=None),
    case(and_or_conditions, t(3), None, id="and_or_none", graphs=None),
    case(not_condition, t(3), False),
    case(for_range, t(3), ops=6),
    case(for_range_start_stop_step, t(3)),
    case(for_over_list, [t(3), t(3), t(3)]),
    case(for_enumerate, (t(3), t(3))),
    case(for_zip, [t(3), t(3)], [t(3), t(3)]),
    case(for_range_len, [t(3), t(3), t(3)]),
    case(for_dict_items, t(3), {"scale": 2.0, "shift": 1.0}),
    case(for_break, t(3), ops=3),
    case(for_continue, t(3)),
    case(for_else, t(3)),
    case(nested_loops, t(3)),
    case(while_counter, t(3)),
    case(while_on_shape, t(8, 2)),
    case(loop_over_shape, t(3, 2)),
    case(early_return_in_loop, t(3)),
    case(loop_over_tuple_of_constants, t(3)),
    case(branch_inside_loop_on_index, [t(3), t(3), t(3)]),
    case(loop_unpack_pairs, t(3)),
    case(if_on_dtype_and_ndim, t(3, 2)),
    case(loop_builds_dict, [t(3), t(2)]),
    case(while_true_break, t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_control_flow(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(for_zip, [t(3), t(3)], [t(3), t(3)]),
    case(while_on_shape, t(8, 2)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_control_flow_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def test_branch_specializes_per_flag():
    # two different constant flags: each call is right (recompiling as needed)
    assert_same(if_flag, t(3), True, graphs=1)
    assert_same(if_flag, t(3), False, graphs=1)


def test_constants_change_between_calls():
    assert_same_calls(if_flag, [(t(3), True), (t(3), False), (t(3), True)], graphs=2)
    assert_same_calls(if_elif_else, [(t(3), "relu"), (t(3), "tanh"), (t(3), "other")])
    assert_same_calls(if_on_shape, [(t(4, 2),), (t(2, 2),)])
    assert_same_calls(for_over_list, [([t(3), t(3)],), ([t(3), t(3), t(3)],)])
