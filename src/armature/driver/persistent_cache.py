"""The warm start: compiled frames kept on disk, so a restarted process runs
its first compiled call without tracing or compiling again.

Layout: ``<cache_dir>/v<FORMAT>/<key>/<entry>.entry``.  ``key`` hashes what
must be equal for any entry of a code to be valid (KeyParts below:
armature's own sources, torch's and Python's versions, the backend and its
options, every config option, the compile settings, the root code).  Each
file is one cache entry (persist_codec.py says what it holds), named by the
hash of its content, so two processes storing the same entry write the same
name (``os.replace`` of a temporary file: either write leaves a whole file).
A file begins with a magic string and the hash of the rest: a truncated or
corrupt file is ignored with one warning and removed.

Loading an entry checks, before anything in it runs: the source files of
every function traced or inlined into it (content hash), every object its
guards or code name by import (same file, same code), then its guards as on
any call (identity guards on the call's modules and parameters rebuilt
from their sources).  The cache directory is trusted as the user's own code
is: an entry whose key matches is executed (marshal, the graph's source).

Beside a code's entries, ``dynamic.hints`` keeps its dynamic-shape
decisions (which dims and numbers became dynamic), also when no entry can
be stored: the next process's first trace starts from them.

Failures to write (a read-only directory, a full disk) turn the cache off
for the process with one warning; nothing here ever fails a call.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import os
import sys
import tempfile
import threading
import time
import types
import warnings

import torch

from .. import config as config_mod
from ..diagnostics import logs
from . import cache_events as events
from . import loaded_graph
from . import persist_callees as callees
from . import persist_codec as codec
from . import persist_shapes
from .persist_codec import NotStorable

log = logs.artifact("cache")

FORMAT = 1
_MAGIC = b"ARMWARM1"
#: config options that do not change what is traced
_NOT_TRACING = ("cache", "cache_dir", "cache_size_mb")

#: what happened in this process (tests and the benchmark read it)
stats = {"stored": 0, "loaded": 0, "not_stored": 0, "rejected": 0, "corrupt": 0, "traces": 0}
_disabled_reason: str | None = None
_warned: set = set()
_lock = threading.Lock()


def enabled() -> bool:
    return config_mod.config.cache and _disabled_reason is None


def cache_root(cache_dir: str | None = None) -> str:
    """The directory of this format's entries (config.cache_dir, or the
    user's cache directory when it is empty)."""
    base = cache_dir or config_mod.config.cache_dir or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "armature")
    return os.path.join(os.path.expanduser(base), f"v{FORMAT}")


# --- the key --------------------------------------------------------------------

_ARMATURE_HASH: str | None = None


def _armature_hash() -> str:
    """All of armature's own source files: its version does not change
    between commits, its behaviour does."""
    global _ARMATURE_HASH
    if _ARMATURE_HASH is None:
        h = hashlib.sha256()
        for root, dirs, files in os.walk(codec._ARMATURE_DIR):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    h.update(os.path.relpath(path, codec._ARMATURE_DIR).encode())
                    with open(path, "rb") as f:
                        h.update(hashlib.sha256(f.read()).digest())
        _ARMATURE_HASH = h.hexdigest()
    return _ARMATURE_HASH


def _backend_part(backend) -> str:
    from ..backends import _REGISTRY, _Backend
    backend = events.stands_for(backend)   # (explain()'s own backend: cache_events.py)
    registered = _REGISTRY.get(getattr(backend, "name", None))
    if not isinstance(backend, _Backend) or registered is None or registered.fn is not backend.fn:
        # (a callable's behaviour is not named by anything a key can hold)
        raise NotStorable(f"backend {backend!r} is a callable, not a registered backend's name")
    if not str(getattr(backend.fn, "__module__", "")).startswith("armature."):
        raise NotStorable(f"backend {backend.name!r} is registered by {backend.fn.__module__}, not armature "
                          f"(only armature's own backends are keyed by armature's sources)")
    fn = backend.fn
    return f"{backend.name}:{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}:{backend.kwargs!r}"


