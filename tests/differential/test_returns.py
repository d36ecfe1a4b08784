"""Return values: tensors, constants, None, tuples/lists/dicts/namedtuples
(nested), and identity of returned objects."""

import collections
import typing

import pytest
import torch

from helpers import CASE_ARGS, assert_same, case, t

Pair = collections.namedtuple("Pair", ["left", "right"])


class Stats(typing.NamedTuple):
    mean: torch.Tensor
    count: int


def ret_tensor(x):
    return x + 1


def ret_none(x):
    x * 2


def ret_explicit_none(x):
    return None


def ret_int(x):
    return 42


def ret_float_bool_str(x):
    return 1.5, True, "done"


def ret_tuple(x):
    return x, x + 1, x * 2


def ret_list(x):
    return [x.sin(), x.cos()]


def ret_dict(x):
    return {"a": x + 1, "b": x - 1}


def ret_nested(x):
    return {"pair": (x, x + 1), "items": [x * 2, {"deep": x * 3}], "n": 3}


def ret_namedtuple(x):
    return Pair(x + 1, x * 2)


def ret_namedtuple_kwargs(x):
    return Pair(right=x, left=x.sum())


def ret_typed_namedtuple(x):
    return Stats(x.mean(), x.numel())


def ret_mixed_tuple(x):
    return x * 2, 3, None, "s", (1, 2)


def ret_input_unchanged(x):
    return x


def ret_input_and_result(x):
    return x, x + 1


def ret_same_tensor_twice(x):
    y = x * 2
    return y, y


def ret_input_twice(x):
    return [x, x]


def ret_view_of_input(x):
    return x[0], x.t()


def ret_shape_dtype(x):
    return x * 1, x.shape, x.dtype, x.device


def ret_shape_derived_int(x):
    return x.shape[0] * 2 + 1


def ret_empty_containers(x):
    return (), [], {}, x + 0


def ret_single_elem_tuple(x):
    return (x * 2,)


def ret_dict_int_keys(x):
    return {0: x, 1: x + 1}


def ret_bool_tensor_and_bool(x):
    return x > 0, x.dim() > 1


def ret_scalar_tensor(x):
    return x.sum()


def ret_int_tensor(x):
    return x.argmax()


def ret_list_of_tuples(xs):
    return [(v, v * 2) for v in xs]


def ret_namedtuple_nested(x):
    return Pair(left=Pair(x, 1), right=[x + 1])


def ret_slice_obj(x):
    return slice(1, 2), x[1:2]


def ret_tensor_dict_from_args(a, b):
    return {"sum": a + b, "a": a}


CASES = [
    case(ret_tensor, t(3)),
    case(ret_none, t(3), graphs=None),
    case(ret_explicit_none, t(3), graphs=None),
    case(ret_int, t(3), graphs=None),
    case(ret_float_bool_str, t(3), graphs=None),
    case(ret_tuple, t(3)),
    case(ret_list, t(3)),
    case(ret_dict, t(3)),
    case(ret_nested, t(3)),
    case(ret_namedtuple, t(3)),
    case(ret_namedtuple_kwargs, t(3)),
    case(ret_typed_namedtuple, t(3)),
    case(ret_mixed_tuple, t(3)),
    case(ret_input_unchanged, t(3), graphs=None),
    case(ret_input_and_result, t(3)),
    case(ret_same_tensor_twice, t(3)),
    case(ret_input_twice, t(3), graphs=None),
    case(ret_view_of_input, t(3, 2)),
    case(ret_shape_dtype, t(3, 2)),
    case(ret_shape_derived_int, t(3), graphs=None),
    case(ret_empty_containers, t(3)),
    case(ret_single_elem_tuple, t(3)),
    case(ret_dict_int_keys, t(3)),
    case(ret_bool_tensor_and_bool, t(3, 2)),
    case(ret_scalar_tensor, t(3)),
    case(ret_int_tensor, t(3)),
    case(ret_list_of_tuples, [t(3), t(2)]),
    case(ret_namedtuple_nested, t(3)),
    case(ret_slice_obj, t(3)),
    case(ret_tensor_dict_from_args, t(3), t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_returns(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(ret_nested, t(3)),
    case(ret_namedtuple, t(3)),
    case(ret_same_tensor_twice, t(3)),
    case(ret_view_of_input, t(3, 2)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_returns_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)
