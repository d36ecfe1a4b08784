"""Symbolic sizes formatted into strings (``f"{x.shape}"``, ``str(x.size())``,
``"{}".format(n)``, ``"%d" % n``, a shape tuple in an error message) are
formatted at run time (values/operations/deferred_text.py): no graph
break, no specialisation, each call's own text; anything that needs the
text itself while tracing (``+``, ``==``, a method, a dict key) gets it as a
constant, the size specialised and guarded.  Results equal eager's on every
call; graph counts no more than torch.compile's."""
import logging

import pytest
import torch

import armature

from .util import check_with_oracle as check, seeded_calls

SIZES = [(2, 3), (3, 3), (4, 3), (5, 3)]
_log = logging.getLogger(__name__)


def fstring(x):
    return x + 1, f"{x.shape}", f"{x.shape[0]}", f"n={x.shape[0]}, m={x.shape[1]}!"


def conversions(x):
    return x + 1, f"{x.shape!r}", f"{x.shape[0]!s}", f"{x.shape!a}", f"{(x.shape[0] * 2, 3)}"


def builtins(x):
    return x + 1, str(x.size()), repr(x.shape), str(x.shape[0] + 1), format(x.shape[0]), format(x.size())


def str_format(x):
    n = x.shape[0]
    return x + 1, "{} by {}".format(n, 3), "{0}-{1}-{0}".format(n, n + 1), "{!r}".format(x.shape), \
        "{:>4}|{:04d}|{:x}".format(n, n, n * 11)


def specs(x):
    n = x.shape[0]
    return x + 1, f"{n:>5}", f"{n:,}", f"{n / 3:.2f}", f"{n:b}"


def percent(x):
    n = x.shape[0]
    return x + 1, "%d rows" % n, "%s x %d" % (n, 3), "%5d|%-3d|%x" % (n, n, n * 11), "%s" % (x.shape,), "%%%d" % n


def shape_check(x):
    # the HuggingFace attention check: passes, the message is never built
    if x.size() != (x.shape[0], 3):
        raise ValueError(f"should be of size {(x.shape[0] * 2, 3)}, but is {x.size()}")
    return x * 2


def list_snapshot(x):
    sizes = [x.shape[0], 3]
    text = f"{sizes}"
    sizes.append(9)
    sizes[0] = 7
    return x + 1, text, sizes


def nested_containers(x):
    return x + 1, str((x.shape[0], "a", 1.5, None)), repr([x.shape[0], [x.shape[1]]])


def truth(x):
    text = f"{x.shape[0]}"
    if text:
        return x + 1, text
    return x - 1, text


def symbolic_bool_and_float(x):
    return x + 1, f"{x.shape[0] > 2}", str(x.shape[0] == 3), f"{x.shape[0] / 2}"


def caught_message(x):
    try:
        if x.shape[0] > 0:
            raise ValueError(f"size {x.shape}")
    except ValueError as e:
        return x + 1, str(e), e.args, f"{e}"
    return x, "", (), ""


def stored_on_a_module_like_object(x, box={}):
    box["text"] = f"{x.shape[0]} rows"
    return x + 1


DEFERRED = [fstring, builtins, str_format, specs, shape_check, list_snapshot, nested_containers,
            truth, symbolic_bool_and_float]
#: torch.compile gives up on these after its first compile (it runs them
#: eagerly): no graph count to compare with
NOT_COMPILED_BY_TORCH = [conversions, percent, caught_message]


@pytest.mark.parametrize("fn", DEFERRED + NOT_COMPILED_BY_TORCH, ids=lambda f: f.__name__)
def test_static(fn):
    check(fn, seeded_calls(SIZES[0]), graphs=1, breaks=0)


@pytest.mark.parametrize("fn", DEFERRED, ids=lambda f: f.__name__)
def test_automatic_dynamic(fn):
    # static, then dynamic: the second compile serves every later size
    check(fn, seeded_calls(*SIZES), graphs=2)