def key_parts(fn: types.FunctionType, backend, fullgraph: bool, dynamic, module_parameters, module=None) -> dict:
    """What must be equal for any entry of ``fn`` to be valid; ``module``: the
    module a compiled module's call runs (every compiled module runs one
    code, ``api._module_call``: without its class in the key, the entries of
    every model would share one folder, and a model's own could fall out of
    the few most recent that a first call tries)."""
    cfg = {k: v for k, v in dataclasses.asdict(config_mod.config).items() if k not in _NOT_TRACING}
    code = fn.__code__
    parts = {
        "armature": _armature_hash(),
        "torch": str(torch.__version__),
        "python": sys.version,
        "backend": _backend_part(backend),
        "config": repr(sorted(cfg.items())),
        "settings": repr((fullgraph, dynamic, module_parameters)),
        "code": _code_part(code),
    }
    if module is not None:
        cls = type(module)
        parts["module"] = f"{cls.__module__}.{cls.__qualname__}"
    return parts


def _code_part(code: types.CodeType) -> str:
    return f"{os.path.abspath(code.co_filename)}:{code.co_qualname}:{codec.code_hash(code)}"


def parts_for(cf) -> dict:
    """The key parts of ``cf``'s entries: a user's compiled function's, or
    a resume function's or a callee's compiled wrapper's
    (driver/persist_callees.py); NotStorable for another (a compile under a
    forced backend)."""
    if callees.role_of(cf) is None and cf._group is None:
        raise NotStorable("compiled under set_stance(force_backend=...)")
    parts = key_parts(cf._fn, cf._backend, cf._fullgraph, cf._dynamic, cf._module_parameters, cf._module_of_call())
    if callees.role_of(cf) is not None:
        parts.update(callees.role_parts(cf, _code_part))
    return parts


def _key_of(parts: dict) -> str:
    return hashlib.sha256(repr(sorted(parts.items())).encode()).hexdigest()[:32]


def _code_index(cf, parts: dict) -> str:
    name = f"{os.path.abspath(cf._fn.__code__.co_filename)}:{callees.index_name(cf)}:{parts.get('module', '')}"
    return hashlib.sha256(name.encode()).hexdigest()[:32]


# --- storing ----------------------------------------------------------------------

def _encode_graph(info) -> tuple | None:
    gm = info.graph_module
    if gm is None:
        return None
    backend = events.stands_for(info.backend)
    eager = backend.name == "eager" and not backend.kwargs
    if eager and (getattr(info.compiled, "__self__", None) is not gm
                  or getattr(info.compiled, "__func__", None) is not type(gm).forward):
        raise NotStorable("the compiled graph is not the GraphModule's forward")
    if type(gm.graph._codegen) is not torch.fx.graph.CodeGen:
        raise NotStorable("the graph has its own code generator")
    attrs = []
    subgraphs = []
    for node in gm.graph.nodes:
        if node.op == "call_module":
            raise NotStorable("the graph calls submodules")
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule):
            if eager:
                raise NotStorable("an eager graph with regions (invoke_subgraph)")
            subgraphs.append((node.target, _encode_subgraph(getattr(gm, node.target))))
            continue
        if node.op == "get_attr":
            source = info.attr_sources.get(node.target)
            if source is None:
                raise NotStorable(f"the graph's attribute {node.target} has no source")
            attrs.append((node.target, codec.encode_source(source)))
    pc = gm.graph.python_code(root_module="self")
    names = tuple((k, codec.encode(v)) for k, v in pc.globals.items() if k != "__builtins__")
    inputs = None
    if not eager:   # the backend compiles it again on load: the graph node by node, its example inputs
        storages: set = set()
        symbols = persist_shapes.Collected()
        metas = tuple(_example_input_meta(n, storages, symbols) for n in gm.graph.nodes if n.op == "placeholder")
        inputs = (metas, codec.encode_fx_graph(gm.graph), persist_shapes.encode(symbols))
    from ..names import STATIC_INPUTS_META
    return (pc.src, names, tuple(attrs), inputs, tuple(gm.meta.get(STATIC_INPUTS_META, ())), tuple(subgraphs),
            bool(info.regions_backend), _encode_artifact(info) if not eager else None)


