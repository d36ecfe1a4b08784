"""Resume functions: the rest of a frame after a graph break.

A resume function is a new code object: the original bytecode, with a
prologue that pushes the saved stack (NULLs where the frame had them; inside
an ``except`` body, the handled exception is made current again with
PUSH_EXC_INFO) and jumps to the break's continuation, which may also be an
exception handler (the natively run instruction raised).  Its arguments are the saved stack, the
live locals and the frame's cells; reads and writes of closure variables are
rewritten to go through those cell objects, so closures made before the
break keep sharing them.  Resume functions are cached by (code, offset,
layout) and compiled like any function on their first call.

The saved stack and cell arguments are named with the code's generated
prefix (``___stack0``, ``___cell_x``: names.py), which none of the
code's own locals starts with.
"""
from __future__ import annotations

import functools
import types

from bytecode import Bytecode, CellVar, CompilerFlags, FreeVar, Instr, Label

from ..trace.frame import instructions_of
from ..names import ORIGIN, cell_arg, generated_prefix, handed_over_name, local_key, origin_of, stack_arg, user_local_name
from .spelling import SPELLING
from . import zero_arg_super

#: kinds of saved stack slots: an ordinary value, a NULL, and the previous
#: exception PUSH_EXC_INFO saved (passed as the exception being handled)
VALUE_SLOT, NULL_SLOT, EXC_INFO_SLOT = "v", "n", "e"
#: global names whose loads a resume function routes through
#: runtime/frame_view.resolve (they look at the calling frame)
FRAME_LOOKERS = frozenset({"locals", "vars", "dir", "eval", "exec"})


@functools.lru_cache(maxsize=1024)
def build_resume_code(code: types.CodeType, target_offset: int, slots: tuple[str, ...],
                      local_names: tuple[str, ...], cell_names: tuple[str, ...]) -> types.CodeType:
    prefix = generated_prefix(code)
    bc = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    insts, index_of = instructions_of(code)
    real = [i for i, item in enumerate(bc) if isinstance(item, Instr)]
    target_pos = real[index_of[target_offset]]
    label = Label()
    items = list(bc)
    items.insert(target_pos, label)

    supers = _zero_arg_super_calls(items) if "__class__" in code.co_freevars else set()
    cells = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
    body = []
    extra_depth = 0   # (a resolved global needs two more stack slots)
    expansion = []  # new instructions per original instruction, in order
    for i, item in enumerate(items):
        if isinstance(item, Instr):
            item = SPELLING.unborrow(item)
            if i in supers:
                # super(__class__, first), with a shadowing super called bare
                prefix_call = [Instr(n, a, location=item.location) for n, a in SPELLING.super_call_tail[:-1]]
                new = (zero_arg_super.adapted_global(prefix_call, SPELLING.null_above_callable, item.location)
                       + _super_arguments(code, local_names, item, prefix))
            elif any(i - k in supers for k in range(1, len(SPELLING.super_call_tail) + 1)):
                new = [Instr(item.name, 2, location=item.location)]   # (PRECALL 0 /) CALL 0 -> 2
            elif item.name == "LOAD_SUPER_ATTR" and not item.arg[1]:
                # 3.12+ zero-argument super().name: its class and first
                # argument are already on the stack; call super with them
                new = zero_arg_super.adapt_below_two(item.location) + [
                    Instr(item.name, (item.arg[0], True, item.arg[2]), location=item.location)]
            elif item.name == "LOAD_GLOBAL" and item.arg[1] in FRAME_LOOKERS:
                new = _resolved_global(item)
                extra_depth = 2
            elif item.name in ("LOAD_ATTR", "LOAD_METHOD") and _attr_name(item) in FRAME_LOOKERS:
                new = _resolved_attr(item)   # (pytest's rewritten asserts call @py_builtins.locals())
                extra_depth = 2
            else:
                new = _rewrite_cells(item, cells, prefix, code)
            expansion.append(len(new))
            body.extend(new)
        else:
            body.append(item)

    lineno = code.co_firstlineno
    prologue = [Instr("RESUME", 0, lineno=lineno)]
    argnames = []
    for i, kind in enumerate(slots):
        if kind == NULL_SLOT:
            prologue.append(Instr("PUSH_NULL", lineno=lineno))
            continue
        name = stack_arg(prefix, i)
        argnames.append(name)
        prologue.append(Instr("LOAD_FAST", name, lineno=lineno))
        if kind == EXC_INFO_SLOT:
            # re-enter the except body: the argument is the exception it
            # handles; PUSH_EXC_INFO pushes the thread's real previous one
            # and makes the argument current (sys.exc_info(), bare raise)
            prologue.append(Instr("PUSH_EXC_INFO", lineno=lineno))
            prologue.append(Instr("POP_TOP", lineno=lineno))
    prologue.append(Instr("JUMP_FORWARD", label, lineno=lineno))
    argnames += [local_key(code, n) for n in local_names] + [cell_arg(prefix, c) for c in cell_names]

    out = Bytecode(prologue + body)
    out.name = f"__resume_{code.co_name}_at_{target_offset}"
    out.qualname = f"{code.co_qualname}.<resume at {target_offset}>"
    out.filename = code.co_filename
    out.first_lineno = lineno
    out.argnames = argnames
    out.argcount = len(argnames)
    out.posonlyargcount = 0
    out.kwonlyargcount = 0
    out.flags = CompilerFlags.OPTIMIZED | CompilerFlags.NEWLOCALS
    out.cellvars = []
    out.freevars = []
    # Stack depths come from the original code (handler depths kept by
    # from_code), not from `bytecode`'s flow analysis: the prologue jumps
    # into the middle of try-blocks, so handlers (reached only by
    # exceptions) would be analysed without their entry depth.  The
    # prologue rebuilds the original's stack at the target, so the
    # original's size bounds it (+1 for PUSH_EXC_INFO, +1 for a cell
    # rewritten into LOAD_FAST + LOAD/STORE_ATTR, +1 more for a new cell's call).
    new_code = out.to_code(stacksize=code.co_stacksize + 3 + extra_depth, compute_exception_stack_depths=False)
    # Map the new code's offsets back to the original's, so that a break in
    # a resume function resumes the *original* code (no resume-of-resume).
    new_insts = [i for i in _dis_insts(new_code)]
    pos = len(prologue)
    offsets = {}
    for orig, n in zip(insts, expansion):
        if n:
            offsets[new_insts[pos].offset] = orig.offset
        pos += n
    ORIGIN[new_code] = (code, offsets)
    return new_code


