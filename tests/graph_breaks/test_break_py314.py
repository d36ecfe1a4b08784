"""The constructs CPython 3.14 compiles differently from 3.13 (trace/ops/py314.py,
codegen/spelling.py's Spelling314): a ``with`` block over two stack slots
(LOAD_SPECIAL; WITH_EXCEPT_START one slot deeper), a loop left through
END_FOR and POP_ITER, subscripts as BINARY_OP 26 and constant slices as
LOAD_CONST, CALL_FUNCTION_EX with its kwargs slot, ``assert`` with
LOAD_COMMON_CONSTANT, PEP 649 ``__annotate__`` functions in functions and
class bodies.  The programs run on every supported version (compiled
against eager, after several calls, with graph breaks inside the
constructs); what only exists on 3.14 is gated: t-strings are refused with
a clear reason, and generated code never loads with LOAD_FAST_BORROW.
(No ``from __future__ import annotations`` here: it would turn 3.14's
``__annotate__`` functions back into strings.)"""
import dis
import sys
import types

import pytest
import torch

import armature

from .util import FALLBACK_LOGGER, check_calls, collect_log

X = torch.tensor([1.0, -2.0, 3.0])
PY314 = sys.version_info[:2] >= (3, 14)
only_314 = pytest.mark.skipif(not PY314, reason="a CPython 3.14 construct")


def _x():
    return (X.clone(),)


class Recorder:
    """A context manager that records what its __exit__ saw, and may
    swallow the exception."""

    def __init__(self, swallow=False):
        self.events = []
        self.swallow = swallow

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, typ, val, tb):
        self.events.append(("exit", typ.__name__ if typ else None, val is not None))
        return self.swallow


def _recorder_state(swallow=False):
    def make():
        return (X.clone(), Recorder(swallow))
    return make


def with_break_inside(x, rec):
    with rec as r:
        y = x * 2
        armature.graph_break()
        y = y + len(r.events)
    return y, rec.events


def test_with_body_over_two_slots_across_a_break():
    check_calls(with_break_inside, _recorder_state(), snapshot=lambda s: [s[0], s[1].events])


def with_raise_swallowed(x, rec):
    with rec:
        y = x + 1
        armature.graph_break()
        if y.sum() > 0:
            raise ValueError("positive")
        y = y * 3
    return x - 1, rec.events


def test_exit_sees_the_exception_one_slot_deeper():
    check_calls(with_raise_swallowed, _recorder_state(swallow=True),
                snapshot=lambda s: [s[0], s[1].events])


def with_raise_propagates(x, rec):
    with rec:
        x.add_(1)
        raise KeyError("k")


def test_exit_sees_an_exception_that_propagates():
    check_calls(with_raise_propagates, _recorder_state(), snapshot=lambda s: [s[0], s[1].events],
                min_graphs=0)


def loop_with_break_then_exhausted(x):
    total = x * 0
    for i in range(3):
        total = total + x * i
        armature.graph_break()
    for v in [x, x + 1]:
        total = total - v
    return total, i


@pytest.mark.usefixtures("split_loop_breaks")   # (a resume function inside the loop)
def test_loops_left_through_pop_iter():
    check_calls(loop_with_break_then_exhausted, _x)


def subscripts_and_calls(x):
    d = {"a": x, "b": x[1:]}            # (3.14: no BUILD_CONST_KEY_MAP)
    parts = [x[0], x[:2], d["b"][-1]]   # BINARY_OP 26, LOAD_CONST slice(...)
    armature.graph_break()
    kw = {"dim": 0}
    args = (x,)
    assert x.numel() == 3, "three"      # LOAD_COMMON_CONSTANT AssertionError
    return torch.sum(*args, **kw), torch.cat(parts[1:] + [x[0:1]]), torch.neg(*args), parts[0] + 1


def test_subscripts_constant_slices_and_star_calls_across_a_break():
    check_calls(subscripts_and_calls, _x)


def failing_assert(x):
    y = x + 1
    assert y.numel() == 2, "not two"
    return y