def _encode_artifact(info) -> tuple | None:
    """Inductor's compiled module, its kernels' libraries and what calls it
    (backends/inductor_warm.py), so a warm process runs it without
    inductor; None (logged) when it cannot be kept: the warm process then
    compiles the graph again through inductor's caches."""
    if events.stands_for(info.backend).name != "inductor":
        return None
    from ..backends import inductor_warm
    try:
        data, blobs, extern = inductor_warm.artifact(info.compiled)
        ext = tuple((name, codec.encode(obj)) for name, obj in extern.items())
    except (inductor_warm.NoArtifact, NotStorable) as e:
        log.debug("inductor's artifact of %s not kept (its graph is compiled again on load): %s",
                  info.fn.__qualname__, e)
        return None
    except Exception as e:   # noqa: BLE001 - armature's own error (another torch's internals): the graph only
        from ..diagnostics.errors import strict_internal_errors
        if strict_internal_errors():
            raise
        log.debug("inductor's artifact of %s not kept (its graph is compiled again on load): internal error "
                  "%s: %s", info.fn.__qualname__, type(e).__name__, e)
        return None
    return (data, ext, tuple(sorted(blobs.items())))


def _encode_subgraph(sub) -> tuple:
    """A region's subgraph (graph/regions.py): its nodes and code; it holds
    no tensors of its own (parameters are its inputs)."""
    if any(True for _ in sub.parameters()) or any(True for _ in sub.buffers()):
        raise NotStorable("a region's subgraph holds tensors")
    if any(n.op in ("get_attr", "call_module") for n in sub.graph.nodes):
        raise NotStorable("a region's subgraph reads attributes")
    return (codec.encode_fx_graph(sub.graph), sub.graph.python_code(root_module="self").src)


def _example_input_meta(node, storages: set, symbols) -> tuple:
    """A placeholder's example input as data: a plain tensor or a SymInt;
    a dynamic size as its expression over the trace's ShapeEnv symbols,
    which ``symbols`` (persist_shapes.Collected) gathers to be written with
    the entry.  No tensor sharing memory with another input, nor starting
    past its storage's start (the backend compiles again with fresh tensors
    of these sizes and strides: they must alias as the traced ones did); a
    view of a tensor outside the graph (``model(batch[:, :n])``) is as good
    as the fresh tensor of its sizes and strides."""
    val = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(val, torch.SymInt):
        return ("symint", symbols.item(val, f"graph input {node.name}"))
    if not isinstance(val, torch.Tensor) or type(val).__name__ != "FakeTensor":
        raise NotStorable(f"graph input {node.name} is a {type(val).__name__}, not a tensor or a SymInt")
    if val.is_sparse or val.is_quantized or val.is_nested:
        raise NotStorable(f"graph input {node.name} has an unusual layout")
    from torch.multiprocessing.reductions import StorageWeakRef
    storage = StorageWeakRef(val.untyped_storage())
    offset = val.storage_offset()   # (never compared while symbolic: that would add a guard)
    if type(offset) is not int or offset != 0 or storage in storages:
        raise NotStorable(f"graph input {node.name} is a view or shares memory with another input")
    storages.add(storage)
    what = f"a size of graph input {node.name}"
    return ("tensor", tuple(symbols.item(s, what) for s in val.size()),
            tuple(symbols.item(s, what) for s in val.stride()), str(val.dtype).removeprefix("torch."),
            str(val.device), bool(val.requires_grad))


