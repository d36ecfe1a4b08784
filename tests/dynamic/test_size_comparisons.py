"""Comparisons of ``torch.Size`` with tuples, lists and other sizes
(``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``), whose items are constants,
dynamic sizes, ints passed in and int attributes of modules: each call's
result equals eager's, and graph counts equal torch.compile's on the same
calls (the same marks on both).

HuggingFace attention layers check shapes exactly this way,
``if attn_weights.size() != (bsz * self.num_heads, tgt_len, src_len):
raise ValueError(...)``; a static size compared with a tuple holding a
symbolic item used to be unequal whatever the items were (TrOCR raised
under armature where eager runs)."""
import operator

import pytest
import torch
import torch._dynamo

import armature

from .util import check_with_oracle as check, seeded_calls as _tensors

OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


# --------------------------------------------------------------------------
# the module: an int attribute inside the compared tuple
# --------------------------------------------------------------------------


class ShapeCheck(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.n = n

    def forward(self, w, b, t):
        return (w * 2, w.size() == (b * self.n, t, t), w.size() != (b * self.n, t, t),
                w.size() == (b * self.n, t, t + 1), w.size() != [b * self.n, t, t],
                tuple(w.size()) == (b * self.n, t, t))


def _bt_calls(pairs, n=4):
    return [lambda b=b, t=t: (torch.randn(b * n, t, t, generator=torch.Generator().manual_seed(b + t)), b, t)
            for b, t in pairs]


def test_module_attribute_in_the_compared_tuple():
    check(ShapeCheck(), _bt_calls([(2, 3)]), graphs=1)


def test_module_attribute_in_the_compared_tuple_over_sizes():
    # automatic dynamic: b, t and the dims of w become symbols on the recompile
    check(ShapeCheck(), _bt_calls([(2, 3), (3, 5), (4, 6), (5, 7)]))


def test_module_attribute_in_the_compared_tuple_dynamic_true():
    check(ShapeCheck(), _bt_calls([(2, 3), (3, 5), (4, 6)]), dynamic=True)


class Attention(torch.nn.Module):
    """The shape checks of a HuggingFace attention layer (TrOCR, XGLM,
    BART on transformers 4.x), with the f-string error message."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        torch.manual_seed(0)
        self.num_heads = heads
        self.head_dim = dim // heads
        self.q = torch.nn.Linear(dim, dim)
        self.k = torch.nn.Linear(dim, dim)
        self.v = torch.nn.Linear(dim, dim)

    def _shape(self, x, seq, bsz):
        return x.view(bsz, seq, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden):
        bsz, tgt_len, _ = hidden.size()
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        q = self._shape(self.q(hidden), tgt_len, bsz).view(*proj_shape)
        k = self._shape(self.k(hidden), -1, bsz).view(*proj_shape)
        v = self._shape(self.v(hidden), -1, bsz).view(*proj_shape)
        src_len = k.size(1)
        w = torch.bmm(q, k.transpose(1, 2))
        if w.size() != (bsz * self.num_heads, tgt_len, src_len):
            raise ValueError(f"Attention weights should be of size {(bsz * self.num_heads, tgt_len, src_len)}, "
                             f"but is {w.size()}")
        out = torch.bmm(w.softmax(-1), v)
        if out.size() != (bsz * self.num_heads, tgt_len, self.head_dim):
            raise ValueError(f"`attn_output` should be of size {(bsz, self.num_heads, tgt_len, self.head_dim)}, "
                             f"but is {out.size()}")
        return out.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2).reshape(bsz, tgt_len, -1)


def test_attention_shape_check_static():
    check(Attention(), _tensors((2, 5, 16)), graphs=1)


def test_attention_shape_check_over_sequence_lengths():
    check(Attention(), _tensors((2, 5, 16), (2, 7, 16), (2, 9, 16), (3, 4, 16)))


def test_attention_shape_check_marked_dynamic():
    check(Attention(), _tensors((2, 5, 16), (2, 7, 16), (2, 9, 16)), mark_dims=[(0, 1)], graphs=1)


# --------------------------------------------------------------------------
# every operator against tuples, lists and sizes
# --------------------------------------------------------------------------


def _op_table(x, other):
    return tuple(op(x.size(), other) for op in (operator.eq, operator.ne)) + \
        tuple(op(x.size(), other) if isinstance(other, tuple) else None for op in OPS[2:])


def vs_constant_tuples(x):
    return x + 1, [_op_table(x, o) for o in [(4, 3), (4, 2), (4, 4), (5,), (4, 3, 1), (3, 9), ()]]


def vs_symbolic_tuples(x):
    n = x.shape[0]
    return x + 1, [_op_table(x, o) for o in [(n, 3), (n, 2), (n + 1, 3), (n - 1, 9), (n,), (n, 3, 0),
                                             (x.size(0), x.size(1))]]


def vs_lists(x):
    n = x.shape[0]
    return x + 1, [x.size() == [n, 3], x.size() != [n, 3], [n, 3] == list(x.size()),
                   list(x.size()) != [n, 3], list(x.size()) < [n, 4], list(x.size()) >= [n + 1]]


def vs_sizes(x):
    y = x.unsqueeze(0)
    z = torch.zeros(x.shape[0], 2)
    return x + 1, [x.size() == y.shape[1:], x.shape != y.size()[1:], x.size() == z.size(),
                   x.size() > z.size(), x.size() <= z.shape, y.shape < x.shape, x.shape[1:] == (3,),
                   x.size() == torch.Size([x.shape[0], 3])]


def reflected(x):
    n = x.shape[0]
    return x + 1, [(n, 3) == x.size(), (n, 3) != x.size(), (n, 2) < x.size(), (n + 1, 0) > x.size(),
                   [n, 3] == x.size(), (n, 3) <= tuple(x.size())]


def nested(x):
    n = x.shape[0]
    return x + 1, [(x.size(), 1) == ((n, 3), 1), (x.size(), 1) < ((n, 3), 2), [x.shape] == [(n, 3)]]


def branches(x):
    n = x.shape[0]
    if x.size() == (n, 3):
        x = x * 2
    if x.size() < (n, 4):
        x = x + 1
    if x.size() != (n + 1, 3):
        x = x - 3
    return x


def as_keys(x):
    # a size as a dict key and set member (hashes and compares as a tuple)
    d = {x.shape: 1, (5, 5): 2}
    return x + 1, d.get((x.shape[0], 3)), x.shape in {(4, 3), (6, 3)}


CASES = [vs_constant_tuples, vs_symbolic_tuples, vs_lists, vs_sizes, reflected, nested, branches, as_keys]
SIZES = [(4, 3), (5, 3), (6, 3), (9, 3)]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_static(fn):
    check(fn, _tensors(SIZES[0]), graphs=1)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_automatic_dynamic(fn):
    check(fn, _tensors(*SIZES))


@pytest.mark.parametrize("fn", [vs_symbolic_tuples, vs_lists, vs_sizes, reflected, nested, branches],
                         ids=lambda f: f.__name__)
def test_marked_dynamic(fn):
    # compared only with expressions of the size itself: nothing specialises it
    check(fn, _tensors(*SIZES), mark_dims=[(0, 0)], graphs=1)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_dynamic_true(fn):
    check(fn, _tensors(*SIZES), dynamic=True)


def test_tuple_and_list_ordering_is_a_type_error():
    def f(x):
        try:
            x.size() < [x.shape[0], 3]
        except TypeError as e:
            return x + 1, str(e)
        return x, ""
    check(f, _tensors((4, 3)), graphs=1)
    check(f, _tensors((4, 3), (5, 3)), mark_dims=[(0, 0)], graphs=1)


def test_size_equal_to_a_marked_int_stays_symbolic():
    # the returned comparison is a symbolic bool (a graph output), as under
    # torch.compile: nothing guards the marked dim against the static int
    def f(x, n):
        return x + 1, x.size() == (n, 3), (n, 3) == tuple(x.size())
    calls = [lambda: (torch.ones(4, 3), 4), lambda: (torch.ones(5, 3), 4)]
    check(f, calls, mark_dims=[(0, 0)], graphs=1)


class Sizes(torch.nn.Module):
    """Int attributes in comparisons with sizes, ordering included."""

    def __init__(self):
        super().__init__()
        self.n, self.width = 2, 3

    def forward(self, x):
        return x + 1, [x.size() == (self.n * 2, self.width), x.size() < (self.n * 2, self.width + 1),
                       x.size() >= (self.n, self.width), [self.n, self.width] != list(x.size()[:1]),
                       x.size()[1:] == (self.width,)]


def test_module_attributes_with_every_operator():
    check(Sizes(), _tensors((4, 3)), graphs=1)
    check(Sizes(), _tensors((4, 3), (5, 3), (6, 3)))
