"""Rewrite a code object so that its calls go through a router.

A frame that armature runs natively instead of splitting (a graph break
inside a loop over modules, driver/native_frames.py) still wants the user
code it calls compiled, the way torch.compile compiles the frames a skipped
frame calls.  armature has no frame hook, so the native frame's own bytecode
is rewritten: each call site ``f(a, b, k=c)`` becomes ``router(f, (a, b, c),
("k",))``, and the router decides, per callable, whether to call a compiled
form of it or the callable itself.

Only call sites whose callable is found by a short backward walk over
straight-line code (no jump target in between) and pushed by a plain load
(a local, a cell, an attribute, a subscript, a global) are rewritten.  Calls
of ``super``, ``locals``, ``vars``, ``globals``, ``dir``, ``eval``, ``exec``,
``sys._getframe`` and ``inspect.currentframe`` keep their site: they look at
the calling frame, which must stay the user's.  Everything else is left as it
is, so a site the walk cannot read simply runs natively.

Both stack layouts of a call are handled: 3.11's ``[NULL|method,
callable|self, args...]`` with ``PRECALL``/``CALL`` and ``KW_NAMES`` (3.12:
the same without ``PRECALL``), and 3.13's ``[callable, NULL|self, args...]`` with ``CALL``/``CALL_KW``.  A method
load (3.11 ``LOAD_METHOD``, 3.12+ ``LOAD_ATTR`` with the method bit) feeding a
rewritten site becomes a plain attribute load plus ``PUSH_NULL``: the router
receives the bound method.
"""
from __future__ import annotations

import types

from bytecode import Bytecode, Instr, Label

from ..pyversion import VERSION
from .spelling import SPELLING

#: callables that inspect the frame that calls them: never routed
FRAME_LOOKERS = frozenset({"super", "locals", "vars", "globals", "dir", "eval", "exec", "breakpoint",
                           "__import__", "_getframe", "currentframe", "stack", "getouterframes"})

#: loads whose result may be routed: the name or attribute is what is checked
_NAMED_LOADS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_ATTR",
                          "LOAD_METHOD", "LOAD_NAME"})
_ANON_LOADS = frozenset({"BINARY_SUBSCR"})


def _name_of(instr: Instr):
    arg = instr.arg
    if isinstance(arg, tuple):
        arg = arg[-1]
    if isinstance(arg, str):
        return arg
    return getattr(arg, "name", None)     # bytecode's CellVar / FreeVar


def _pops_pushes(instr: Instr):
    """(items popped, items pushed) of the instructions a call's operands
    are usually made of; None for anything else (the walk gives up)."""
    name, arg = instr.name, instr.arg
    if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_CONST", "LOAD_DEREF", "LOAD_CLOSURE", "PUSH_NULL",
                "LOAD_NAME", "LOAD_FAST_AND_CLEAR", "LOAD_ASSERTION_ERROR", "LOAD_SMALL_INT",
                "LOAD_COMMON_CONSTANT"):
        return 0, 1
    if name == "LOAD_FAST_LOAD_FAST":
        return 0, 2
    if name == "LOAD_GLOBAL":
        return 0, 2 if isinstance(arg, tuple) and arg[0] else 1
    if name == "LOAD_ATTR":
        return 1, 2 if isinstance(arg, tuple) and arg[0] else 1
    if name == "LOAD_METHOD":
        return 1, 2
    if name in ("BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP", "CONTAINS_OP", "IS_OP"):
        return 2, 1
    if name == "BINARY_SLICE":
        return 3, 1
    if name == "POP_TOP":
        return 1, 0
    if name == "COPY":
        return 0, 1
    if name in ("UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "GET_ITER", "TO_BOOL", "FORMAT_SIMPLE",
                "CONVERT_VALUE"):
        return 1, 1
    if name == "FORMAT_WITH_SPEC":
        return 2, 1
    if name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_SLICE", "BUILD_STRING"):
        return arg, 1
    if name == "BUILD_MAP":
        return 2 * arg, 1
    if name == "BUILD_CONST_KEY_MAP":
        return arg + 1, 1
    if name in ("KW_NAMES", "PRECALL", "NOP", "RESUME", "EXTENDED_ARG", "NOT_TAKEN"):
        return 0, 0
    if name == "CALL":
        return arg + 2, 1
    if name == "CALL_KW":
        return arg + 3, 1
    return None


_UNCONDITIONAL = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP", "JUMP_NO_INTERRUPT",
                            "JUMP_BACKWARD_NO_INTERRUPT", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS",
                            "RERAISE"})


