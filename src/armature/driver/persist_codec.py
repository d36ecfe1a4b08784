"""What a cache entry is on disk, and how it becomes one again (the warm
start: driver/persistent_cache.py stores, finds and validates files).

An entry is written as plain data (marshal: tuples, strings, numbers, code
objects), never as pickled objects:

- its guards, each as its kind, its Source (a tree of the known Source
  classes) and its expectation; an object the guards compare against is
  written as the import path that names it (``("obj", module, qualname)``),
  checked at store time to name that very object, and with the file and
  code hash it came from, checked at load time;
- an identity guard on a module or tensor the call reaches through its
  arguments (``self is <M object>``, ``self.l.weight is <Parameter>``) only
  makes sense in the process that built it: it is written as "bound at
  load" and rebuilt from its Source on the first call of the warm process
  (the object found there, of the very class it had) -- the entry then
  assumes exactly what it assumed of the object it was traced with;
- the transformed code, marshalled, with each constant marshal cannot
  write replaced by its import path, the compiled graph by a placeholder;
- the graph as the Python source FX generated for it, the names it reads
  as import paths, and the Source of each parameter/buffer it holds
  (rebound from the warm call's objects).

Whatever cannot be written so raises NotStorable with the reason; the
entry is then not stored (logged under ARMATURE_LOGS=cache), never stored
without the part it lacks.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import marshal
import os
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Any

import torch

from ..guards.guard import Guard, Kind, TensorMeta
from ..guards import sources as S


#: marshal's format 2, without references: formats 3 and 4 mark an object that may recur by its
#: reference count at that moment, so one entry written by two processes would differ in its bytes
#: (and in its name, the hash of them: concurrent writers of one entry would leave two files)
MARSHAL_VERSION = 2


class NotStorable(Exception):
    """An entry (or a part of it) that cannot be written faithfully."""


@dataclass
class PersistInfo:
    """What _finish knows about an entry that storing needs."""

    fn: types.FunctionType
    guards: list
    graph_module: Any
    compiled: Any
    backend: Any
    attr_sources: dict
    input_sources: list
    traced_files: frozenset
    unstorable: str | None
    has_setup: bool
    #: the graph has regions and was compiled with regions.backend_for's variant of the backend
    regions_backend: bool = False
    #: inductor's artifact as stored (set while encoding: its kernel libraries are written beside the entry)
    graph_artifact: Any = None
    #: code traced that comes from no file (TraceContext.unfiled_code)
    unfiled_code: tuple = ()
    #: (dynamic,): the frame runs natively with its calls compiled (a break
    #: inside a loop: driver/native_frames.routed_runner), None: transformed code
    routed: tuple | None = None


# --- files and code ---------------------------------------------------------

_ARMATURE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")})


def versioned_file(path: str) -> bool:
    """A file the key's versions already cover (armature's own sources are
    hashed into the key, torch's and the standard library's by version)."""
    path = os.path.abspath(path)
    if path.startswith(_ARMATURE_DIR + os.sep) or path.startswith(_TORCH_DIR + os.sep):
        return True
    return any(path.startswith(d + os.sep) and "site-packages" not in path for d in _STDLIB_DIRS)


_FILE_HASHES: dict = {}


def file_hash(path: str) -> str | None:
    """The content hash of a source file (memoised by mtime and size), None
    when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    h = _FILE_HASHES.get(key)
    if h is None:
        try:
            with open(path, "rb") as f:
                h = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            return None
        _FILE_HASHES[key] = h
    return h


def code_hash(code: types.CodeType) -> str:
    """Bytecode, constants, names, closure layout and line table of a code
    object (and of the code objects nested in it).  Not the hash of its
    marshal: marshal flags an object shared by reference only while
    something else holds it (its reference count), so the same code
    marshals differently once a trace has looked at its constants."""
    h = hashlib.sha256()
    _hash_code(h, code)
    return h.hexdigest()


def _hash_code(h, code: types.CodeType) -> None:
    for part in (code.co_code, code.co_exceptiontable, code.co_linetable):
        h.update(len(part).to_bytes(8, "little") + part)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                   code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags, code.co_stacksize,
                   code.co_name, code.co_qualname, code.co_firstlineno, len(code.co_consts))).encode())
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            h.update(b"<code>")
            _hash_code(h, k)
        else:
            h.update(_const_text(k).encode() + b"\x00")


