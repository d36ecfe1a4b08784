"""Structural pattern matching inside compiled frames (armature.compile vs
eager): MATCH_CLASS, MATCH_MAPPING, MATCH_SEQUENCE, MATCH_KEYS, GET_LEN and
the ordinary opcodes that literal/value/sequence patterns compile to."""

import collections
import dataclasses
import enum

import pytest
import torch

from helpers import CASE_ARGS, assert_raises_same, assert_same, case, compile_fn, t

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Box:
    w: int
    h: int
    data: torch.Tensor = None


class Plain:
    def __init__(self, a):
        self.a = a


class Shape(enum.Enum):
    CIRCLE = "circle"
    SQUARE = "square"


class TooMany:
    __match_args__ = ("a",)

    def __init__(self):
        self.a = 1


def literal(x, n):
    match n:
        case 0:
            return x
        case 1 | 2:
            return x * 2
        case "three":
            return x * 3
        case None:
            return -x
        case _:
            return x + 100


def literal_bool(x, flag):
    match flag:
        case True:
            return x + 1
        case False:
            return x - 1


def capture_guard(x, n):
    match n:
        case k if k > 10:
            return x * k
        case k:
            return x - k


def seq_fixed(xs):
    match xs:
        case [a]:
            return a
        case [a, b]:
            return a + b
        case [a, b, c]:
            return a * b * c
    return None


def seq_star(xs):
    match xs:
        case [first, *rest]:
            return first, len(rest)
        case []:
            return "empty"


def seq_star_middle(xs):
    match xs:
        case [a, *_, b]:
            return a - b
    return xs[0]


def seq_tuple_nested(x):
    pair = ((x, 1), (x * 2, 2))
    match pair:
        case ((a, 1), (b, n)):
            return a + b * n
    return x


def seq_str_not_sequence(x):
    match "ab":
        case [a, b]:
            return x
        case str(s):
            return x * len(s)


def seq_tensor_not_sequence(x):
    match x:
        case [a, b, c]:
            return a
        case torch.Tensor():
            return x + 1


def seq_shape(x):
    match x.shape:
        case (n,):
            return x * n
        case (n, m):
            return x.sum() * n * m
        case _:
            return x


def seq_as_pattern(x):
    match [x, x + 1]:
        case [a, b] as whole:
            return a + b, len(whole)


def seq_deque(x):
    d = collections.deque([x, x * 2, x * 3])
    match d:
        case [a, *mid, c]:
            return a + c, len(mid)


def seq_range(x):
    match range(3):
        case [0, 1, n]:
            return x * n


def map_keys(d):
    match d:
        case {"w": w, "b": b}:
            return d["x"] @ w + b
        case {"x": x}:
            return x


def map_rest(x):
    d = {"a": x, "b": x * 2, "c": 3}
    match d:
        case {"a": a, **rest}:
            return a, rest


def map_not_mapping(x):
    match [x]:
        case {"a": a}:
            return a
        case [v]:
            return v + 1


def map_missing_key(x):
    match {"a": x}:
        case {"b": b}:
            return b
        case {"a": a, "c": c}:
            return c
        case {}:
            return x * 3


def map_defaultdict_no_insert(x):
    d = collections.defaultdict(list)
    d["a"].append(x)
    match d:
        case {"zzz": _}:
            hit = True
        case _:
            hit = False
    return hit, "zzz" in d, len(d)


def map_ordered_dict(x):
    d = collections.OrderedDict(k=x)
    match d:
        case {"k": v}:
            return v * 2


def map_enum_keys(x):
    d = {Shape.CIRCLE: x, Shape.SQUARE: x * 2}
    match d:
        case {Shape.SQUARE: s}:
            return s


def map_duplicate_value_keys(x):
    match {Shape.CIRCLE: x, Shape.SQUARE: x}:
        case {Shape.CIRCLE: a, Shape.CIRCLE: b}:
            return a


def cls_dataclass_positional(b):
    match b:
        case Box(w, h) if w == h:
            return "square", w
        case Box(w, h, data):
            return data * w * h


def cls_dataclass_keywords(x):
    b = Box(2, 3, x)
    match b:
        case Box(w=2, data=d):
            return d + 1
    return x


def cls_namedtuple(x):
    p = Point(x, 3)
    match p:
        case Point(a, 0):
            return a
        case Point(a, y=3):
            return a * 3


def cls_namedtuple_passed(p):
    match p:
        case Point(x=a, y=b):
            return a - b


def cls_builtin_match_self(v):
    match v:
        case bool(b):
            return "bool", b
        case int(n):
            return "int", n + 1
        case float(f):
            return "float", f * 2
        case str(s):
            return "str", s.upper()
        case (a, b):
            return "pair", a
        case list(items):
            return "list", len(items)
        case dict(d):
            return "dict", len(d)
    return "other"


def cls_or_pattern(v):
    match v:
        case int() | float() as num:
            return num * 2
        case str() | bytes():
            return 0


def cls_tensor_attrs(x):
    match x:
        case torch.Tensor(ndim=2, shape=(n, m)):
            return x.sum(0) * n + m
        case torch.Tensor(ndim=1):
            return x * 2


def cls_plain_missing_attr(p):
    match p:
        case Plain(b=b):
            return b
        case Plain(a=a):
            return a * 2