def _dis_insts(code):
    import dis
    return [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]


class ResumeNotPossible(Exception):
    pass


def _zero_arg_super_calls(items) -> set:
    """Positions of ``super()`` calls (LOAD_GLOBAL super; [PRECALL 0;] CALL 0)."""
    out = set()
    tail = SPELLING.super_call_tail
    for i, item in enumerate(items[:len(items) - len(tail)]):
        if isinstance(item, Instr) and item.name == "LOAD_GLOBAL" and item.arg == (True, "super"):
            after = items[i + 1:i + 1 + len(tail)]
            if all(isinstance(a, Instr) and (a.name, a.arg) == t for a, t in zip(after, tail)):
                out.add(i)
    return out


def _super_arguments(code, local_names, at: Instr, prefix: str) -> list:
    """Zero-argument ``super()`` reads the frame's ``__class__`` cell and first
    local; a resume function has neither where CPython looks, so the call is
    made explicit: ``super(__class__, <first argument>)``."""
    if code.co_argcount == 0:
        raise ResumeNotPossible("super() in a method without a first argument")
    first = code.co_varnames[0]
    loads = [Instr("LOAD_FAST", cell_arg(prefix, "__class__"), location=at.location),
             SPELLING.load_attr("cell_contents", at.location)]
    if first in code.co_cellvars:
        loads += [Instr("LOAD_FAST", cell_arg(prefix, first), location=at.location),
                  SPELLING.load_attr("cell_contents", at.location)]
    elif first in local_names:
        loads.append(Instr("LOAD_FAST", first, location=at.location))
    else:
        raise ResumeNotPossible(f"super() after {first!r} is no longer bound")
    return loads


_FAST_OPS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "STORE_FAST", "DELETE_FAST", "LOAD_FAST_AND_CLEAR",
                       "LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"})


def _var_name(arg) -> str:
    """A local's name (the bytecode library names a 3.13 cell slot by a CellVar)."""
    return arg.name if isinstance(arg, (CellVar, FreeVar)) else arg