def _encode_entry(cf, cache, entry, parts: dict) -> bytes:
    info = entry.persist
    if info is None:
        raise NotStorable(entry.fallback_reason and f"the frame runs as Python ({entry.fallback_reason})"
                          or "a frame run as Python, or split inside a loop")
    if info.unstorable:
        raise NotStorable(info.unstorable)
    if info.has_setup:
        raise NotStorable("the frame makes modules (setup code)")
    files = set()
    codec.check_unfiled_code(info.unfiled_code, info.guards)
    for filename in info.traced_files:
        if filename.startswith("<"):   # (checked just above)
            continue
        origin = codec.origin_of_file(filename)
        if origin is not None:
            files.add(origin)
    guards = tuple(codec.encode_guard(g) for g in info.guards)
    graph = _encode_graph(info)
    info.graph_artifact = graph[7] if graph is not None else None
    if info.routed is not None:   # a frame run natively, its calls compiled: no code of its own
        code, patches, called = None, (), ()
    else:   # (resume functions and callees' compiled wrappers: by what makes them, persist_callees.py)
        special, called = callees.encode_callees(cf, entry.transformed_code)
        if info.compiled is not None:
            special[id(info.compiled)] = ("special", "graph")
        code, patches = codec.encode_code(entry.transformed_code, special)
    payload = {"format": FORMAT, "parts": parts, "files": tuple(sorted(files)), "guards": guards,
               "code": code, "patches": patches, "graph": graph, "qualname": cf._fn.__qualname__,
               "op_count": entry.op_count, "hints": callees.encode_hints(cache), "callees": called,
               "break": callees.encode_break(entry.graph_break), "routed": info.routed,
               "fx": loaded_graph.encode_eager_nodes(info)}   # (cache_entries()' graph_module: loaded_graph.py)
    for k, v in payload.items():
        try:
            marshal.dumps(v)
        except ValueError:
            raise NotStorable(f"internal: part {k} cannot be written: {_first_unmarshallable(v)!r:.200}") from None
    return marshal.dumps(payload, codec.MARSHAL_VERSION)   # (the same entry, the same bytes: its name)


def _first_unmarshallable(v):
    if isinstance(v, (tuple, list)):
        for x in v:
            try:
                marshal.dumps(x)
            except ValueError:
                return _first_unmarshallable(x)
    if isinstance(v, dict):
        for x in v.items():
            try:
                marshal.dumps(x)
            except ValueError:
                return _first_unmarshallable(x)
    return v


def store(cf, cache, entry) -> None:
    """Write ``entry`` (just compiled for ``cf``) if it can be written
    faithfully; never raises."""
    if not enabled() or entry.loaded_from is not None:
        return
    _store_hints(cf, cache)
    try:
        parts = parts_for(cf)
        data = _encode_entry(cf, cache, entry, parts)
    except NotStorable as e:
        stats["not_stored"] += 1
        events.note("not_stored", cf, str(e))
        return
    except Exception as e:   # noqa: BLE001 - an error of armature's own: the entry just is not stored
        stats["not_stored"] += 1
        events.note("not_stored", cf, f"internal error {type(e).__name__}: {e}")
        return
    digest = hashlib.sha256(data).digest()
    root = cache_root()
    folder = os.path.join(root, _key_of(parts))
    path = os.path.join(folder, digest.hex()[:32] + ".entry")
    try:
        os.makedirs(folder, exist_ok=True)
        artifact = entry.persist.graph_artifact
        if artifact is not None:   # (the kernels' libraries, where a warm load finds them without writing)
            for h, blob in artifact[2]:
                _kernel_file(root, h, blob)
        _atomic_write(path, _MAGIC + digest + data)
        os.makedirs(os.path.join(root, "index"), exist_ok=True)
        _atomic_write(os.path.join(root, "index", _code_index(cf, parts)), marshal.dumps(parts))
    except OSError as e:
        _turn_off(f"cannot write to the cache directory {root}: {e}")
        return
    stats["stored"] += 1
    events.note("stored", cf, path=path)
    _evict(root)


# --- dynamic-shape decisions ---------------------------------------------------------

#: the file of a code's dynamic-shape decisions, beside its entries (in its key's directory)
HINTS_FILE = "dynamic.hints"
_HINTS_MAGIC = b"ARMHINT1"


def _read_hints(path: str) -> tuple:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return ()
    digest, data = raw[len(_HINTS_MAGIC):len(_HINTS_MAGIC) + 32], raw[len(_HINTS_MAGIC) + 32:]
    if not raw.startswith(_HINTS_MAGIC) or hashlib.sha256(data).digest() != digest:
        log.debug("ignoring a corrupt hints file %s", path)
        return ()
    try:
        hints = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return ()
    return hints if isinstance(hints, tuple) else ()