def _const_text(k) -> str:
    """A constant's text, the same in every process (a frozenset's order
    depends on the string hash seed)."""
    if type(k) is tuple:
        return "(" + ",".join(_const_text(x) for x in k) + ")"
    if type(k) is frozenset:
        return "frozenset(" + ",".join(sorted(_const_text(x) for x in k)) + ")"
    if type(k) is float or type(k) is complex:
        return f"{type(k).__name__}:{k!r}:{k.hex() if type(k) is float else ''}"
    return f"{type(k).__name__}:{k!r}"


def check_unfiled_code(codes, guards) -> None:
    """Code traced from no file (``<string>``: no content hash can vouch for
    it) is accepted only as the code of a function an identity guard of the
    entry names: that guard's reference is checked by code hash on load
    (resolve_ref), and its module's file by content.  Anything else raises
    NotStorable."""
    if not codes:
        return
    named = {id(c) for g in guards if g.kind is Kind.ID_MATCH and (c := named_code(g.expected)) is not None}
    for code in codes:
        if id(code) not in named:
            raise NotStorable(f"code {code.co_qualname if hasattr(code, 'co_qualname') else code.co_name} from "
                              f"{code.co_filename} is not a function a guard names (nothing on disk vouches for it)")


def origin_of_file(path: str | None) -> tuple | None:
    """(path, content hash) of a user file, None for a versioned one."""
    if path is None or versioned_file(path):
        return None
    h = file_hash(path)
    if h is None:
        raise NotStorable(f"source file {path!r} cannot be read (code not from a file?)")
    return (os.path.abspath(path), h)


# --- objects named by import --------------------------------------------------

def _resolve(mod: str, qualname: str, importing: bool) -> Any:
    m = importlib.import_module(mod) if importing else sys.modules.get(mod)
    if m is None:
        raise LookupError(mod)
    obj = m
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _defining_file(obj) -> str | None:
    """The file whose content vouches for ``obj``'s definition: its code's
    file, or its module's (a class; a function whose code was made by exec,
    as a dataclass's ``__init__`` is: its file is ``<string>``, and what
    generated it is the class in that module)."""
    code = getattr(obj, "__code__", None)
    if isinstance(code, types.CodeType) and not code.co_filename.startswith("<"):
        return code.co_filename
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    return getattr(mod, "__file__", None)


def _named_function(obj) -> types.FunctionType | None:
    """The function a descriptor wraps (a property's getter, a classmethod's
    or staticmethod's function, a cached_property's), whose qualified name
    says which class holds the descriptor."""
    import functools
    if isinstance(obj, property):
        fn = obj.fget
    elif isinstance(obj, (classmethod, staticmethod)):
        fn = obj.__func__
    elif isinstance(obj, functools.cached_property):
        fn = obj.func
    else:
        return None
    return fn if isinstance(fn, types.FunctionType) else None


def _descriptor_ref(obj) -> tuple | None:
    """("attr", module, class qualname, name, origin, code hash) of a
    descriptor held in a class's ``__dict__`` (an identity guard on
    ``type(self).__dict__['output_attentions']``), or None."""
    fn = _named_function(obj)
    if fn is None or not isinstance(fn.__module__, str) or "<" in fn.__qualname__ or "." not in fn.__qualname__:
        return None
    owner_qn = fn.__qualname__.rsplit(".", 1)[0]
    try:
        owner = _resolve(fn.__module__, owner_qn, importing=False)
    except Exception:   # noqa: BLE001 - not reachable by that name
        return None
    if not isinstance(owner, type):
        return None
    names = [k for k, v in vars(owner).items() if v is obj]
    if len(names) != 1:
        return None
    return ("attr", fn.__module__, owner_qn, names[0], origin_of_file(_defining_file(fn)), code_hash(fn.__code__))


def named_code(obj) -> types.CodeType | None:
    """The code an identity guard on ``obj`` vouches for (its code hash is
    checked on load): a function's, or a descriptor's function's."""
    if isinstance(obj, types.CodeType):
        return obj
    fn = obj if isinstance(obj, types.FunctionType) else _named_function(obj)
    return fn.__code__ if fn is not None else None


