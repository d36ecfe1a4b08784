"""Built-in functions and the methods of built-in scalar types inside
compiled frames (compiled vs eager): str methods on constants, bytes/int/
float/bool/complex basics, sorted/min/max/sum/any/all/len/abs/divmod/round/
pow, range/enumerate/zip(strict=)/map/filter/reversed/iter/next,
isinstance/issubclass (tuples, ABCs), hasattr/getattr/setattr/delattr, id,
hash, type(x) is T, callable, and print (stdout compared with eager's).
"""

import collections.abc
import numbers

import pytest
import torch

from helpers import CASE_ARGS, case, compile_fn, t
from python_semantics.support import run_case


class Plain:
    cls_attr = "c"

    def __init__(self, v=1):
        self.v = v

    def method(self):
        return self.v


class Sized3:
    def __len__(self):
        return 3


class Sub(Plain):
    pass


# --------------------------------------------------------------------------
# str methods on constants
# --------------------------------------------------------------------------


def str_split_join(x):
    s = "a,b,,c"
    parts = s.split(",")
    return x + len(parts), parts, "-".join(parts), " x  y ".split(), s.split(",", 1), s.rsplit(",", 1)


def str_case_methods(x):
    s = "Hello World"
    return x * 2, s.upper(), s.lower(), s.title(), s.swapcase(), s.capitalize(), "ß".casefold()


def str_predicates(x):
    s = "conv1.weight"
    return (
        x + 1,
        s.startswith("conv"),
        s.endswith((".bias", ".weight")),
        "123".isdigit(),
        "abc".isalpha(),
        "  ".isspace(),
        "Ab".isupper(),
        "a_1".isidentifier(),
    )


def str_replace_strip(x):
    s = "  --layer.0.bias--  "
    core = s.strip().strip("-")
    return x * 3, core, core.replace(".", "/"), core.replace(".", "", 1), s.lstrip(), s.rstrip(" -")


def str_find_index_count(x):
    s = "abracadabra"
    return x - 1, s.find("cad"), s.find("zz"), s.rfind("a"), s.index("b"), s.count("a"), s.count("a", 4)


def str_format_and_pad(x):
    return (
        x + 2,
        "{}:{:>4}".format("k", 7),
        "ab".center(6, "*"),
        "7".zfill(3),
        "ab".ljust(4, "."),
        "ab".rjust(4),
        "x".join(["1", "2", "3"]),
    )


def str_partition_splitlines(x):
    s = "key=value=more"
    return x * 2, s.partition("="), s.rpartition("="), "a\nb\r\nc".splitlines(), "tab\tx".expandtabs(4)


def str_prefix_suffix(x):
    name = "model.layer1.weight"
    return x + 1, name.removeprefix("model."), name.removesuffix(".weight"), name.split(".")[-1]


def str_operators(x):
    a = "ab"
    return x * 2, a + "cd", a * 3, "b" in a, a < "ac", a[::-1], a[1], len(a), ord("a"), chr(98)


def str_encode_bytes(x):
    b = "hé".encode("utf-8")
    return x + len(b), b, b.decode("utf-8"), bytes([65, 66]), b"ab" + b"c", b"abc"[1], b"a,b".split(b",")


def str_of_shape_keys(x):
    prefix = f"p{x.shape[0]}"
    key = "_".join([prefix, str(x.dim()), "end"])
    return {key: x * 2}


def str_conversions(x):
    return x + 1, str(3), str(2.5), str(None), str([1, "a"]), repr("q'"), int("12"), float("1.5"), int("ff", 16)


def str_index_error(x):
    return "abc".index("z")


def str_bad_int(x):
    return int("1.5")


# --------------------------------------------------------------------------
# numbers: int / float / bool / complex
# --------------------------------------------------------------------------


def int_methods(x):
    n = 37
    return x * 2, n.bit_length(), (-n).__abs__(), n.to_bytes(2, "big"), int.from_bytes(b"\x01\x00", "little"), n.real


def int_arith(a, b):
    return a + b, a - b, a * b, a / b, a // b, a % b, a**2, -a, divmod(a, b), a << 2, a >> 1, a & b, a | b, a ^ b


def float_methods(x):
    f = 2.5
    return x + f, f.is_integer(), (3.0).is_integer(), f.as_integer_ratio(), float("inf") > 1e308, round(f), round(3.5)


def float_arith(x, f):
    return x * f, f // 1.5, f % 1.5, f**0.5, -f, abs(-f), divmod(f, 2.0)