def _store_hints(cf, cache) -> None:
    """The code's dynamic-shape decisions in a file of their own, keyed like
    its entries, written whenever they grew -- also when no entry can be
    stored -- so that the next process's first trace makes those dims
    dynamic instead of compiling once per size again (as torch.compile's
    automatic dynamic shapes remember them).  Never raises: a hint lost
    costs a recompile, never a wrong result."""
    hints = callees.encode_hints(cache)
    if not hints:
        return
    try:
        parts = parts_for(cf)
        folder = os.path.join(cache_root(), _key_of(parts))
        path = os.path.join(folder, HINTS_FILE)
        old = _read_hints(path)
        merged = tuple(sorted(set(old) | set(hints), key=repr))
        if merged == old:
            return
        data = marshal.dumps(merged)
        os.makedirs(folder, exist_ok=True)
        _atomic_write(path, _HINTS_MAGIC + hashlib.sha256(data).digest() + data)
    except NotStorable:
        return
    except OSError as e:
        _turn_off(f"cannot write to the cache directory {cache_root()}: {e}")
        return
    except Exception as e:   # noqa: BLE001 - an error of armature's own: the hints are just not kept
        log.debug("dynamic-shape decisions of %s not kept: internal error %s: %s", cf._fn.__qualname__,
                  type(e).__name__, e)
        return
    log.debug("kept the dynamic-shape decisions of %s: %s", cf._fn.__qualname__, path)


def _load_hints(fn, cache, folder: str) -> None:
    """The dynamic-shape decisions an earlier process kept for this code
    (``_store_hints``), applied before this process's first trace."""
    hints = _read_hints(os.path.join(folder, HINTS_FILE))
    if hints:
        try:
            callees.apply_hints(cache, hints)
        except Exception as e:   # noqa: BLE001 - a hint is only a hint
            log.debug("dynamic-shape decisions of %s not used: %s: %s", fn.__qualname__, type(e).__name__, e)
            return
        log.debug("dynamic-shape decisions of %s from an earlier process: %d", fn.__qualname__, len(hints))


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _kernel_file(root: str, digest: str, blob: bytes) -> str:
    """The path of a kernel library of an inductor artifact (named by its
    hash, written from the entry when missing or not that content)."""
    folder = os.path.join(root, "kernels")
    path = os.path.join(folder, digest + ".so")
    try:
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == digest:
                return path
    except OSError:
        pass
    os.makedirs(folder, exist_ok=True)
    _atomic_write(path, blob)
    return path


def _turn_off(reason: str) -> None:
    global _disabled_reason
    if _disabled_reason is None:
        _disabled_reason = reason
        warnings.warn(f"armature: the compile cache is off for this process: {reason} "
                      f"(set ARMATURE_CACHE_DIR to a writable directory, or ARMATURE_CACHE=0)",
                      RuntimeWarning, stacklevel=2)


def entries_on_disk(root: str) -> list[tuple[str, int, float]]:
    """(path, size, mtime) of every entry file under ``root``."""
    out = []
    try:
        keys = os.listdir(root)
    except OSError:
        return out
    for k in keys:
        if k not in ("index", "kernels"):
            out.extend(_entries_in(os.path.join(root, k)))
    return out