def _resolved_global(ins: Instr) -> list:
    """``LOAD_GLOBAL locals`` (or ``vars``, ``dir``) as
    ``resolve(<the global>)``: natively the builtin would show the resume
    function's own locals (runtime/frame_view.py)."""
    from ..runtime.frame_view import resolve
    loc = ins.location
    null_below, name = ins.arg
    call = [Instr("PUSH_NULL", location=loc), Instr("LOAD_CONST", resolve, location=loc)]
    if SPELLING.null_above_callable:
        call.reverse()
    call.append(Instr("LOAD_GLOBAL", (False, name), location=loc))
    call += [Instr(op, 1, location=loc) for op, _ in SPELLING.super_call_tail]   # ([PRECALL 1,] CALL 1)
    null = [Instr("PUSH_NULL", location=loc)] if null_below else []
    return call + null if SPELLING.null_above_callable else null + call


def _attr_name(ins: Instr):
    return ins.arg[1] if isinstance(ins.arg, tuple) else ins.arg


def _resolved_attr(ins: Instr) -> list:
    """``obj.locals`` (or ``.vars``, ``.dir``; a method load included) as
    ``resolve(obj.locals)``, pushed the way the original load pushed it."""
    from ..runtime.frame_view import resolve
    loc = ins.location
    name = _attr_name(ins)
    method = ins.name == "LOAD_METHOD" or (isinstance(ins.arg, tuple) and ins.arg[0])

    def i(op, arg=None):
        return Instr(op, location=loc) if arg is None else Instr(op, arg, location=loc)
    out = [SPELLING.load_attr(name, loc)]                         # [attr]
    if SPELLING.null_above_callable:   # 3.13: [resolve, NULL, attr]
        out += [i("LOAD_CONST", resolve), i("SWAP", 2), i("PUSH_NULL"), i("SWAP", 2)]
    else:                              # 3.11-3.12: [NULL, resolve, attr]
        out += [i("PUSH_NULL"), i("SWAP", 2), i("LOAD_CONST", resolve), i("SWAP", 2)]
    out += [i(op, 1) for op, _ in SPELLING.super_call_tail]        # ([PRECALL 1,] CALL 1)
    if method:   # a method load's layout: [NULL, value] (3.13: [value, NULL])
        out.append(i("PUSH_NULL"))
        if not SPELLING.null_above_callable:
            out.append(i("SWAP", 2))
    return out


def _rewrite_cells(ins: Instr, cells: frozenset, prefix: str, code: types.CodeType) -> list:
    """Closure-variable opcodes become operations on cell objects held in
    ordinary locals (the resume function has no cells of its own); a local
    whose name is not an identifier gets its ``___local`` name."""
    name = ins.name
    if name == "COPY_FREE_VARS":
        return []
    if name == "MAKE_CELL":
        # the function's own MAKE_CELLs precede RESUME and are never reached
        # from the prologue; 3.12+'s inlined comprehensions make a fresh cell
        # for a variable a closure captures: here a new cell object
        return SPELLING.new_cell(cell_arg(prefix, _var_name(ins.arg)), ins.location)
    if name in _FAST_OPS:
        # A closure variable's slot holds its cell (CPython's model): 3.13
        # loads the cell with LOAD_FAST to build a closure, and 3.12+'s
        # inlined comprehensions save it (LOAD_FAST_AND_CLEAR), use the slot
        # as a plain local or give it a new cell (MAKE_CELL), and put it back
        # (STORE_FAST).  Here that slot is the ``___cell_`` argument.
        def slot(v):
            v = _var_name(v)
            return cell_arg(prefix, v) if v in cells else local_key(code, v)
        arg = tuple(slot(v) for v in ins.arg) if isinstance(ins.arg, tuple) else slot(ins.arg)
        return [Instr(name, arg, location=ins.location)]
    if name in ("LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"):
        var = ins.arg.name if isinstance(ins.arg, (CellVar, FreeVar)) else ins.arg
        cell = Instr("LOAD_FAST", cell_arg(prefix, var), location=ins.location)
        if name == "LOAD_CLOSURE":
            return [cell]
        if name in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
            return [cell, SPELLING.load_attr("cell_contents", ins.location)]
        if name == "STORE_DEREF":
            return [cell, Instr("STORE_ATTR", "cell_contents", location=ins.location)]
        return [cell, Instr("DELETE_ATTR", "cell_contents", location=ins.location)]
    return [ins]