def ref_of(obj) -> tuple:
    """How a warm process finds ``obj`` again, or NotStorable."""
    if isinstance(obj, types.ModuleType):
        if sys.modules.get(obj.__name__) is obj:
            return ("mod", obj.__name__)
        raise NotStorable(f"module {obj.__name__} is not the one imported under that name")
    if obj is sys.modules:   # (the import guards' ``sys.modules.get(name) is module``)
        return ("sys.modules",)
    import logging
    if isinstance(obj, logging.Logger) and logging.getLogger(obj.name) is obj:   # (a module's ``logger``)
        return ("logger", obj.name)
    if type(obj) is dict:
        name = obj.get("__name__")
        m = sys.modules.get(name) if isinstance(name, str) else None
        if m is not None and m.__dict__ is obj:
            return ("globals", name, origin_of_file(getattr(m, "__file__", None)))
        raise NotStorable("a dict that is not a module's globals")
    named = _torch_globals().get(id(obj))
    if named is not None and named[2] is obj:
        return ("obj", named[0], named[1], None, None)
    mod = getattr(obj, "__module__", None)
    qn = getattr(obj, "__qualname__", None)
    if isinstance(mod, str) and isinstance(qn, str) and "<" not in qn:
        try:
            found = _resolve(mod, qn, importing=False)
        except Exception:   # noqa: BLE001 - not reachable by that name
            found = None
        depth = 0   # (a decorated function: the guards name the function the decorator wraps)
        while found is not obj and depth < _MAX_UNWRAP and isinstance(found, types.FunctionType) \
                and isinstance(getattr(found, "__wrapped__", None), types.FunctionType):
            found, depth = found.__wrapped__, depth + 1
        if found is obj:
            code = getattr(obj, "__code__", None)
            origin = origin_of_file(_defining_file(obj))
            chash = code_hash(code) if isinstance(code, types.CodeType) else None
            return ("obj", mod, qn, origin, chash) if depth == 0 else ("unwrap", mod, qn, depth, origin, chash)
    ref = _descriptor_ref(obj)
    if ref is not None:
        return ref
    raise NotStorable(f"{type(obj).__name__} object {_short(obj)} cannot be named by an import path")


#: how many ``__wrapped__`` links (functools.wraps decorators) a named function may be behind
_MAX_UNWRAP = 4

_TORCH_GLOBALS: dict | None = None


def _torch_globals() -> dict:
    """id -> (module, name, object) of the globals of torch's and armature's
    modules and of ``types`` (a hook registry, ``types.NoneType``): named by
    where they live, as they have no qualified name of their own."""
    global _TORCH_GLOBALS
    if _TORCH_GLOBALS is None:
        found: dict = {}
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _scan(found)
        _TORCH_GLOBALS = found
    return _TORCH_GLOBALS


def _scan(found: dict) -> None:
        for name, m in list(sys.modules.items()):
            if not (name == "types" or name == "builtins" or name.startswith(("torch", "armature"))) \
                    or not isinstance(m, types.ModuleType):
                continue
            for attr, value in list(vars(m).items()):
                if attr.startswith("__") or type(value) in _LITERALS or type(value) is types.ModuleType:
                    continue
                found.setdefault(id(value), (name, attr, value))


def resolve_ref(ref: tuple) -> Any:
    """The object a ref names in this process; raises LookupError (with why)
    when it is not the one the entry was built with."""
    kind = ref[0]
    if kind == "sys.modules":
        return sys.modules
    if kind == "logger":
        import logging
        return logging.getLogger(ref[1])
    if kind == "mod":
        return importlib.import_module(ref[1])
    if kind == "globals":
        _check_origin(ref[2], ref[1])
        return importlib.import_module(ref[1]).__dict__
    if kind in ("obj", "unwrap", "attr"):
        if kind == "obj":
            _, mod, qn, origin, chash = ref
        elif kind == "unwrap":
            _, mod, qn, depth, origin, chash = ref
        else:
            _, mod, owner_qn, name, origin, chash = ref
            qn = f"{owner_qn}.{name}"
        try:
            if kind == "attr":
                obj = vars(_resolve(mod, owner_qn, importing=True))[name]
            else:
                obj = _resolve(mod, qn, importing=True)
            if kind == "unwrap":
                for _ in range(depth):
                    obj = obj.__wrapped__
        except Exception as e:   # noqa: BLE001
            raise LookupError(f"{mod}.{qn} no longer exists ({type(e).__name__})") from None
        checked = _named_function(obj) if kind == "attr" else obj
        if kind == "attr" and checked is None:
            raise LookupError(f"{mod}.{qn} is no longer a descriptor of a function")
        if origin is not None:
            path = _defining_file(checked)
            if path is None or os.path.abspath(path) != origin[0]:
                raise LookupError(f"{mod}.{qn} now comes from {path}, not {origin[0]}")
            _check_origin(origin, f"{mod}.{qn}")
        if chash is not None:
            code = getattr(checked, "__code__", None)
            if not isinstance(code, types.CodeType) or code_hash(code) != chash:
                raise LookupError(f"the code of {mod}.{qn} changed")
        return obj
    raise LookupError(f"unknown reference {ref!r}")