def _jump_pops(instr: Instr, taken: bool):
    """Items a jump instruction pops on its taken / fall-through path; None
    for instructions that are not jumps this walk follows."""
    name = instr.name
    if name.startswith("POP_JUMP_"):
        return 1
    if name in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):   # 3.11
        return 0 if taken else 1
    if name in ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP", "JUMP_NO_INTERRUPT"):
        return 0
    return None


def _jump_sources(items: list) -> dict:
    sources: dict = {}
    for i, it in enumerate(items):
        if isinstance(it, Instr) and isinstance(it.arg, Label):
            sources.setdefault(id(it.arg), []).append(i)
    return sources


def _pusher(items: list, end: int, depth: int, sources: dict):
    """The instruction (its index in ``items``) that pushed the stack slot
    ``depth`` below the top as it is just before ``items[end]``, and which of
    its pushes that slot is (0: its lowest).  The walk goes backwards through
    straight-line code and, at a jump target not reached by falling
    through, to the nearest jump that leads there (a conditional expression
    among the arguments); None where it meets anything else."""
    i = end - 1
    while i >= 0:
        it = items[i]
        if isinstance(it, Label):
            prev = _prev_instr(items, i)
            if prev is not None and items[prev].name not in _UNCONDITIONAL:
                i -= 1       # reached by falling through: the same stack
                continue
            srcs = [s for s in sources.get(id(it), ()) if s < i]
            if not srcs:
                return None
            src = max(srcs)
            pops = _jump_pops(items[src], taken=True)
            if pops is None:
                return None
            depth += pops
            i = src - 1
            continue
        if not isinstance(it, Instr):   # SetLineno, TryBegin/TryEnd: no stack effect
            i -= 1
            continue
        if isinstance(it.arg, Label):
            if it.name in _UNCONDITIONAL:
                return None
            pops = _jump_pops(it, taken=False)
            if pops is None:
                return None
            depth += pops
            i -= 1
            continue
        if it.name == "SWAP":     # (a rewritten call among the arguments)
            if depth < it.arg:
                return None       # it moves the slot looked for
            i -= 1
            continue
        effect = _pops_pushes(it)
        if effect is None:
            return None
        pops, pushes = effect
        if depth < pushes:
            return i, pushes - 1 - depth
        depth = depth - pushes + pops
        i -= 1
    return None


def _routable(instr: Instr) -> bool:
    if instr.name in _ANON_LOADS:
        return True
    if instr.name == "BINARY_OP" and instr.arg == 26:   # 3.14's subscript
        return True
    if instr.name not in _NAMED_LOADS:
        return False
    name = _name_of(instr)
    return name is not None and name not in FRAME_LOOKERS


def _i(name, arg=None, like: Instr | None = None) -> Instr:
    lineno = like.lineno if like is not None else None
    if arg is None:
        return Instr(name, lineno=lineno) if lineno is not None else Instr(name)
    return Instr(name, arg, lineno=lineno) if lineno is not None else Instr(name, arg)


def route_calls(code: types.CodeType, router, router_kw) -> types.CodeType:
    """``code`` with its routable call sites calling ``router(f, args)`` or
    ``router_kw(f, args, kwnames)`` (3.11, 3.12) / ``router_kw(f, args_then_kwnames)``
    (3.13) instead of ``f(*args, **kw)``."""
    bc = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    items = [SPELLING.unborrow(i) for i in bc]
    if VERSION >= (3, 13):
        rewritten = _rewrite_313(items, router, router_kw)
    elif VERSION == (3, 12):
        rewritten = _rewrite_312(items, router, router_kw)
    else:
        rewritten = _rewrite_311(items, router, router_kw)
    if rewritten == 0:
        return code
    bc.clear()
    bc.extend(items)
    return bc.to_code(stacksize=code.co_stacksize + 4, compute_exception_stack_depths=False)


def _rewrite_311(items: list, router, router_kw) -> int:
    """[NULL|meth, callable|self, a1..an] KW_NAMES? PRECALL n CALL n."""
    return _rewrite_null_below(items, router, router_kw, precall=True)


def _rewrite_312(items: list, router, router_kw) -> int:
    """[NULL|meth, callable|self, a1..an] KW_NAMES? CALL n: 3.11's layout
    without PRECALL; a method load is LOAD_ATTR with the method bit."""
    return _rewrite_null_below(items, router, router_kw, precall=False)


def _is_method_load(instr: Instr) -> bool:
    """3.11's LOAD_METHOD or 3.12's LOAD_ATTR with the method bit: pushes
    [meth, self] (or [NULL, bound])."""
    if instr.name == "LOAD_METHOD":
        return True
    return instr.name == "LOAD_ATTR" and isinstance(instr.arg, tuple) and bool(instr.arg[0])


