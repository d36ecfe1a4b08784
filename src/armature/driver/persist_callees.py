"""The warm start of split frames: the compiled callables a transformed
function calls, as data, and found again in another process
(driver/persistent_cache.py stores and loads entries; this module says what
a split frame's entry refers to and how its resume functions' and callees'
own entries are keyed).

A frame split at a graph break runs its graph, the breaking instruction and
then hands the rest to a *resume function* (codegen/resume.py); a callee
whose own trace broke is called through its *compiled wrapper*
(runtime/wrappers.py).  Both are CompiledFunctions held as constants of
the transformed code; neither can be marshalled.  They are written as what
makes them:

- a resume function as its place in the original code: the offset it
  resumes at, the layout of its arguments (stack slots, locals, cells) and
  the caller's dynamic-shapes and module-parameters settings, plus the hash
  of its code.  The warm process asks runtime/wrappers.resume_function_for
  for that very key, which rebuilds the code (build_resume_code is a
  function of the original code and the layout, and the original code's
  hash is in the entry's key) and checks the rebuilt code against the hash
  (another ``bytecode`` library could lay it out differently; a constant
  of the transformed code, the ``lasti`` of a handler's hand-off, is an
  offset in it).  The dynamism the break handed over (which dims and
  numbers the resume function's first trace treats as dynamic) and the
  modules the residual code makes anew are restored with it.
- a callee's compiled wrapper as the import path of the callee (checked
  like any object named by import: same file, same code) and its settings.

The resume function's own entries are stored like a root's, under a key
that is the root code's key plus the resume function's identity (offset,
layout, code hash); a wrapper's entries under its function's own key, with
its role, so they are never mistaken for the entries of a user's
``armature.compile`` of that function.  Each is checked when it is loaded,
on the call that needs it, exactly as a root entry is: its key, every
source file its trace read, its guards on that call.  A resume function
whose stored entries do not pass on the warm call compiles as it would in
the cold process.

Not written (the entry is then not stored, logged): a function made inside
the frame called through its compiled form (runtime/wrappers.NestedCompiled:
kept per code object of this process), a resume function or wrapper
compiled with another backend, DDP and FSDP runners.  A user's own compiled
function met as a constant is named by import like any object.
"""
from __future__ import annotations

import hashlib
import marshal
import types

from .. import upcalls
from ..names import origin_of
from . import persist_codec as codec
from .persist_codec import NotStorable


def role_of(cf) -> tuple | None:
    """("resume", code, offset, slots, locals, cells), ("wrapper",), or
    None for a user's compiled function (runtime/wrappers.py sets it)."""
    return getattr(cf, "_persist_role", None)


def resume_code_hash(code: types.CodeType) -> str:
    """A rebuilt resume function's code as the entry knows it: bytecode,
    names, layout and every constant (objects by their import path)."""
    data, patches = codec.encode_code(code, {})
    return hashlib.sha256((codec.code_hash(marshal.loads(data)) + repr(patches)).encode()).hexdigest()


def role_parts(cf, code_part) -> dict:
    """What the key adds for a resume function's or wrapper's entries
    (``code_part(code)``: the key's part for a code object)."""
    role = role_of(cf)
    if role[0] == "wrapper":
        return {"role": "wrapper"}
    _, base, offset, slots, local_names, cell_names = role
    return {"code": code_part(base), "role": "resume",
            "resume": repr((offset, slots, local_names, cell_names, resume_code_hash(cf._fn.__code__)))}


def index_name(cf) -> str:
    """The code's name in the index of last keys (for the miss's log)."""
    code = cf._fn.__code__
    return f"{code.co_qualname}#wrapper" if role_of(cf) == ("wrapper",) else code.co_qualname


# --- storing ------------------------------------------------------------------

def _constants(code: types.CodeType):
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            yield from _constants(k)
        else:
            yield k


def encode_callees(cf, code: types.CodeType) -> tuple[dict, tuple]:
    """({id(constant): ("special", name)}, ((name, data), ...)) for each
    compiled callable ``code`` (the transformed code of ``cf``'s entry)
    holds; NotStorable for one that cannot be found again."""
    from ..runtime.wrappers import NestedCompiled
    CompiledFunction = upcalls.CompiledFunction
    special: dict = {}
    callees = []
    for k in _constants(code):
        if id(k) in special:
            continue
        if isinstance(k, types.MethodType) and isinstance(k.__self__, NestedCompiled):
            raise NotStorable("it calls a function made inside the frame through its compiled form (kept per "
                              "code object of this process: runtime/wrappers.NestedCompiled)")
        if not isinstance(k, CompiledFunction) or role_of(k) is None:
            continue   # (a user's compiled function is named by import, as any object: persist_codec.ref_of)
        name = f"callee{len(callees)}"
        callees.append((name, _encode_callee(cf, k)))
        special[id(k)] = ("special", name)
    return special, tuple(callees)