def _check_origin(origin, what: str) -> None:
    if origin is None:
        return
    if file_hash(origin[0]) != origin[1]:
        raise LookupError(f"the source of {what} changed ({origin[0]})")


def _short(obj) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"<{type(obj).__name__} {name}>" if name else f"<{type(obj).__name__}>"


# --- values -------------------------------------------------------------------

_LITERALS = (type(None), bool, int, float, str, bytes, complex)
#: Source classes written field by field (others: NotStorable)
_SOURCES = {c.__name__: c for c in (S.LocalSource, S.GlobalSource, S.AttrSource, S.ItemSource,
                                    S.ModuleMemberSource, S.ClosureCellSource, S.ClosureSource,
                                    S.ConstantSource, S.DictEntrySource)}


def _extra_sources():
    from ..graph.dynamic import SizeSource
    from ..guards.sources import LengthSource
    from ..values.objects.builtin_subclasses import _DictKeysSource, _DictViewSource, _SeqViewSource
    from ..values.tensors.symbolic import BinOpSource, CallSource, CompareSource, ScalarTensorSource
    from ..values.tensors.torch_function import ModeSource
    # (Sources of plain data: their fields are Sources, numbers and objects named by import)
    return {c.__name__: c for c in (SizeSource, LengthSource, _DictKeysSource, _DictViewSource, _SeqViewSource,
                                    CompareSource, BinOpSource, CallSource, ScalarTensorSource, ModeSource)}


def encode(v) -> tuple:
    """A value of a guard or Source as marshal-able data."""
    if type(v) in _LITERALS or v is Ellipsis:
        return ("v", v)
    if type(v) is tuple:
        return ("t", tuple(encode(x) for x in v))
    if type(v) is list:
        return ("l", tuple(encode(x) for x in v))
    if type(v) in (set, frozenset):
        return ("s" if type(v) is set else "fs", tuple(encode(x) for x in v))
    if isinstance(v, torch.dtype):
        return ("dtype", str(v).removeprefix("torch."))
    if isinstance(v, torch.device):
        return ("device", str(v))
    if isinstance(v, TensorMeta):
        return ("meta", encode(v.cls), encode(v.dtype), encode(v.device), encode(v.size), encode(v.stride),
                v.requires_grad, v.full)
    if isinstance(v, S.Source):
        return encode_source(v)
    return ("ref", ref_of(v))


def decode(d):
    tag = d[0]
    if tag == "v":
        return d[1]
    if tag == "t":
        return tuple(decode(x) for x in d[1])
    if tag == "l":
        return [decode(x) for x in d[1]]
    if tag == "s":
        return {decode(x) for x in d[1]}
    if tag == "fs":
        return frozenset(decode(x) for x in d[1])
    if tag == "dtype":
        dt = getattr(torch, d[1])
        assert isinstance(dt, torch.dtype)
        return dt
    if tag == "device":
        return torch.device(d[1])
    if tag == "meta":
        return TensorMeta(decode(d[1]), decode(d[2]), decode(d[3]), decode(d[4]), decode(d[5]), d[6], d[7])
    if tag == "src":
        return decode_source(d)
    if tag == "ref":
        return resolve_ref(d[1])
    raise LookupError(f"unknown value tag {tag!r}")


def encode_source(src) -> tuple:
    cls = type(src)
    if _SOURCES.get(cls.__name__) is not cls and _extra_sources().get(cls.__name__) is not cls:
        raise NotStorable(f"a guard or input reads {src} ({cls.__name__} is not stored)")
    fields = []
    for f in dataclasses.fields(src):
        value = getattr(src, f.name)
        if cls is S.GlobalSource and f.name == "globals_id":
            fields.append((f.name, encode(S._GLOBALS_BY_ID[value])))
        elif cls is S.ConstantSource and f.name == "obj_id":
            fields.append((f.name, encode(S._CONSTS[value])))
        else:
            fields.append((f.name, encode(value)))
    return ("src", cls.__name__, tuple(fields))


def decode_source(d):
    cls = _SOURCES.get(d[1]) or _extra_sources().get(d[1])
    if cls is None:
        raise LookupError(f"unknown source class {d[1]}")
    kwargs = {}
    for name, value in d[2]:
        obj = decode(value)
        if cls is S.GlobalSource and name == "globals_id":
            S._GLOBALS_BY_ID[id(obj)] = obj
            obj = id(obj)
        elif cls is S.ConstantSource and name == "obj_id":
            S._CONSTS[id(obj)] = obj
            obj = id(obj)
        kwargs[name] = obj
    return cls(**kwargs)