def _rewrite_null_below(items: list, router, router_kw, precall: bool) -> int:
    """The 3.11/3.12 layout, the NULL (or the method) below the callable;
    ``precall``: a PRECALL n precedes each CALL n (3.11)."""
    count = 0
    i = 0
    while i < len(items):
        it = items[i]
        if not (isinstance(it, Instr) and it.name == ("PRECALL" if precall else "CALL")):
            i += 1
            continue
        n = it.arg
        sources = _jump_sources(items)
        if precall:
            call_at = _next_instr(items, i)
            if call_at is None or items[call_at].name != "CALL" or items[call_at].arg != n:
                i += 1
                continue
        else:
            call_at = i
        kw_at = _prev_instr(items, i)
        kwnames = items[kw_at].arg if kw_at is not None and items[kw_at].name == "KW_NAMES" else None
        start = kw_at if kwnames is not None else i
        found = _pusher(items, start, n, sources)
        if found is None or not _routable(items[found[0]]):
            i = call_at + 1
            continue
        at, which = found
        pusher = items[at]
        if _is_method_load(pusher):
            # [meth, self] -> [NULL, bound method]
            name = pusher.arg[1] if isinstance(pusher.arg, tuple) else pusher.arg
            plain = (False, name) if not precall else name
            items[at:at + 1] = [_i("LOAD_ATTR", plain, pusher), _i("PUSH_NULL", like=pusher),
                                _i("SWAP", 2, pusher)]
            shift = 2
        elif pusher.name == "LOAD_GLOBAL" and isinstance(pusher.arg, tuple) and pusher.arg[0]:
            shift = 0   # [NULL, global]
        else:
            below = _pusher(items, start, n + 1, sources)
            if below is None or items[below[0]].name != "PUSH_NULL":
                i = call_at + 1
                continue
            shift = 0
        start += shift
        i += shift
        call_at += shift
        call = items[call_at]
        tail = [_i("BUILD_TUPLE", n, call), _i("LOAD_CONST", router if kwnames is None else router_kw, call),
                _i("SWAP", 3, call), _i("SWAP", 2, call)]
        if kwnames is not None:
            tail.append(_i("LOAD_CONST", kwnames, call))
        argc = 2 if kwnames is None else 3
        if precall:
            tail.append(_i("PRECALL", argc, call))
        tail.append(_i("CALL", argc, call))
        items[start:call_at + 1] = tail
        count += 1
        i = start + len(tail)
    return count


def _rewrite_313(items: list, router, router_kw) -> int:
    """[callable|meth, NULL|self, a1..an (, kwnames)] CALL n / CALL_KW n."""
    count = 0
    i = 0
    while i < len(items):
        it = items[i]
        if not (isinstance(it, Instr) and it.name in ("CALL", "CALL_KW")):
            i += 1
            continue
        n = it.arg
        sources = _jump_sources(items)
        kw = it.name == "CALL_KW"
        depth = n + 1 + kw     # the callable's slot
        found = _pusher(items, i, depth, sources)
        if found is None or not _routable(items[found[0]]):
            i += 1
            continue
        at, which = found
        pusher = items[at]
        shift = 0
        if pusher.name == "LOAD_ATTR" and isinstance(pusher.arg, tuple) and pusher.arg[0]:
            # [meth, self] -> [bound method, NULL]
            items[at:at + 1] = [_i("LOAD_ATTR", (False, pusher.arg[1]), pusher), _i("PUSH_NULL", like=pusher)]
            shift = 1
        elif pusher.name == "LOAD_GLOBAL" and isinstance(pusher.arg, tuple) and pusher.arg[0]:
            pass        # [global, NULL]
        else:
            above = _pusher(items, i, depth - 1, sources)
            if above is None or items[above[0]].name != "PUSH_NULL":
                i += 1
                continue
        i += shift
        call = items[i]
        tail = [_i("BUILD_TUPLE", n + kw, call), _i("LOAD_CONST", router_kw if kw else router, call),
                _i("SWAP", 4, call), _i("SWAP", 2, call), _i("CALL", 2, call)]
        items[i:i + 1] = tail
        count += 1
        i += len(tail)
    return count


def _next_instr(items, i):
    j = i + 1
    while j < len(items) and not isinstance(items[j], (Instr, Label)):
        j += 1
    return j if j < len(items) and isinstance(items[j], Instr) else None


def _prev_instr(items, i):
    j = i - 1
    while j >= 0 and not isinstance(items[j], (Instr, Label)):
        j -= 1
    return j if j >= 0 and isinstance(items[j], Instr) else None