def _encode_callee(cf, callee) -> tuple:
    role = role_of(callee)
    if callee._backend is not cf._backend:
        raise NotStorable(f"it calls {callee._fn.__qualname__} compiled with another backend")
    if role[0] == "wrapper":
        if callee._fullgraph:
            raise NotStorable(f"its callee {callee._fn.__qualname__} is compiled with fullgraph")
        return ("wrapper", codec.ref_of(callee._fn), callee._dynamic, callee._module_parameters)
    _, base, offset, slots, local_names, cell_names = role
    if base is not origin_of(cf._fn.__code__)[0] or callee._fn.__globals__ is not cf._fn.__globals__:
        raise NotStorable(f"it resumes another function's code ({callee._fn.__qualname__})")
    from ..values.nn.modules import _FRESH_MODULE_ARGS, _NEW_MODULE_ARGS
    rcode = callee._fn.__code__
    return ("resume", offset, slots, local_names, cell_names, callee._dynamic, callee._module_parameters,
            resume_code_hash(rcode), encode_hints(callee._cache),
            tuple(sorted(_FRESH_MODULE_ARGS.get(rcode, ()))), tuple(sorted(_NEW_MODULE_ARGS.get(rcode, ()))))


def encode_hints(cache) -> tuple:
    """The cache's dynamic-shape decisions (hints for later traces: one
    that cannot be written is left out)."""
    hints = []
    for src, dims in cache.auto_dims.items():
        try:
            hints.append(("dims", codec.encode_source(src), tuple(sorted(dims))))
        except NotStorable:
            pass
    for src in cache.dynamic_sources:
        try:
            hints.append(("number", codec.encode_source(src)))
        except NotStorable:
            pass
    return tuple(sorted(hints, key=repr))


def apply_hints(cache, hints) -> None:
    for hint in hints:
        try:
            if hint[0] == "dims":
                cache.auto_dims.setdefault(codec.decode_source(hint[1]), set()).update(hint[2])
            else:
                cache.dynamic_sources.add(codec.decode_source(hint[1]))
        except LookupError:
            pass


def encode_break(brk) -> tuple | None:
    """The entry's graph break (for explain, the report and summaries)."""
    if brk is None:
        return None

    def loc(u):
        return None if u is None else (str(u.filename), int(u.lineno), str(u.func_name))
    return (str(brk.reason), loc(brk.location), tuple(loc(u) for u in brk.user_stack), bool(brk.internal),
            brk.site_hint if isinstance(brk.site_hint, str) else None)


def decode_break(data):
    if data is None:
        return None
    from ..diagnostics.errors import UserLocation
    from .compile_frame import GraphBreak

    def loc(t):
        return None if t is None else UserLocation(*t)
    reason, location, stack, internal, site_hint = data
    return GraphBreak(reason, loc(location), [loc(t) for t in stack], internal=internal, site_hint=site_hint)


# --- loading ------------------------------------------------------------------

def decode_callees(cf, callees) -> dict:
    """{name: the compiled callable} for a loaded entry of ``cf``;
    LookupError when one is not the one the entry was built with."""
    out = {}
    for name, data in callees:
        if data[0] == "wrapper":
            _, ref, dynamic, module_parameters = data
            from ..runtime.wrappers import compiled_wrapper_for
            out[name] = compiled_wrapper_for(codec.resolve_ref(ref), cf._backend, dynamic, module_parameters)
        elif data[0] == "resume":
            out[name] = _decode_resume(cf, data)
        else:
            raise LookupError(f"unknown callee kind {data[0]!r}")
    return out


def _decode_resume(cf, data):
    from ..codegen.resume import ResumeNotPossible, build_resume_code
    from ..runtime.wrappers import resume_function_for
    from ..values.nn.modules import _FRESH_MODULE_ARGS, _NEW_MODULE_ARGS
    _, offset, slots, local_names, cell_names, dynamic, module_parameters, chash, hints, fresh, new = data
    base = origin_of(cf._fn.__code__)[0]
    try:
        resume = resume_function_for(cf._fn, base, offset, slots, local_names, cell_names, cf._backend,
                                     build_resume_code, dynamic=dynamic, module_parameters=module_parameters)
    except ResumeNotPossible as e:
        raise LookupError(f"its resume function at {offset} cannot be rebuilt: {e}") from None
    rcode = resume._fn.__code__
    if resume_code_hash(rcode) != chash:
        raise LookupError(f"its resume function at {offset} rebuilt differs from the stored one")
    apply_hints(resume._cache, hints)
    if fresh:
        _FRESH_MODULE_ARGS.setdefault(rcode, set()).update(fresh)
    if new:
        _NEW_MODULE_ARGS.setdefault(rcode, set()).update(new)
    return resume