@pytest.mark.parametrize("fn", DEFERRED + NOT_COMPILED_BY_TORCH, ids=lambda f: f.__name__)
def test_marked_dynamic(fn):
    # nothing specialises the marked dim (it would raise DynamicDimSpecialized)
    check(fn, seeded_calls(*SIZES), mark_dims=[(0, 0)], graphs=1, breaks=0,
          oracle=fn not in NOT_COMPILED_BY_TORCH)


@pytest.mark.parametrize("fn", NOT_COMPILED_BY_TORCH, ids=lambda f: f.__name__)
def test_automatic_dynamic_where_torch_compile_gives_up(fn):
    check(fn, seeded_calls(*SIZES), graphs=2, oracle=False)


@pytest.mark.parametrize("fn", DEFERRED, ids=lambda f: f.__name__)
def test_dynamic_true(fn):
    check(fn, seeded_calls(*SIZES), dynamic=True, graphs=1)


def test_string_stored_outside_the_frame():
    box = {}

    def f(x):
        return stored_on_a_module_like_object(x, box)
    cf = armature.compile(f, backend="eager")
    for x in (torch.randn(2, 3), torch.randn(3, 3)):
        armature.mark_dynamic(x, 0)
        cf(x)
        assert box == {"text": f"{x.shape[0]} rows"}


# text needed while tracing: a constant, the size specialised (as torch.compile)

def concatenated(x):
    text = f"{x.shape[0]}"
    return x + 1, text + "!", "<" + text, text * 2


def methods(x):
    text = f"n={x.shape[0]}"
    return x + 1, text.upper(), text.split("="), len(text), text.startswith("n=2")


def compared(x):
    text = f"{x.shape[0]}"
    return x + 1, text == "3", text != "3", text in ("2", "4"), "3" == text


def dict_key(x):
    d = {f"{x.shape[0]}": 1, "3": 2}
    return x + 1, d.get("3"), len(d)


def joined(x):
    return x + 1, "-".join([f"{x.shape[0]}", "b"]), "".join([f"{i}" for i in x.shape])


@pytest.mark.parametrize("fn", [concatenated, methods, compared, dict_key, joined], ids=lambda f: f.__name__)
def test_text_needed_while_tracing_specialises(fn):
    check(fn, seeded_calls(*SIZES))


class Attention(torch.nn.Module):
    """An attention layer as TrOCR and XGLM have it on transformers 4.x:
    shape checks with f-string messages over ``bsz * self.num_heads``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.num_heads, self.head_dim = 2, 4
        self.proj = torch.nn.Linear(8, 24)

    def forward(self, hidden):
        bsz, tgt_len, _ = hidden.size()
        q, k, v = (t.reshape(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
                   .reshape(bsz * self.num_heads, tgt_len, self.head_dim) for t in self.proj(hidden).chunk(3, -1))
        w = torch.bmm(q, k.transpose(1, 2))
        if w.size() != (bsz * self.num_heads, tgt_len, tgt_len):
            raise ValueError(f"Attention weights should be of size {(bsz * self.num_heads, tgt_len, tgt_len)}, "
                             f"but is {w.size()}")
        _log.debug("attention over %d positions: %s", tgt_len, f"{w.shape}")
        out = torch.bmm(w.softmax(-1), v)
        return out.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2).reshape(bsz, tgt_len, -1)


def test_attention_layer_one_graph():
    lengths = seeded_calls((2, 5, 8), (2, 7, 8), (2, 9, 8))
    check(Attention(), lengths[:1], graphs=1, breaks=0)
    check(Attention(), lengths, mark_dims=[(0, 1)], graphs=1, breaks=0)
    check(Attention(), lengths + seeded_calls((3, 4, 8), (4, 6, 8)), graphs=3)   # (static, length, batch)


def indexed(x):
    text = f"{x.shape[0]}x"
    return x + 1, text[0], text[-1:], text[::-1]


def test_indexing_specialises():
    check(indexed, seeded_calls(*SIZES))
