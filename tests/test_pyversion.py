"""The version registry (pyversion.py) and the per-version spelling of
generated code (codegen/spelling.py), checked on whichever interpreter runs
the suite (3.11, 3.12 or 3.13: ./dev test, ./dev test --python 3.12,
./dev test --python 3.13)."""
from __future__ import annotations

import dis
import functools
import inspect
import json
import logging
import pathlib
import sys
import types

import pytest
import torch

import armature
from armature.codegen.emitter import Emitter
from armature.codegen.spelling import SPELLING
from armature import pyversion

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: opcodes ordinary functions may contain that armature does not trace, on
#: purpose: each makes the frame run as Python (or a graph break), and why
NOT_TRACED = {
    "CHECK_EG_MATCH": "except* (exception groups)",
    "PREP_RERAISE_STAR": "except* (3.11; 3.12+: CALL_INTRINSIC_2, which refuses it)",
}


def _function_codes(code):
    if code.co_flags & inspect.CO_OPTIMIZED and not code.co_flags & (
            inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE):
        yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _function_codes(c)


def test_running_version_is_supported():
    assert pyversion.is_supported(), pyversion.unsupported_reason()


def test_every_handler_is_a_real_opcode_of_this_version():
    for name in pyversion.HANDLERS:
        assert name in dis.opmap and dis.opmap[name] < 256, name


def test_ordinary_code_has_a_handler_for_every_opcode():
    """Every instruction this interpreter's compiler emits in the functions of
    armature, its tests and some of the standard library has a handler (or
    is deliberately not traced)."""
    import collections
    sources = [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py"),
               *pathlib.Path(collections.__file__).parent.glob("*.py"),
               *pathlib.Path(json.__file__).parent.glob("*.py"),
               pathlib.Path(functools.__file__), pathlib.Path(inspect.__file__)]
    missing = {}
    for path in sources:
        module = compile(path.read_text(), str(path), "exec")
        for code in _function_codes(module):
            for inst in dis.get_instructions(code):
                if inst.opname not in pyversion.HANDLERS and inst.opname not in NOT_TRACED:
                    missing.setdefault(inst.opname, f"{path}: {code.co_qualname}")
    assert not missing, f"opcodes without a handler on {sys.version_info[:2]}: {missing}"


def test_an_unknown_version_runs_the_original_code_and_says_why(monkeypatch, caplog):
    monkeypatch.setattr(pyversion, "VERSION", (3, 99))
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    armature.reset()
    with caplog.at_level(logging.DEBUG, logger="armature.fallbacks"):
        out = armature.compile(f, backend="eager")(torch.ones(2))
    assert torch.equal(out, torch.full((2,), 2.0)) and calls == [1]
    assert any("3.99" in r.getMessage() and "CPython" in r.getMessage() for r in caplog.records)
    with pytest.raises(armature.Unsupported, match="3.99"):
        armature.reset()
        armature.compile(f, backend="eager", fullgraph=True)(torch.ones(2))


def _run_emitted(out: Emitter, *args):
    """Wrap emitted instructions (leaving one value on the stack) in a function."""
    from bytecode import Bytecode, Instr
    bc = Bytecode([Instr("RESUME", 0), *out.instrs, Instr("RETURN_VALUE")])
    bc.argnames = [f"a{i}" for i in range(len(args))]
    bc.argcount = len(args)
    from bytecode import CompilerFlags
    bc.flags = CompilerFlags.OPTIMIZED | CompilerFlags.NEWLOCALS
    return types.FunctionType(bc.to_code(), {})(*args)


@pytest.mark.parametrize("nargs", [0, 1, 2, 3])
def test_generated_calls_put_the_null_where_this_version_wants_it(nargs):
    out = Emitter()
    out.instr("PUSH_NULL")
    out.load_const(lambda *a: ("called", a))
    for i in range(nargs):
        out.load_const(i)
    out.call(nargs)
    assert _run_emitted(out) == ("called", tuple(range(nargs)))


def test_generated_nested_and_method_calls():
    out = Emitter()
    out.instr("PUSH_NULL")
    out.load_const(lambda a, b: a + b)
    out.instr("LOAD_FAST", "a0")
    out.instr("LOAD_METHOD", "upper")      # a method call inside the arguments
    out.call(0)
    out.instr("PUSH_NULL")                  # and a nested function call
    out.load_const(str.lower)
    out.load_const("XY")
    out.call(1)
    out.call(2)
    assert _run_emitted(out, "ab") == "ABxy"


def test_generated_call_function_ex():
    out = Emitter()
    out.instr("PUSH_NULL")
    out.load_const(lambda *a, **k: (a, k))
    out.load_const((1, 2))
    out.build_map({"k": _Const(3)})
    out.instr("CALL_FUNCTION_EX", 1)
    assert _run_emitted(out) == ((1, 2), {"k": 3})


class _Const:
    """A stand-in Value that rebuilds as a constant."""
    source = None

    def __init__(self, v):
        self.v = v

    def reconstruct(self, out):
        out.load_const(self.v)