def test_assert_raises_assertion_error():
    check_calls(failing_assert, _x, min_graphs=0, exc_match="type")   # (pytest rewrites the message)


def annotated_nested_function(x):
    def scale(v: torch.Tensor, k: int = 2) -> torch.Tensor:
        return v * k
    armature.graph_break()
    return scale(x), scale.__annotations__


def escaping_annotated_function(x):
    def shift(v: torch.Tensor) -> torch.Tensor:
        return v + 1
    return shift(x), shift


def test_annotations_of_a_function_made_in_the_frame():
    check_calls(annotated_nested_function, _x)
    armature.reset()
    compiled = armature.compile(escaping_annotated_function, backend="eager")
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        for _ in range(2):
            out, shift = compiled(X.clone())
            assert torch.equal(out, X + 1) and torch.equal(shift(X), X + 1)
            assert shift.__annotations__ == {"v": torch.Tensor, "return": torch.Tensor}
    assert not fallbacks, fallbacks


def annotated_class_in_frame(x):
    class Box:
        size: int = 3

        def grow(self, v: torch.Tensor) -> torch.Tensor:
            return v + self.size
    b = Box()
    return b.grow(x), Box.size


def test_class_body_with_annotations():
    check_calls(annotated_class_in_frame, _x, allow_fallback=True, min_graphs=0)


T_STRING_SOURCE = """
def uses_template(x):
    name = "w"
    t = t"{name}!"
    return x + 1, t.strings, [i.value for i in t.interpolations]
"""


@only_314
def test_t_strings_are_refused_with_a_reason():
    ns = {}
    exec(compile(T_STRING_SOURCE, "<t-string test>", "exec"), ns)
    fn = ns["uses_template"]
    armature.reset()
    with pytest.raises(armature.Unsupported, match="t-string"):
        armature.compile(fn, backend="eager", fullgraph=True)(X.clone())
    armature.reset()
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        out = armature.compile(fn, backend="eager")(X.clone())
    expected = fn(X.clone())
    assert torch.equal(out[0], expected[0]) and out[1:] == expected[1:]
    assert any("t-string" in m for m in fallbacks), fallbacks


def borrowed_then_stored(x, n):
    y = x + 1
    armature.graph_break()
    for _ in range(n):
        x = x + y          # (3.14 loads x with LOAD_FAST_BORROW, then stores x)
        y = y * 2
        armature.graph_break()
    return x, y


def _all_codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _all_codes(c)


@only_314
def test_generated_code_never_loads_with_load_fast_borrow(monkeypatch):
    import bytecode
    made = []
    to_code = bytecode.Bytecode.to_code

    def recording(self, *a, **k):
        code = to_code(self, *a, **k)
        made.append(code)
        return code

    monkeypatch.setattr(bytecode.Bytecode, "to_code", recording)
    assert any(i.opname == "LOAD_FAST_BORROW" for i in dis.get_instructions(borrowed_then_stored))
    armature.reset()
    # (a break inside a loop runs the frame natively by default, as torch.compile; 'split' makes
    # the resume functions inside the loop whose code this test reads)
    with armature.config.patch(loop_breaks="split"):
        check_calls(borrowed_then_stored, lambda: (X.clone(), 3), min_graphs=2)
    assert made, "no code was generated"
    borrowed = {i.opname for code in made for c in _all_codes(code) for i in dis.get_instructions(c)
                if "BORROW" in i.opname}
    assert not borrowed, borrowed


@only_314
def test_the_handlers_of_this_version_are_registered():
    from armature import pyversion
    for name in ("LOAD_SMALL_INT", "LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW",
                 "LOAD_COMMON_CONSTANT", "LOAD_SPECIAL", "POP_ITER", "NOT_TAKEN",
                 "BUILD_TEMPLATE", "BUILD_INTERPOLATION"):
        assert name in pyversion.HANDLERS, name
    for gone in ("BINARY_SUBSCR", "BEFORE_WITH", "BUILD_CONST_KEY_MAP", "LOAD_ASSERTION_ERROR",
                 "RETURN_CONST"):
        assert gone not in pyversion.HANDLERS, gone
