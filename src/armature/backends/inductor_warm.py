"""Inductor's compiled artifact for the warm start, run without inductor.

A warm process that loads a stored inductor entry would otherwise hand the
rebuilt graph to ``compile_fx`` again, to be answered by inductor's own
FX-graph and AOTAutograd caches: that imports ``torch._inductor`` and
``torch._dynamo`` (about 1.3 s of a 2-core machine's time) and computes
their cache keys, which is most of a warm start.  What inductor made for an
inference graph on the CPU is small and plain, though: a Python module
(its wrapper code, calling C++ kernels built into shared libraries and a few
ATen ops), wrapped by AOTAutograd in a runtime wrapper that, for a graph
without input mutations, aliased outputs, RNG state, effect tokens or
tensor subclasses, only turns grad mode off around the call and counts the
outputs.

So the cold process keeps (``Capture``): the wrapper's source, each
kernel's shared library (by the kernel's name in that module), the ATen
functions the module calls as ``extern_kernels``, the order in which
AOTAutograd passes the graph's parameters, the inputs inductor realigns,
and the process state inductor's cache keys on (``process_state``); and
only when every condition above is checked on what inductor and
AOTAutograd actually produced (anything else: no artifact, and the warm
process compiles through inductor's caches as before).  The warm process
(``load``) runs that same source with the five names its import lines
bring from ``torch._inductor`` bound to equivalents here (which a check of
the source's every import line and every name it reads makes the only
ones), loads the same shared libraries, and wraps the module's ``call``
exactly as AOTAutograd and inductor did for this graph.

The kernels' shared libraries are native code executed on load: they live in
armature's cache directory, which is trusted as the user's own code is
(docs/architecture/warm_start.md).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import importlib.util
import os
import platform
import re
import sys
import types
import weakref
from typing import Any

import torch

from .. import torch_compat

FORMAT = 2

#: compiled callable -> its Capture (the cold process; entries are stored from it)
_CAPTURED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class NoArtifact(Exception):
    """Why a compiled graph has no artifact the warm start can run alone."""


# --- the process state inductor's output depends on ----------------------------

#: config modules whose values change what inductor and AOTAutograd generate
_CONFIG_MODULES = ("torch._inductor.config", "torch._functorch.config", "torch.compiler.config",
                   "torch.fx.experimental._config")
_ENV_PREFIXES = ("TORCHINDUCTOR_", "TORCH_COMPILE", "INDUCTOR_", "TORCHDYNAMO_", "TORCH_LOGS", "ATEN_CPU_CAPABILITY",
                 "OMP_", "KMP_", "GOMP_")
_ENV_IGNORED = ("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE")


@functools.cache
def _cpu_flags() -> str:
    """The CPU's feature flags, hashed: fixed for a process, read once.
    (Not inductor_cache_key.cpu_isa_fingerprint: that asks inductor's
    ``cpu_vec_isa``, and a warm process must not import inductor.)"""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(" ".join(sorted(line.split(":", 1)[1].split())).encode()).hexdigest()
    except OSError:
        pass
    return platform.processor() or "?"


#: the torch releases whose inductor this module reads (the C++ code cache's
#: list of loaded kernel modules, CompiledFxGraph's input-alignment flag: torch
#: 2.13+); on 2.11 and 2.12 nothing is kept, and a warm process compiles the
#: stored graph again through inductor's caches
SUPPORTED = torch_compat.at_least((2, 13))


def process_state() -> tuple:
    """What inductor's FX-graph cache keys on besides the graph and the
    versions (armature's key holds those): the settings users change in
    their config modules (only a module that was imported can have been
    changed), the environment inductor reads, the CPU (vector ISA of the
    kernels), ATen's capability, the thread count the kernels are built for,
    deterministic algorithms and the default dtype.  Cheap: it imports
    nothing."""
    overrides = []
    for name in _CONFIG_MODULES:
        mod = sys.modules.get(name)
        if mod is None or not hasattr(mod, "_config"):
            continue
        from torch.utils._config_module import _UNSET_SENTINEL
        for key, entry in sorted(mod._config.items()):
            # (what the user set, unless equal to the default: a patch that ran leaves its key set to
            # the default; what the environment sets is compared as the environment)
            user = entry.user_override
            if isinstance(user, contextvars.ContextVar):   # (torch 2.13+; 2.11-2.12: the value itself)
                user = user.get()
            if user is not _UNSET_SENTINEL and repr(user) != repr(entry.default):
                overrides.append((name, key, repr(user)))
    env = tuple(sorted((k, v) for k, v in os.environ.items()
                       if k.startswith(_ENV_PREFIXES) and k not in _ENV_IGNORED))
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001
        capability = "?"
    return (tuple(overrides), env, platform.machine(), _cpu_flags(), capability, torch.get_num_threads(),
            torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
            bool(torch.utils.deterministic.fill_uninitialized_memory), str(torch.get_default_dtype()))


# --- the cold process: what inductor made --------------------------------------

class Capture:
    """Wraps ``compile_fx``'s inner compile to see what inductor returned for
    the graph, and what AOTAutograd knew of it."""

    def __init__(self, gm: torch.fx.GraphModule):
        names: dict = {}
        for name, t in list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False)):
            names.setdefault(id(t), []).append(name)
        self.names_by_id = names
        self.n_placeholders = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
        self.state = process_state()
        self.autocast = torch._C._is_any_autocast_enabled()
        self.calls: list = []

    def wrap(self, inner):
        calls = self.calls

        @functools.wraps(inner)
        def compile_and_capture(gm, example_inputs, *args, **kwargs):
            out = inner(gm, example_inputs, *args, **kwargs)
            try:
                from torch._guards import TracingContext
                ctx = TracingContext.try_get()
                calls.append((out, dict(kwargs), bool(args), getattr(ctx, "fw_metadata", None), _foreign_op(gm),
                              len(example_inputs)))
            except Exception as e:  # noqa: BLE001 - only the warm start loses
                calls.append(f"internal: {type(e).__name__}: {e}")
            return out

        return compile_and_capture

    def remember(self, compiled) -> None:
        try:
            _CAPTURED[compiled] = self
        except TypeError:
            pass


def inner_compile_seen(gm, example_inputs):
    """For an inference graph, AOTAutograd's cache off during the compile:
    a hit there answers without inductor's inner compile, so no module would
    be seen to keep; inductor's FX-graph cache still answers the inner
    compile.  (A graph with a backward keeps it: its module is not kept.)"""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)] + list(gm.parameters())
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return contextlib.nullcontext()
    from torch._functorch import config as functorch_config
    return functorch_config.patch(enable_autograd_cache=False)


def _size_ops() -> set:
    """Python's arithmetic and comparisons, and torch's on SymInts: what a
    graph of dynamic sizes computes its sizes with (``s0 // 2``); they
    touch no tensor."""
    import operator
    names = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "neg", "pos", "abs", "eq", "ne", "lt", "le",
             "gt", "ge", "and_", "or_", "not_")
    found = {getattr(operator, n) for n in names}
    found |= {f for n in ("sym_max", "sym_min", "sym_not", "sym_float", "sym_int", "sym_ite", "sym_sum")
              if (f := getattr(torch, n, None)) is not None}
    return found


def _foreign_op(gm) -> str | None:
    """An op of the inner graph that is not ATen's, prims', a region call or
    arithmetic on sizes (a custom op: AOTAutograd checks its aliasing on
    the first call)."""
    import operator
    size_ops = _size_ops()
    for mod in gm.modules():
        if not isinstance(mod, torch.fx.GraphModule):
            continue
        for n in mod.graph.nodes:
            if n.op == "call_module":
                return f"a call of submodule {n.target}"
            if n.op != "call_function" or n.target is operator.getitem or n.target in size_ops:
                continue
            t = n.target
            if isinstance(t, torch._ops.OpOverload) and t.namespace in ("aten", "prims"):
                continue
            if isinstance(t, torch._ops.HigherOrderOperator) and t.name() == "invoke_subgraph":
                continue
            return str(t)
    return None


def _fn_key(fn) -> tuple:
    return (id(getattr(fn, "__self__", None)), getattr(fn, "__name__", None))


def _loaded_libraries() -> dict:
    """(module, function name) -> (library path, function name) of every
    kernel library inductor's C++ code cache loaded in this process."""
    from torch._inductor.codecache import CppPythonBindingsCodeCache
    out = {}
    for mod_name in list(CppPythonBindingsCodeCache._loaded_module_names):
        mod = sys.modules.get(mod_name)
        path = getattr(mod, "__file__", None)
        if mod is None or not isinstance(path, str) or not path.endswith(".so"):
            continue
        for attr, fn in list(vars(mod).items()):
            if isinstance(fn, types.BuiltinFunctionType):
                out[_fn_key(fn)] = (path, attr)
    return out


def _check(cond: bool, why: str) -> None:
    if not cond:
        raise NoArtifact(why)


_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(", re.M)
_EXTERN_USE = re.compile(r"\bextern_kernels\.(\w+)")


def artifact(compiled) -> tuple[tuple, dict, dict]:
    """(data, {kernel library hash: bytes}, {extern kernel name: object}) for
    the compiled graph, or NoArtifact (why)."""
    try:
        cap = _CAPTURED.get(compiled)
    except TypeError:
        cap = None
    _check(SUPPORTED, f"torch {torch.__version__} (inductor's module is kept on torch 2.13 and later)")
    _check(cap is not None, "inductor's compile was not seen (answered by AOTAutograd's cache)")
    code = getattr(compiled, "__code__", None)
    if code is not None and code.co_qualname == "DisableContext.__call__.<locals>._fn":
        # (compile_fx's "dynamo, do not trace this": nothing to do where dynamo does not run)
        compiled = getattr(compiled, "__wrapped__", None)
        code = getattr(compiled, "__code__", None)
    _check(code is not None and code.co_qualname == "aot_module_simplified.<locals>.forward"
           and bool(code.co_flags & 0x04), "compile_fx returned another wrapper than AOTAutograd's forward")
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in compiled.__closure__ or ())))
    params = cells.get("params_buffers_flat")
    _check(isinstance(params, list), "AOTAutograd's forward holds no parameter list")
    _check(not cap.autocast, "compiled under autocast")
    _check(bool(cap.calls) and not isinstance(cap.calls[0], str),
           cap.calls[0] if cap.calls else "inductor compiled no graph")
    out, kwargs, positional, meta, foreign, n_inputs = cap.calls[0]
    # (a training graph's backward is compiled lazily, or with its forward: backends/inductor.py)
    _check(not positional and kwargs.get("is_inference") is True and not kwargs.get("is_backward"),
           "not an inference graph (training graphs keep AOTAutograd's autograd function)")
    _check(len(cap.calls) == 1, f"inductor compiled {len(cap.calls)} graphs")
    cudagraphs = kwargs.get("cudagraphs")
    _check(not getattr(cudagraphs, "value", cudagraphs), "CUDA graphs")
    _check(foreign is None, f"the graph calls {foreign}")
    from torch._inductor.output_code import CompiledFxGraph
    _check(type(out) is CompiledFxGraph, f"inductor returned a {type(out).__name__}")
    _check(set(out.device_types) <= {"cpu"}, f"devices {sorted(out.device_types)}")
    _check(not out.constants and not getattr(out, "torchbind_constants", None), "the module holds constants")
    _check(not out.mutated_input_idxs, "inputs mutated")
    _check(not getattr(out, "_wrap_compiled_regions", False), "compiled regions wrapped")
    runner = out.compiled_fn_runner
    _check(runner is not None and not getattr(runner, "partitions", None), "graph partitions")
    _check(isinstance(out.source_code, str), "no wrapper source")
    _check(meta is not None, "AOTAutograd's metadata not seen")
    _check(len(meta.input_info) == n_inputs == len(params) + cap.n_placeholders,
           "AOTAutograd's inputs are not the parameters and the graph's inputs (duplicates removed?)")
    _check(not any(i.mutates_data or i.mutates_metadata for i in meta.input_info)
           and meta.num_mutated_inp_runtime_indices == 0, "inputs mutated")
    _check(all(getattr(o.output_type, "name", None) == "non_alias" for o in meta.output_info)
           and meta.num_intermediate_bases == 0, "outputs alias inputs or each other")
    _check(not meta.tokens and not meta.is_rng_op_functionalized and not getattr(meta, "num_graphsafe_rng_states", 1)
           and meta.grad_enabled_mutation is None and not getattr(meta, "subclass_tangent_meta", None),
           "effect tokens, RNG state, grad mode changed or tensor subclasses")
    names = []
    for t in params:
        found = cap.names_by_id.get(id(t))
        _check(found is not None and len(found) == 1, "a parameter under several names, or none")
        names.append(found[0])
    module_globals = runner.call.__func__.__globals__
    src_file = module_globals.get("__file__")
    with open(src_file) as f:
        _check(f.read() == out.source_code, "the loaded module is not the wrapper source")
    prepare_source(out.source_code)   # (every import and name checked)
    kernels, blobs = [], {}
    libraries = _loaded_libraries()
    for name in _KERNEL_DEF.findall(out.source_code):
        fn = module_globals.get(name)
        found = libraries.get(_fn_key(fn)) if isinstance(fn, types.BuiltinFunctionType) else None
        _check(found is not None, f"kernel {name} is not a function of a library inductor loaded ({fn!r})")
        path, attr = found
        with open(path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        kernels.append((name, digest, attr))
    extern = {}
    ek = module_globals.get("extern_kernels")
    for name in sorted(set(_EXTERN_USE.findall(out.source_code))):
        extern[name] = getattr(ek, name)
    check_idxs = tuple(out.inputs_to_check)
    if out._defers_input_alignment:
        check_idxs = ()   # (non-mutated inputs are copied by the module itself; none is mutated)
    expected = meta.num_outputs
    # (outputs of dynamic size: AOTAutograd's wrapper marks their dims for a compiler reading the
    # next graph's inputs, as dynamo does; the loaded module marks them alike)
    dynamic_dims = tuple(None if o.dynamic_dims is None else tuple(sorted(o.dynamic_dims))
                         for o in meta.output_info) if meta.dynamic_outputs else ()
    data = (FORMAT, out.source_code, tuple(kernels), tuple(names), check_idxs, expected, cap.state, dynamic_dims)
    return data, blobs, extern


# --- the warm process: the module again, without inductor ----------------------

#: import lines of inductor's wrapper module: kept, or bound to an equivalent here
_KEEP = {"from ctypes import c_void_p, c_long, c_int", "import torch", "import math", "import random", "import os",
         "import tempfile", "from math import inf, nan", "from cmath import nanj",
         "from torch import device, empty_strided"}
_BOUND = {"from torch._inductor.hooks import run_intermediate_hooks": "run_intermediate_hooks",
          "from torch._inductor.utils import maybe_profile": "maybe_profile",
          "from torch._inductor.codegen.memory_planning import _align as align": "align",
          "from torch._inductor.async_compile import AsyncCompile": "AsyncCompile",
          "from torch._inductor.select_algorithm import extern_kernels": "extern_kernels"}
#: functions of the module nothing calls (a benchmark harness); they may import inductor
_UNCALLED = ("get_args", "benchmark_compiled_module")


def prepare_source(src: str) -> types.CodeType:
    """The wrapper's code, its import lines of inductor blanked (bound by
    ``load``); NoArtifact when it imports or reads anything else of
    inductor's or dynamo's."""
    main = src.find('\nif __name__ == "__main__":\n')
    if main >= 0:   # (the module run as a script: a benchmark harness, never run here)
        tail = src[main + 1:].split("\n")[1:]
        if any(ln and not ln.startswith(" ") for ln in tail):
            raise NoArtifact("code after the wrapper's __main__ block")
        src = src[:main + 1]
    lines = src.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(("import ", "from ")):
            if line in _BOUND:
                lines[i] = ""
            elif line not in _KEEP:
                raise NoArtifact(f"the wrapper imports: {line}")
    code = compile("\n".join(lines), "<inductor wrapper>", "exec")

    def walk(c: types.CodeType):
        if c.co_name in _UNCALLED:
            return
        for name in c.co_names:
            if "_inductor" in name or name in ("triton", "_dynamo") and c is not code:
                raise NoArtifact(f"the wrapper reads {name} in {c.co_name}")
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                walk(k)

    walk(code)
    allowed_dynamo = "torch._C._dynamo.guards."
    for m in re.finditer(r"_dynamo\.\w+", src):
        start = src.rfind("\n", 0, m.start()) + 1
        line = src[start:src.find("\n", m.end())]
        if allowed_dynamo not in line and "torch._dynamo.testing import rand_strided" not in line:
            raise NoArtifact(f"the wrapper uses dynamo: {line.strip()}")
    return code


class _Pending:
    def __init__(self, argtypes):
        self.argtypes = argtypes


class _Kernels:
    """What the module's ``async_compile`` is: each ``cpp_pybinding`` is
    answered, on ``wait``, by the stored library of the kernel of that name."""

    def __init__(self, files: dict):
        self.files = files   # kernel name -> (library path, function name)

    def cpp_pybinding(self, argtypes, source_code):
        return _Pending(argtypes)

    def wait(self, scope: dict) -> None:
        for name, value in list(scope.items()):
            if isinstance(value, _Pending):
                where = self.files.get(name)
                if where is None:
                    raise LookupError(f"no library stored for kernel {name}")
                fn = getattr(_load_library(where[0]), where[1], None)
                if fn is None:
                    raise LookupError(f"the library of kernel {name} has no {where[1]}")
                scope[name] = fn


def _load_library(path: str):
    """The kernel of a library inductor built (as its codecache loads one)."""
    os.environ["_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"] = str(
        torch._C._dynamo.guards._torchinductor_pyobject_tensor_data_ptr)
    name = f"armature_kernel_{os.path.basename(path).split('.')[0]}.kernel"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return mod


def _run_intermediate_hooks(name, val):
    hooks = sys.modules.get("torch._inductor.hooks")   # (hooks can only be set through that module)
    if hooks is not None:
        hooks.run_intermediate_hooks(name, val)


@contextlib.contextmanager
def _maybe_profile(should_profile, *args, **kwargs):
    if should_profile:
        with torch.profiler.profile(*args, **kwargs) as p:
            yield p
    else:
        yield


def _align(nbytes: int) -> int:
    return (nbytes + 63) & -64   # (inductor's ALIGN_BYTES)


def _clone_preserve_strides(x: torch.Tensor) -> torch.Tensor:
    needed = 0 if 0 in x.size() else sum((n - 1) * s for n, s in zip(x.size(), x.stride())) + 1
    return torch.as_strided(torch.as_strided(x, (needed,), (1,)).clone(), x.size(), x.stride())


def _mark_dynamic_dims(t, dims: set) -> None:
    """What AOTAutograd's runtime wrapper does to an output of dynamic
    sizes: the dims are noted on the tensor, where dynamo would read them."""
    if hasattr(t, "_dynamo_propagated_dynamic_indices"):
        t._dynamo_propagated_dynamic_indices |= dims
    else:
        t._dynamo_propagated_dynamic_indices = dims.copy()


def load(data: tuple, kernel_files: dict, extern: dict, params: dict):
    """The compiled graph again: ``data`` from ``artifact``, the kernels'
    library paths by hash, the extern kernels resolved, the parameters by
    name (the warm call's).  LookupError (why) when it cannot be used."""
    if data[0] != FORMAT:
        raise LookupError("another artifact format")
    _, src, kernels, names, check_idxs, expected, state, dynamic_dims = data
    now = process_state()
    if now != state:
        what = [w for w, a, b in zip(("config", "environment", "machine", "CPU", "ATen capability", "threads",
                                      "deterministic", "deterministic warn", "fill memory", "default dtype"),
                                     now, state) if a != b]
        raise LookupError(f"inductor's settings differ from the compiling process's: {', '.join(what)}")
    try:
        code = prepare_source(src)
    except NoArtifact as e:
        raise LookupError(str(e)) from None
    files = {name: (kernel_files[digest], attr) for name, digest, attr in kernels}
    kernel_obj = _Kernels(files)
    ns = {"__name__": "armature_inductor_wrapper", "__builtins__": __builtins__,
          "run_intermediate_hooks": _run_intermediate_hooks, "maybe_profile": _maybe_profile, "align": _align,
          "AsyncCompile": lambda: kernel_obj, "extern_kernels": types.SimpleNamespace(**extern)}
    exec(code, ns)
    for name, _, _ in kernels:
        if not isinstance(ns.get(name), types.BuiltinFunctionType):
            raise LookupError(f"kernel {name} was not bound")
    call = ns["call"]
    flat = [params[n] for n in names]
    set_grad = torch._C._set_grad_enabled
    is_grad = torch.is_grad_enabled
    marks = [(i, set(dims)) for i, dims in enumerate(dynamic_dims) if dims is not None]

    def compiled_graph(*inputs):
        # (AOTAutograd's runtime wrapper of an inference graph, and inductor's realignment)
        args = list(flat)
        args.extend(inputs)
        grad = is_grad()
        try:
            if grad:
                set_grad(False)
            for i in check_idxs:
                if args[i].data_ptr() % 16:
                    args[i] = _clone_preserve_strides(args[i])
            outs = call(args)
        finally:
            if grad:
                set_grad(True)
        if isinstance(outs, tuple):
            outs = list(outs)
        elif not isinstance(outs, list):
            outs = [outs]
        if len(outs) != expected:
            raise AssertionError(f"expected {expected} outputs, got {len(outs)}")
        for i, dims in marks:
            _mark_dynamic_dims(outs[i], dims)
        return outs

    compiled_graph.armature_loaded_artifact = True
    return compiled_graph