def test_generated_attribute_reads():
    out = Emitter()
    out.instr("LOAD_FAST", "a0")
    out.instr("LOAD_ATTR", "real")
    assert _run_emitted(out, 3 + 4j) == 3.0


def test_spelling_is_the_running_versions():
    assert type(SPELLING).__name__ == "Spelling3" + str(sys.version_info[1])


# CPython 3.12's opcodes (its `dis` documentation and Lib/opcode.py): the
# handler ranges for 3.12 are checked against this list on every interpreter
# (and the list against the real one on 3.12, below).
OPCODES_312 = set("""
CACHE POP_TOP PUSH_NULL INTERPRETER_EXIT END_FOR END_SEND NOP UNARY_NEGATIVE UNARY_NOT UNARY_INVERT
RESERVED BINARY_SUBSCR BINARY_SLICE STORE_SLICE GET_LEN MATCH_MAPPING MATCH_SEQUENCE MATCH_KEYS
PUSH_EXC_INFO CHECK_EXC_MATCH CHECK_EG_MATCH WITH_EXCEPT_START GET_AITER GET_ANEXT BEFORE_ASYNC_WITH
BEFORE_WITH END_ASYNC_FOR CLEANUP_THROW STORE_SUBSCR DELETE_SUBSCR GET_ITER GET_YIELD_FROM_ITER
LOAD_BUILD_CLASS LOAD_ASSERTION_ERROR RETURN_GENERATOR RETURN_VALUE SETUP_ANNOTATIONS LOAD_LOCALS
POP_EXCEPT STORE_NAME DELETE_NAME UNPACK_SEQUENCE FOR_ITER UNPACK_EX STORE_ATTR DELETE_ATTR
STORE_GLOBAL DELETE_GLOBAL SWAP LOAD_CONST LOAD_NAME BUILD_TUPLE BUILD_LIST BUILD_SET BUILD_MAP
LOAD_ATTR COMPARE_OP IMPORT_NAME IMPORT_FROM JUMP_FORWARD POP_JUMP_IF_FALSE POP_JUMP_IF_TRUE
LOAD_GLOBAL IS_OP CONTAINS_OP RERAISE COPY RETURN_CONST BINARY_OP SEND LOAD_FAST STORE_FAST
DELETE_FAST LOAD_FAST_CHECK POP_JUMP_IF_NOT_NONE POP_JUMP_IF_NONE RAISE_VARARGS GET_AWAITABLE
MAKE_FUNCTION BUILD_SLICE JUMP_BACKWARD_NO_INTERRUPT MAKE_CELL LOAD_CLOSURE LOAD_DEREF STORE_DEREF
DELETE_DEREF JUMP_BACKWARD LOAD_SUPER_ATTR CALL_FUNCTION_EX LOAD_FAST_AND_CLEAR EXTENDED_ARG
LIST_APPEND SET_ADD MAP_ADD COPY_FREE_VARS YIELD_VALUE RESUME MATCH_CLASS FORMAT_VALUE
BUILD_CONST_KEY_MAP BUILD_STRING LIST_EXTEND SET_UPDATE DICT_MERGE DICT_UPDATE CALL KW_NAMES
CALL_INTRINSIC_1 CALL_INTRINSIC_2 LOAD_FROM_DICT_OR_GLOBALS LOAD_FROM_DICT_OR_DEREF
""".split())


def test_312_handler_ranges_name_only_312_opcodes_once():
    handlers = pyversion.handlers_for((3, 12))
    assert not [n for n in handlers if n not in OPCODES_312], "handlers for opcodes 3.12 does not have"
    assert not [n for n, fns in handlers.items() if len(fns) > 1], "two handlers for one opcode"
    function_opcodes = OPCODES_312 - {
        "CACHE", "INTERPRETER_EXIT", "RESERVED", "LOAD_LOCALS", "STORE_NAME", "DELETE_NAME", "LOAD_NAME",
        "SETUP_ANNOTATIONS", "LOAD_BUILD_CLASS", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF",
        "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "END_ASYNC_FOR", "GET_AWAITABLE", "CHECK_EG_MATCH"}
    assert sorted(function_opcodes - set(handlers)) == []


@pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="checks the list against a 3.12 interpreter")
def test_the_312_opcode_list_is_the_interpreters():
    real = {n for n, op in dis.opmap.items() if op < 256 and not n.startswith("INSTRUMENTED_")}
    assert OPCODES_312 == real


def test_supported_versions():
    assert pyversion.SUPPORTED == ((3, 11), (3, 12), (3, 13), (3, 14))


@pytest.mark.parametrize("version", [(3, 11), (3, 12), (3, 13), (3, 14)])
def test_each_supported_version_gets_one_handler_per_opcode(version):
    handlers = pyversion.handlers_for(version)
    assert not [n for n, fns in handlers.items() if len(fns) > 1]
    if version == sys.version_info[:2]:
        assert set(handlers) == set(pyversion.HANDLERS)