def _entries_in(folder: str) -> list[tuple[str, int, float]]:
    out = []
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        if name.endswith(".entry"):
            p = os.path.join(folder, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            out.append((p, st.st_size, st.st_mtime))
    return out


def _evict(root: str) -> None:
    """Least recently used entries go once the cache is over its bound (a
    load touches the file it used)."""
    bound = config_mod.config.cache_size_mb * 1024 * 1024
    files = entries_on_disk(root)
    total = sum(size for _, size, _ in files)
    if total <= bound:
        return
    for path, size, _ in sorted(files, key=lambda t: t[2]):
        if total <= bound * 0.9:
            break
        try:
            os.unlink(path)
            total -= size
            log.debug("evicted (least recently used): %s", path)
        except OSError:
            pass


# --- loading ----------------------------------------------------------------------

def _warn_corrupt(path: str, why: str, cf=None) -> None:
    stats["corrupt"] += 1
    if cf is not None:
        events.note("corrupt", cf, why, path)
    else:
        log.debug("corrupt file %s: %s", path, why)
    if path not in _warned:
        _warned.add(path)
        warnings.warn(f"armature: ignoring a corrupt compile cache file {path} ({why}); the function is "
                      f"compiled again", RuntimeWarning, stacklevel=4)
    try:
        os.unlink(path)
    except OSError:
        pass


def _read(path: str, cf=None):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        log.debug("cannot read %s: %s", path, e)
        return None
    payload = parse(raw)
    if isinstance(payload, str):
        _warn_corrupt(path, payload, cf)
        return None
    return payload


def parse(raw: bytes) -> dict | str:
    """An entry file's payload, or why it is corrupt (also for the entries
    of cache artifacts: cache_artifacts.py)."""
    if len(raw) < len(_MAGIC) + 32 or not raw.startswith(_MAGIC):
        return "truncated or not a cache file"
    digest, data = raw[len(_MAGIC):len(_MAGIC) + 32], raw[len(_MAGIC) + 32:]
    if hashlib.sha256(data).digest() != digest:
        return "its checksum does not match"
    try:
        payload = marshal.loads(data)
    except (ValueError, EOFError, TypeError) as e:
        return f"unreadable: {e}"
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        return "another format"
    return payload


_NOTHING_STORED = "nothing stored for this code"


def _why_key_missed(cf, parts: dict) -> str:
    try:
        with open(os.path.join(cache_root(), "index", _code_index(cf, parts)), "rb") as f:
            old = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return _NOTHING_STORED
    changed = [k for k in parts if old.get(k) != parts[k]]
    return f"stored under another key: {', '.join(changed) or 'unknown part'} changed"


def load(cf, cache, args, kwargs) -> int:
    """Entries stored for ``cf``'s code whose key, source files and names
    still match, added to ``cache`` (checked against this call's objects);
    their number.  Never raises."""
    if not enabled():
        return 0
    fn = cf._fn
    try:
        parts = parts_for(cf)
    except NotStorable as e:
        log.debug("not looked up: %s: %s", fn.__qualname__, e)
        return 0
    except Exception as e:   # noqa: BLE001
        log.debug("not looked up: %s: internal error %s: %s", fn.__qualname__, type(e).__name__, e)
        return 0
    folder = os.path.join(cache_root(), _key_of(parts))
    _load_hints(fn, cache, folder)
    found = _entries_in(folder)
    if not found:
        why = _why_key_missed(cf, parts)   # (a miss: the trace that follows costs far more than this read)
        events.note("miss" if why == _NOTHING_STORED else "key_mismatch", cf, why)
        return 0
    n = 0
    t0 = time.perf_counter()
    for path, _, _ in sorted(found, key=lambda t: t[2])[-config_mod.config.recompile_limit:]:
        payload = _read(path, cf)
        if payload is None:
            continue
        try:
            entry = _decode_entry(cf, cache, payload, path, args, kwargs)
        except LookupError as e:
            stats["rejected"] += 1
            why = str(e.args[0] if e.args else e)
            events.note("source_changed" if why.startswith("source file changed") else "rejected", cf, why, path)
            continue
        except Exception as e:   # noqa: BLE001 - armature's own error: compile instead
            stats["rejected"] += 1
            events.note("rejected", cf, f"internal error {type(e).__name__}: {e}", path)
            continue
        cache.add(entry)
        n += 1
        stats["loaded"] += 1
        from ..diagnostics import record
        if record.active:   # (the run's report lists it, marked loaded from disk)
            record.entry_added(fn, cache, entry, module=cf._module_of_call())
        try:
            os.utime(path)   # (least recently used eviction)
        except OSError:
            pass
        events.note("loaded", cf, f" ({time.perf_counter() - t0:.3f} s)", path)
    return n


class _GraphAttrs:
    """The object the loaded graph's ``self`` is: its parameters and buffers."""


def _compile_loaded(backend, src: str, attrs: dict, inputs, static_inputs, subgraphs=()):
    """The backend's artifact for a loaded graph: the GraphModule is rebuilt
    from its code (and must print as the stored code: the very graph), and
    the backend compiles it with example inputs of the stored shapes (of
    dynamic sizes: the trace's symbols, ranges and guards rebuilt in a
    fresh ShapeEnv, persist_shapes.py, and the compile checked to assume
    nothing more).  For inductor this is where its own FX-graph and
    AOTAutograd caches answer (their key: this graph and these inputs), so
    the cost is theirs.

    The compile happens on the graph's first call, not on load
    (``_LoadedGraph``): a process loads every stored entry of a code and
    may use one, and the first call runs under the global state the
    entry's guards require (grad mode: AOTAutograd compiles a graph without
    a backward when grad mode is off)."""
    rebuild = functools.partial(loaded_graph.rebuild, src, inputs[1], attrs, subgraphs, static_inputs)
    rebuild()   # (now: a graph that does not rebuild to the stored code is not loaded)
    return _LoadedGraph(functools.partial(_compile_rebuilt, backend, rebuild, inputs), rebuild)


def _compile_rebuilt(backend, rebuild, inputs):
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from .. import torch_compat
    metas, _, shape = inputs
    gm = rebuild()
    if shape is None:   # (static sizes: fake, as the trace hands them over; a real tensor would be made symbolic
        fake_mode = FakeTensorMode(shape_env=ShapeEnv())   # by the backend's fakification under this ShapeEnv)
        example = [fake_mode.from_tensor(torch.empty_strided(size, stride, dtype=getattr(torch, dtype), device=device,
                                                             requires_grad=rg), static_shapes=True)
                   for _, size, stride, dtype, device, rg in metas]
    else:   # (dynamic sizes: the trace's symbols, ranges and guards in a fresh ShapeEnv)
        rebuilt = persist_shapes.Rebuilt(shape)
        fake_mode = rebuilt.fake_mode
        example = [rebuilt.value(m[1]) if m[0] == "symint" else
                   rebuilt.tensor(m[1], m[2], getattr(torch, m[3]), m[4], m[5]) for m in metas]
    with tracing(TracingContext(fake_mode)), torch_compat.backend_compile_state():
        compiled = backend(gm, example)
    if shape is not None:
        rebuilt.check()   # (the compile assumed nothing the entry's guards do not check)
    if not callable(compiled):
        raise LookupError(f"backend {backend!r} returned {compiled!r}")
    return compiled


class _LoadedGraph:
    """A loaded entry's graph, compiled by its backend on its first call
    (``_compile_loaded``).  Should that compile fail, or assume what the
    entry's guards do not check, the graph's own code runs instead (what
    the eager backend runs: the traced graph, right for every call the
    entry's guards let through), logged; an error of armature's own never
    reaches the call."""

    def __init__(self, compile_fn, rebuild):
        self._compile, self._rebuild = compile_fn, rebuild
        self._fn = None
        self._lock = threading.Lock()

    def __call__(self, *args):
        fn = self._fn
        if fn is None:
            fn = self._first()
        return fn(*args)

    def _first(self):
        with self._lock:
            if self._fn is None:
                t0 = time.perf_counter()
                try:
                    self._fn = self._compile()
                    log.debug("compiled a loaded graph (%.3f s)", time.perf_counter() - t0)
                except Exception as e:   # noqa: BLE001 - armature's own error: the graph runs as traced
                    from ..diagnostics.errors import strict_internal_errors
                    if strict_internal_errors() and not isinstance(e, LookupError):
                        raise
                    log.debug("a loaded graph is run as traced, not compiled: %s: %s", type(e).__name__, e)
                    self._fn = self._rebuild().forward
            return self._fn


def _load_artifact(fn, artifact, values: dict):
    """Inductor's stored module for the graph, run without inductor
    (backends/inductor_warm.py); None (logged) when it cannot be used: the
    graph is then compiled again through inductor's caches."""
    from ..backends import inductor_warm
    data, ext, blobs = artifact
    try:
        root = cache_root()
        files = {h: _kernel_file(root, h, blob) for h, blob in blobs}
        extern = {name: codec.decode(enc) for name, enc in ext}
        return inductor_warm.load(data, files, extern, values)
    except (LookupError, OSError) as e:
        log.debug("inductor's stored module of %s not used (compiled again through inductor's caches): %s",
                  fn.__qualname__, e)
    except Exception as e:   # noqa: BLE001 - armature's own error: compile instead
        log.debug("inductor's stored module of %s not used: internal error %s: %s", fn.__qualname__,
                  type(e).__name__, e)
    return None


def _decode_entry(cf, cache, payload: dict, path: str, args, kwargs):
    from ..guards.build import build_guard_function, read_source
    fn = cf._fn
    for file, h in payload["files"]:
        if codec.file_hash(file) != h:
            raise LookupError(f"source file changed: {file}")

    def read(source):
        value = read_source(fn, source, args, kwargs)
        if type(value).__name__ == "_Unreadable":
            raise LookupError(f"{source} cannot be read for this call ({value!r})")
        return value

    guards = codec.decode_guards(payload["guards"], read)
    special = callees.decode_callees(cf, payload["callees"])
    values = {}
    graph = payload["graph"]
    if graph is not None:
        src, names, attrs, inputs, static_inputs, subgraphs, regions_backend, artifact = graph
        for name, enc in attrs:
            value = read(codec.decode_source(enc))
            if not isinstance(value, torch.Tensor):
                raise LookupError(f"the graph's attribute {name} is no longer a tensor")
            values[name] = value
        if inputs is None:   # eager: the graph's code is what runs
            ns = {k: codec.decode(v) for k, v in names}
            exec(compile(src, f"<armature graph of {fn.__qualname__} loaded from {os.path.basename(path)}>", "exec"),
                 ns)
            holder = _GraphAttrs()
            for name, value in values.items():
                setattr(holder, name, value)
            special["graph"] = types.MethodType(ns["forward"], holder)
        elif artifact is not None and (loaded := _load_artifact(fn, artifact, values)) is not None:
            special["graph"] = loaded
        else:
            backend = cf._backend
            if regions_backend:
                from ..graph import regions
                backend = regions.backend_for(backend)
            special["graph"] = _compile_loaded(backend, src, values, inputs, static_inputs, subgraphs)
    if payload["routed"] is not None:   # (driver/native_frames.py: the same runner the trace chose)
        from .native_frames import routed_runner
        code, run = None, routed_runner(fn.__code__, cf._backend, payload["routed"][0])
    else:
        code = codec.decode_code(payload["code"], payload["patches"], special)
        run = types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__)
        run.__kwdefaults__ = fn.__kwdefaults__
    guard_fn = build_guard_function(fn, guards)
    callees.apply_hints(cache, payload["hints"])
    entry = loaded_graph.LoadedEntry(guard=guard_fn, run=run, guards=guards, compiled_graph=special.get("graph"),
                                     transformed_code=code, op_count=payload["op_count"], loaded_from=path,
                                     graph_break=callees.decode_break(payload["break"]),
                                     rebuild=loaded_graph.rebuilder(graph, payload.get("fx"), values, fn.__qualname__))
    from . import explain
    explain.record(entry)
    return entry


# --- the command line -------------------------------------------------------------

def cli(argv: list[str]) -> int:
    """``python -m armature cache list|clear [--dir DIR]``."""
    import shutil
    cache_dir = None
    if "--dir" in argv:
        i = argv.index("--dir")
        cache_dir = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    root = cache_root(cache_dir)
    if argv[:1] == ["list"]:
        files = entries_on_disk(root)
        for path, size, mtime in sorted(files, key=lambda t: -t[2]):
            payload = _read(path)
            what = payload.get("qualname", "?") if payload else "(corrupt)"
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(mtime))}  {size:>9}  {what}  {path}")
        print(f"{len(files)} entries, {sum(s for _, s, _ in files)} bytes in {root}")
        return 0
    if argv[:1] == ["clear"]:
        n = len(entries_on_disk(root))
        shutil.rmtree(root, ignore_errors=True)
        print(f"removed {n} entries from {root}")
        return 0
    print("usage: python -m armature cache list|clear [--dir DIR]", file=sys.stderr)
    return 2