def cls_not_instance(x):
    match 3:
        case Box(w=w):
            return w
        case Point():
            return 1
    return x


def cls_enum_value_pattern(x, s):
    match s:
        case Shape.CIRCLE:
            return x * 3.14
        case Shape.SQUARE:
            return x * x


def cls_too_many_positional(x):
    match TooMany():
        case TooMany(a, b):
            return x


def cls_match_self_too_many(x):
    match 3:
        case int(a, b):
            return x


def cls_not_a_type(x):
    Bad = 3
    match x:
        case Bad():
            return x


def nested_mixed(x):
    data = {"points": [Point(x, 1), Point(x * 2, 2)], "tag": "pts"}
    match data:
        case {"points": [Point(a, 1), *others], "tag": str(tag)}:
            return a, len(others), tag


X = t(4)
X23 = t(2, 3)

CASES = [
    case(literal, X, 0, graphs=0),
    case(literal, X, 2, id="literal_or", graphs=1),
    case(literal, X, "three", id="literal_str", graphs=1),
    case(literal, X, None, id="literal_none", graphs=1),
    case(literal, X, 7.5, id="literal_default", graphs=1),
    case(literal_bool, X, True, graphs=1),
    case(literal_bool, X, False, id="literal_bool_false", graphs=1),
    case(capture_guard, X, 12, graphs=1),
    case(capture_guard, X, 3, id="capture_guard_else", graphs=1),
    case(seq_fixed, [t(2), t(2)], graphs=1),
    case(seq_fixed, (t(2), t(2), t(2)), id="seq_fixed_tuple3", graphs=1),
    case(seq_star, [1, 2, 3]),
    case(seq_star, [], id="seq_star_empty"),
    case(seq_star_middle, [t(2), t(2), t(2), t(2)], graphs=1),
    case(seq_tuple_nested, X, graphs=1),
    case(seq_str_not_sequence, X, graphs=1),
    case(seq_tensor_not_sequence, t(3), graphs=1),
    case(seq_shape, X, graphs=1),
    case(seq_shape, X23, id="seq_shape_2d", graphs=1),
    case(seq_as_pattern, X, graphs=1),
    case(seq_deque, X, graphs=1),
    case(seq_range, X, graphs=1),
    case(map_keys, {"x": t(3), "w": t(3, 2), "b": t(2)}, graphs=1),
    case(map_keys, {"x": t(3)}, id="map_keys_second"),
    case(map_rest, X, graphs=1),
    case(map_not_mapping, X, graphs=1),
    case(map_missing_key, X, graphs=1),
    case(map_defaultdict_no_insert, X),
    case(map_ordered_dict, X, graphs=1),
    case(map_enum_keys, X, graphs=1),
    case(cls_dataclass_positional, Box(2, 3, t(2)), graphs=1),
    case(cls_dataclass_positional, Box(2, 2, t(2)), id="cls_dataclass_guard"),
    case(cls_dataclass_keywords, X, graphs=1),
    case(cls_namedtuple, X, graphs=1),
    case(cls_namedtuple_passed, Point(t(2), t(2)), graphs=1),
    case(cls_builtin_match_self, True),
    case(cls_builtin_match_self, 4, id="match_self_int"),
    case(cls_builtin_match_self, 1.5, id="match_self_float"),
    case(cls_builtin_match_self, "ab", id="match_self_str"),
    case(cls_builtin_match_self, (1, 2), id="match_self_pair"),
    case(cls_builtin_match_self, [1, 2, 3], id="match_self_list"),
    case(cls_builtin_match_self, {"a": 1}, id="match_self_dict"),
    case(cls_builtin_match_self, None, id="match_self_none"),
    case(cls_or_pattern, 3),
    case(cls_or_pattern, 2.5, id="cls_or_float"),
    case(cls_or_pattern, b"x", id="cls_or_bytes"),
    case(cls_tensor_attrs, X23, graphs=1),
    case(cls_tensor_attrs, X, id="cls_tensor_1d", graphs=1),
    case(cls_plain_missing_attr, Plain(t(2)), graphs=1),
    case(cls_not_instance, X),
    case(cls_enum_value_pattern, X, Shape.CIRCLE, graphs=1),
    case(cls_enum_value_pattern, X, Shape.SQUARE, id="cls_enum_square", graphs=1),
    case(nested_mixed, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_match(fn, args, opts):
    assert_same(fn, *args, **opts)


RAISES = [
    case(cls_too_many_positional, X),
    case(cls_match_self_too_many, X),
    case(cls_not_a_type, X),
    case(map_duplicate_value_keys, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_match_raises_like_eager(fn, args, opts):
    assert_raises_same(fn, *args, **opts)


def test_match_recompiles_per_case():
    compiled = compile_fn(literal, backend="eager", fullgraph=True)
    x = t(3)
    for n in (0, 1, "three", None, 5, 1):
        torch.testing.assert_close(compiled(x, n), literal(x, n))


def test_match_sequence_length_is_guarded():
    compiled = compile_fn(seq_fixed, backend="eager", fullgraph=True)
    a, b, c = t(2), t(2), t(2)
    torch.testing.assert_close(compiled([a, b]), a + b)
    torch.testing.assert_close(compiled([a, b, c]), a * b * c)
    torch.testing.assert_close(compiled([a]), a)
    assert compiled([a, b, c, a]) is None