def bool_arith(x):
    return x + True, True + True, True * 3, int(False), bool(0), bool("a"), not [], True & False, True | False


def complex_basics(x):
    z = complex(1, 2)
    w = 3 - 1j
    return x + 1, z + w, z * w, z.real, z.imag, z.conjugate(), abs(3 + 4j), z == complex(1, 2)


def numeric_conversions(x):
    return x * 2, int(3.9), int(-3.9), float(2), int(True), round(2.675, 2), round(-0.5), int("  7 ")


def int_division_by_zero(x):
    return x * (1 // 0)


def float_division_by_zero(x):
    return x * (1.0 / 0)


# --------------------------------------------------------------------------
# sorted / min / max / sum / any / all / len / abs / divmod / round / pow
# --------------------------------------------------------------------------


def sorted_with_key(x):
    words = ["bb", "a", "ccc", "dd"]
    return (
        x + 1,
        sorted(words),
        sorted(words, key=len),
        sorted(words, key=lambda w: (-len(w), w)),
        sorted(words, reverse=True),
        sorted((3, 1, 2)),
        sorted({"b": 1, "a": 2}),
        sorted("cab"),
    )


def sorted_tensors_by_shape(xs):
    ordered = sorted(xs, key=lambda v: v.shape[0])
    return [v * 2 for v in ordered]


def min_max_variants(x):
    vals = [4, -2, 7]
    return (
        x * 2,
        min(vals),
        max(vals),
        min(3, 1, 2),
        max("ab", "b"),
        min([], default=0),
        max([(1, "b"), (1, "c")]),
    )


def min_max_key(x):
    return x * 2, max([4, -2, 7], key=abs), min(["bb", "a"], key=len), max({"a": 2, "b": 1}, key=lambda k: -ord(k))


def min_max_of_shapes(x):
    return x.reshape(min(x.shape), max(x.shape))


def sum_any_all(x):
    vals = [1, 2, 3]
    return (
        x + sum(vals),
        sum(vals, 10),
        sum([0.5, 0.25]),
        any([0, 0, 1]),
        all([1, 1, 0]),
        any([]),
        all([]),
        any(v > 2 for v in vals),
    )


def sum_of_tensors(xs):
    return sum(xs), sum(xs, torch.zeros(3))


def abs_divmod_round_pow(x):
    return x * abs(-3), divmod(17, 5), divmod(-17, 5), round(2.567, 1), round(1234, -2), pow(2, 10), pow(2, 10, 7), pow(2.0, -1)


def len_of_things(x):
    return x + len([1, 2]), len("abc"), len({"a": 1}), len(range(2, 10, 3)), len((1,)), len(x), len(Sized3())


def builtins_on_tensor(x):
    return abs(x), pow(x, 2), pow(2, x), max(x.shape), divmod(x.shape[0], 2), round(x.shape[0] / 2)


def min_empty(x):
    return min([])


def sum_of_strings(x):
    return sum(["a", "b"], "")


# --------------------------------------------------------------------------
# range / enumerate / zip / map / filter / reversed / iter / next
# --------------------------------------------------------------------------


def range_features(x):
    r = range(2, 20, 3)
    return x + 1, list(r), r[1], r[-1], r[1:3], len(r), 8 in r, list(range(5, 0, -2)), r.index(8), list(reversed(r))


def range_loop_tensor(x):
    out = x
    for i in range(1, 4):
        out = out * i
    return out


def enumerate_variants(xs):
    out = []
    for i, v in enumerate(xs):
        out.append(v * i)
    for i, v in enumerate(xs, start=10):
        out.append(v + i)
    return out, list(enumerate("ab", 1))


def zip_variants(x):
    a = [1, 2, 3]
    b = "xyz"
    return x + 1, list(zip(a, b)), list(zip(a, b, (7, 8))), list(zip()), dict(zip(b, a)), list(zip(*[(1, 2), (3, 4)]))


def zip_strict_ok(x):
    return x * 2, list(zip([1, 2], "ab", strict=True))


def zip_strict_mismatch(x):
    out = []
    for pair in zip([1, 2], [3], strict=True):
        out.append(pair)
    return out


def zip_strict_mismatch_second_longer(x):
    out = []
    for a, b in zip([x], [3, 4], strict=True):
        out.append(a * b)
    return out


def zip_tensors(xs, ys):
    return [a * b for a, b in zip(xs, ys)]


def map_filter_reversed(x):
    return (
        x + 1,
        list(map(str, [1, 2])),
        list(map(lambda a, b: a * b, [1, 2], [3, 4])),
        list(filter(None, [0, 1, "", "a"])),
        list(filter(lambda v: v > 1, [1, 2, 3])),
        list(reversed([1, 2, 3])),
        list(reversed((1, 2))),
        "".join(reversed("abc")),
        "-".join(map(str, [1, 2])),
    )


def iter_next_default(x):
    it = iter([1, 2])
    a = next(it)
    b = next(it)
    c = next(it, "done")
    d = next(iter([]), None)
    return x * a, b, c, d


def iter_over_tensors_manual(xs):
    it = iter(xs)
    first = next(it)
    rest = list(it)
    return first * 2, len(rest), next(it, first)


def iter_dict_and_str(x):
    it = iter({"k": 1, "j": 2})
    s = iter("ab")
    return x + 1, next(it), next(it), next(s), list(s)


def next_exhausted(x):
    it = iter([x])
    next(it)
    return next(it)


# --------------------------------------------------------------------------
# isinstance / issubclass / type / callable
# --------------------------------------------------------------------------


def isinstance_builtin_types(x):
    return (
        x + 1,
        isinstance(x, torch.Tensor),
        isinstance(3, (str, int)),
        isinstance(True, int),
        isinstance(2.0, (int,)),
        isinstance([], (tuple, list)),
        isinstance(None, type(None)),
        isinstance(x.shape, tuple),
        isinstance("s", (bytes, (str, float))),
    )


def isinstance_abcs(x):
    abc = collections.abc
    return (
        x * 2,
        isinstance([], abc.Sequence),
        isinstance((), abc.Sequence),
        isinstance({}, abc.Mapping),
        isinstance({}, abc.MutableMapping),
        isinstance([], abc.Iterable),
        isinstance(3, abc.Iterable),
        isinstance(Sized3(), abc.Sized),
        isinstance(len, abc.Callable),
        isinstance(3, numbers.Number),
        isinstance(2.5, numbers.Integral),
    )


def isinstance_user_classes(x):
    p, s = Plain(), Sub()
    return x + 1, isinstance(s, Plain), isinstance(p, Sub), isinstance(s, (int, Sub)), isinstance(x, Plain)


def issubclass_variants(x):
    return (
        x + 1,
        issubclass(bool, int),
        issubclass(Sub, Plain),
        issubclass(Plain, (int, Sub)),
        issubclass(list, collections.abc.MutableSequence),
        issubclass(torch.nn.Linear, torch.nn.Module),
        issubclass(Sub, object),
    )


def type_identity(x, n):
    return x + 1, type(x) is torch.Tensor, type(n) is int, type(n) is float, type([]) is list, type(True) is bool


def type_name_and_call(x):
    kind = type(x).__name__
    lst_type = type([1])
    return x * 2, kind, lst_type((1, 2)), type(3)(4.7), type("a").__name__


def callable_checks(x):
    return (
        x + 1,
        callable(len),
        callable(torch.relu),
        callable(lambda: 0),
        callable(3),
        callable(Plain),
        callable(Plain()),
        callable(x.sum),
    )


def isinstance_bad_classinfo(x):
    return isinstance(x, 3)


# --------------------------------------------------------------------------
# hasattr / getattr / setattr / delattr / id / hash
# --------------------------------------------------------------------------


def getattr_setattr_in_frame(x):
    p = Plain(2)
    setattr(p, "w", x)
    name = "v"
    return getattr(p, "w") * getattr(p, name), getattr(p, "missing", 5), hasattr(p, "w"), hasattr(p, "nope")


def delattr_in_frame(x):
    p = Plain(2)
    p.extra = 1
    delattr(p, "extra")
    return x * p.v, hasattr(p, "extra"), hasattr(p, "cls_attr"), getattr(p, "cls_attr")


def getattr_on_tensor_and_module(x):
    return getattr(x, "shape"), getattr(torch, "relu")(x), hasattr(x, "dtype"), hasattr(torch, "no_such_fn")


def getattr_bound_method(x):
    p = Plain(3)
    m = getattr(p, "method")
    return x * m()


def getattr_missing_raises(x):
    return getattr(Plain(), "nope")


def id_comparisons(x, y):
    a = [1]
    b = a
    return x + y, id(a) == id(b), id(a) == id([1]), id(x) == id(x), id(x) != id(y)


def hash_of_constants(x):
    return (
        x * 2,
        hash(3) == 3,
        hash("abc") == hash("ab" + "c"),
        hash((1, 2)) == hash((1, 2)),
        hash(1.0) == hash(1),
        hash(None) == hash(None),
        hash(-1),
    )


def hash_unhashable(x):
    return hash([1])


# --------------------------------------------------------------------------
# more edge cases of built-in types
# --------------------------------------------------------------------------


def floor_semantics(x):
    return x + 1, -7 // 2, -7 % 2, 7 // -2, 7 % -2, -7.5 // 2, -7.5 % 2, divmod(-7, -2), round(-2.5), round(0.5)


def int_base_and_bool_conversion(x):
    return x * 2, int("ff", 16), int("0b101", 0), int("  -12  "), bool(0.0), bool([0]), int(-0.9), float("-inf") < 0


def str_split_variants(x):
    s = "a b  c"
    return x + 1, s.split(" "), s.split(None, 1), s.rsplit(maxsplit=1), "a,b".split(",", maxsplit=0), "".split(",")


def str_startswith_ranges(x):
    s = "prefix.body.suffix"
    return x * 2, s.startswith("body", 7), s.endswith("body", 0, 11), s.find(".", 7), s.rindex("."), s[7:11].isalpha()


def str_multiply_and_slice(x):
    s = "abc"
    return x + 1, s * 2, 2 * s, s * 0, s[::-1], s[-2:], s[5:], s[::2], "-" * 3


def mixed_type_comparison_raises(x):
    return x, 1 < "a"


def str_minus_raises(x):
    return "a" - "b"


def bool_short_circuit_values(x):
    a = 0 or "" or [] or "last"
    b = 1 and "yes" and 0
    c = None or (x.shape[0] and 7)
    return x * c, a, b, (not a), (3 and 0 or 5)


def tuple_index_with_bounds(x):
    tp = (1, 2, 1, 2, 1)
    return x + tp.index(1, 1), tp.index(2, 2, 4), tp.count(1), tp[-2::-2]


def dict_views_set_ops(x):
    a = {"p": 1, "q": 2}
    b = {"q": 3, "r": 4}
    return x * 2, sorted(a.keys() & b.keys()), sorted(a.keys() | b.keys()), sorted(a.keys() - b), ("p", 1) in a.items()


def frozenset_more(x):
    f = frozenset([1, 2, 3])
    g = frozenset([3, 4])
    return (
        x + 1,
        sorted(f ^ g),
        sorted(f.symmetric_difference(g)),
        sorted(f.difference([1])),
        f.isdisjoint(g),
        sorted(v * 2 for v in f),
        f == frozenset({1, 2, 3}),
        frozenset() == set(),
    )


def set_of_tuples_and_strings(x):
    s = {(1, 2), (1, 2), ("a",)}
    t_ = {"b", "a", "b"}
    return x * len(s), sorted(t_), (1, 2) in s, sorted(s, key=str)


def list_index_with_start(x):
    lst = [5, 6, 5, 6]
    return x + lst.index(5, 1), lst.index(6, 2, 4)


def enumerate_zip_nested(xs):
    out = {}
    for i, (a, (b, c)) in enumerate(zip(xs, zip("ab", [10, 20]))):
        out[b] = a * c + i
    return out


def reversed_enumerate_range(x):
    return x + 1, list(reversed(list(enumerate("abc")))), list(range(10)[::-3]), range(0, 10, 2)[-1]


def min_max_strings_and_tuples(x):
    return x * 2, min("b", "a", "c"), max([(1, 2), (1, 3), (0, 9)]), min((3, "a"), (3, "b")), max("hello")


def all_any_with_tensor_shapes(xs):
    return all(v.dim() == 1 for v in xs), any(v.shape[0] > 2 for v in xs), sum(v.numel() for v in xs), xs[0] + 1


def abs_of_bool_and_complex(x):
    return x + abs(True), abs(-0.0), abs(3 + 4j), abs(-5)


def pow_variants(x):
    return x * pow(3, 2), pow(2, -1), pow(-8, 1 / 3) == (-8) ** (1 / 3), 2**0.5, (-2) ** 2, pow(3, 0)


# --------------------------------------------------------------------------
# print: stdout must equal eager's
# --------------------------------------------------------------------------


def print_constants(x):
    print("value:", 3, "s", sep="|", end="!\n")
    return x + 1


def print_shapes(x):
    y = x * 2
    print(f"shape={tuple(y.shape)}", y.dim())
    return y.sum()


def print_in_loop(x):
    for i in range(2):
        print("step", i)
        x = x + i
    return x


def print_nothing_and_list(x):
    print()
    print([1, "a"], {"k": None})
    return x


# --------------------------------------------------------------------------
# case table
# --------------------------------------------------------------------------

X = t(4)
Y = t(4)
M = t(3, 4)
XS = [t(3), t(1), t(2)]

CASES = [
    # str
    case(str_split_join, X),
    case(str_case_methods, X),
    case(str_predicates, X),
    case(str_replace_strip, X),
    case(str_find_index_count, X),
    case(str_format_and_pad, X),
    case(str_partition_splitlines, X),
    case(str_prefix_suffix, X),
    case(str_operators, X),
    case(str_encode_bytes, X),
    case(str_of_shape_keys, M),
    case(str_conversions, X),
    # numbers
    case(int_methods, X),
    case(int_arith, 17, 5, graphs=0),
    case(int_arith, -17, 5, id="int_arith_negative", graphs=0),
    case(float_methods, X),
    case(float_arith, X, 2.5),
    case(bool_arith, X),
    case(complex_basics, X),
    case(numeric_conversions, X),
    # aggregates
    case(sorted_with_key, X),
    case(sorted_tensors_by_shape, XS),
    case(min_max_variants, X),
    case(min_max_key, X),
    case(min_max_of_shapes, M),
    case(sum_any_all, X),
    case(sum_of_tensors, [t(3), t(3)]),
    case(abs_divmod_round_pow, X),
    case(len_of_things, X),
    case(builtins_on_tensor, M),
    # iteration builtins
    case(range_features, X),
    case(range_loop_tensor, X),
    case(enumerate_variants, XS),
    case(zip_variants, X),
    case(zip_strict_ok, X),
    case(zip_tensors, [t(2), t(2)], [t(2), t(2)]),
    case(map_filter_reversed, X),
    case(iter_next_default, X),
    case(iter_over_tensors_manual, XS),
    case(iter_dict_and_str, X),
    # types
    case(isinstance_builtin_types, X),
    case(isinstance_abcs, X),
    case(isinstance_user_classes, X),
    case(issubclass_variants, X),
    case(type_identity, X, 3),
    case(type_identity, X, 2.5, id="type_identity_float"),
    case(type_name_and_call, X),
    case(callable_checks, X),
    # attributes / id / hash
    case(getattr_setattr_in_frame, X),
    case(delattr_in_frame, X),
    case(getattr_on_tensor_and_module, X),
    case(getattr_bound_method, X),
    case(id_comparisons, X, Y),
    case(hash_of_constants, X),
    # more edge cases
    case(floor_semantics, X),
    case(int_base_and_bool_conversion, X),
    case(str_split_variants, X),
    case(str_startswith_ranges, X),
    case(str_multiply_and_slice, X),
    case(bool_short_circuit_values, X),
    case(tuple_index_with_bounds, X),
    case(dict_views_set_ops, X),
    case(frozenset_more, X),
    case(set_of_tuples_and_strings, X),
    case(list_index_with_start, X),
    case(enumerate_zip_nested, [t(2), t(2)]),
    case(reversed_enumerate_range, X),
    case(min_max_strings_and_tuples, X),
    case(all_any_with_tensor_shapes, [t(2), t(3)]),
    case(abs_of_bool_and_complex, X),
    case(pow_variants, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_builtins(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


RAISES = [
    case(str_index_error, X),
    case(str_bad_int, X),
    case(int_division_by_zero, X),
    case(float_division_by_zero, X),
    case(min_empty, X),
    case(sum_of_strings, X),
    case(zip_strict_mismatch, X),
    case(zip_strict_mismatch_second_longer, X),
    case(next_exhausted, X),
    case(isinstance_bad_classinfo, X),
    case(getattr_missing_raises, X),
    case(hash_unhashable, X),
    case(mixed_type_comparison_raises, X),
    case(str_minus_raises, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_builtins_raise_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)


PRINTS = [
    case(print_constants, X),
    case(print_shapes, M),
    case(print_in_loop, X),
    case(print_nothing_and_list, X),
]


@pytest.mark.parametrize(CASE_ARGS, PRINTS)
def test_print_output_matches_eager(fn, args, opts, capsys):
    """print is a graph break: no graph count is asserted; the compiled
    function (called twice, the second time from the cache) must print
    exactly what eager prints when called twice, and return the same."""
    from helpers import assert_equal, deep_copy

    capsys.readouterr()
    expected = [fn(*deep_copy(args)) for _ in range(2)]
    eager_out = capsys.readouterr().out
    compiled = compile_fn(fn, backend="eager")
    got = [compiled(*deep_copy(args)) for _ in range(2)]
    compiled_out = capsys.readouterr().out
    assert compiled_out == eager_out
    assert_equal(expected, got)