# --- guards -------------------------------------------------------------------

def _bindable(obj, source) -> bool:
    """An object only this process can name, which a warm call finds again
    at the guard's source: a module or tensor reached from the arguments."""
    return isinstance(obj, (torch.nn.Module, torch.Tensor)) and isinstance(source.root(), S.LocalSource)


def encode_guard(g: Guard) -> tuple:
    exp = g.expected
    if g.kind is Kind.ID_MATCH and isinstance(exp, types.CodeType):
        # (``f.__code__ is <code>``: a code object is immutable, so the one found at the source
        # on load is bound when its marshalled content hashes the same; its file, if it has
        # one, must be unchanged too)
        e = ("code", code_hash(exp), None if exp.co_filename.startswith("<") else origin_of_file(exp.co_filename))
    elif g.kind is Kind.ID_MATCH:
        try:
            e = encode(exp)
        except NotStorable:
            if isinstance(exp, types.FunctionType) and g.source is not None:
                # (a function no import path names, ``os.environ.encodekey`` or a decorator's inner
                # function: the one found at the source on load is bound when its code hashes the
                # same and its file is unchanged; what it closes over and its defaults are guarded
                # on their own wherever the trace read them)
                e = ("bindfn", code_hash(exp.__code__), origin_of_file(_defining_file(exp)))
            elif not _bindable(exp, g.source):
                raise
            else:
                e = ("bind", ref_of(type(exp)))
    elif g.kind in (Kind.SAME_OBJECT,):
        e = encode_source(exp)
    elif g.kind is Kind.DISTINCT:
        e = ("t", tuple(encode_source(s) for s in exp))
    else:
        e = encode(exp)
    consts = tuple((k, encode(v)) for k, v in g.consts.items())
    return (int(g.kind), encode_source(g.source) if g.source is not None else None, e, g.text, consts, g.label,
            tuple(g.binds.items()), bool(getattr(g, "modes_active", False)))


def decode_guards(items, read) -> list[Guard]:
    """Guards again; ``read(source)`` reads a source for the warm call (an
    identity bound at load: the object found there, if of the same class)."""
    out = []
    for kind, src, e, text, consts, label, binds, modes in items:
        kind = Kind(kind)
        source = decode_source(src) if src is not None else None
        if e[0] == "code":
            obj = read(source)
            if not isinstance(obj, types.CodeType) or code_hash(obj) != e[1]:
                raise LookupError(f"{source} is not the code the entry was built with")
            _check_origin(e[2], str(source))
            exp = obj
        elif e[0] == "bindfn":
            obj = read(source)
            if not isinstance(obj, types.FunctionType) or code_hash(obj.__code__) != e[1]:
                raise LookupError(f"{source} is not the function the entry was built with")
            _check_origin(e[2], str(source))
            exp = obj
        elif e[0] == "bind":
            cls = resolve_ref(e[1])
            obj = read(source)
            if type(obj) is not cls:
                raise LookupError(f"{source} is a {type(obj).__name__}, the entry was built for a "
                                  f"{cls.__name__}")
            # (checked here, once: the identity guard then pins this very object on every call, as
            # the cold entry's did; a TYPE_MATCH beside it would only add a check per call)
            exp = obj
        else:
            exp = decode(e)
        g = Guard(kind, source, exp, text, {k: decode(v) for k, v in consts}, label, dict(binds))
        if modes:
            g.modes_active = True
        out.append(g)
    return out


# --- code ---------------------------------------------------------------------

def encode_code(code: types.CodeType, special: dict) -> tuple[bytes, tuple]:
    """(marshalled code with placeholders, [(path, encoded constant)]):
    ``special`` maps id() of a constant to its encoding (the compiled graph)."""
    patches = []

    def walk(c: types.CodeType, path: tuple) -> types.CodeType:
        consts = list(c.co_consts)
        for i, k in enumerate(consts):
            if isinstance(k, types.CodeType):
                consts[i] = walk(k, path + (i,))
                continue
            if id(k) in special:
                patches.append((path + (i,), special[id(k)]))
                consts[i] = None
                continue
            if isinstance(k, (torch.device, torch.dtype)):   # (values: written as such)
                patches.append((path + (i,), encode(k)))
                consts[i] = None
            elif not _immutable_literal(k):
                # (an object the code reaches by identity -- a list, a dict, a
                # module's globals -- named by import, never copied by value)
                patches.append((path + (i,), ("ref", ref_of(k))))
                consts[i] = None
        return c.replace(co_consts=tuple(consts))

    return marshal.dumps(walk(code, ()), MARSHAL_VERSION), tuple(patches)


def _immutable_literal(k) -> bool:
    """A constant a compiler could have made: its value is all there is to it."""
    if type(k) in _LITERALS or k is Ellipsis:
        return True
    if type(k) in (tuple, frozenset):
        return all(_immutable_literal(x) for x in k)
    return False


def decode_code(data: bytes, patches, special: dict) -> types.CodeType:
    code = marshal.loads(data)
    by_path: dict = {}
    for path, enc in patches:
        value = special[enc[1]] if enc[0] == "special" else decode(enc)
        by_path[tuple(path)] = value

    def walk(c: types.CodeType, path: tuple) -> types.CodeType:
        consts = list(c.co_consts)
        for i, k in enumerate(consts):
            if isinstance(k, types.CodeType):
                consts[i] = walk(k, path + (i,))
            elif path + (i,) in by_path:
                consts[i] = by_path[path + (i,)]
        return c.replace(co_consts=tuple(consts))

    return walk(code, ())


# --- FX graphs (rebuilt node by node for a backend that compiles them again) ------

def _encode_target(t) -> tuple:
    if isinstance(t, str):
        return ("v", t)
    if isinstance(t, torch._ops.OpOverload):
        return ("op", t._schema.name, t._overloadname)
    if isinstance(t, torch._ops.OpOverloadPacket):
        return ("packet", t._qualified_op_name)
    if isinstance(t, torch._ops.HigherOrderOperator) and getattr(torch.ops.higher_order, t.name(), None) is t:
        return ("hop", t.name())
    return encode(t)


def _decode_target(d):
    if d[0] == "op":
        ns, name = d[1].split("::")
        packet = getattr(getattr(torch.ops, ns), name)
        return getattr(packet, d[2] or "default")
    if d[0] == "packet":
        ns, name = d[1].split("::")
        return getattr(getattr(torch.ops, ns), name)
    if d[0] == "hop":
        return getattr(torch.ops.higher_order, d[1])
    return decode(d)


def _encode_arg(a):
    if isinstance(a, torch.fx.Node):
        return ("node", a.name)
    from torch.fx.immutable_collections import immutable_dict, immutable_list
    if type(a) in (tuple, list, immutable_list):   # (a node's list arguments are immutable_lists: FX makes them so
        return ("t" if type(a) is tuple else "l", tuple(_encode_arg(x) for x in a))   # again on load)
    if type(a) in (dict, immutable_dict):
        return ("d", tuple((k, _encode_arg(v)) for k, v in a.items()))
    if type(a) is slice:
        return ("slice", _encode_arg(a.start), _encode_arg(a.stop), _encode_arg(a.step))
    if isinstance(a, (torch.layout, torch.memory_format)):
        return encode(a) if id(a) in _torch_globals() else _fail(a)
    return encode(a)


def _fail(a):
    raise NotStorable(f"a graph argument {a!r} cannot be written")


def _decode_arg(d, nodes):
    tag = d[0]
    if tag == "node":
        return nodes[d[1]]
    if tag == "t":
        return tuple(_decode_arg(x, nodes) for x in d[1])
    if tag == "l":
        return [_decode_arg(x, nodes) for x in d[1]]
    if tag == "d":
        return {k: _decode_arg(v, nodes) for k, v in d[1]}
    if tag == "slice":
        return slice(_decode_arg(d[1], nodes), _decode_arg(d[2], nodes), _decode_arg(d[3], nodes))
    return decode(d)


def encode_fx_graph(graph: torch.fx.Graph) -> tuple:
    out = []
    for n in graph.nodes:
        out.append((n.op, n.name, _encode_target(n.target), _encode_arg(tuple(n.args)), _encode_arg(dict(n.kwargs))))
    return tuple(out)


def decode_fx_graph(data) -> torch.fx.Graph:
    g = torch.fx.Graph()
    nodes: dict = {}
    for op, name, target, args, kwargs in data:
        node = g.create_node(op, _decode_target(target), _decode_arg(args, nodes), _decode_arg(kwargs, nodes),
                             name=name)
        if node.name != name:
            raise LookupError(f"graph node {name} came back as {node.name}")
        nodes[name] = node
    return g
