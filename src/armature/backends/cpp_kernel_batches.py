"""Inductor's C++ kernels of one compile, built as a few shared libraries instead of one each.

On a CPU, inductor generates one C++ function per fused kernel and builds
each one as its own Python extension (``AsyncCompile.cpp_pybinding``): one
compiler process per kernel.  Most of such a build is not the kernel.  Every
translation unit loads inductor's precompiled header (torch's vectorised
headers) and instantiates the templates that header leaves for the end of
the unit: about 0.6 s on this project's machine for an empty unit, against
about 0.08 s for a kernel itself.  A torchvision ResNet has about 20 distinct
kernels: 20 builds of about 1 s, 10 s of its 19 s cold compile on 2 cores.
The same 20 kernels built as one unit take 2.3 s; as two units, one per
core, 1.8 s.

So, while armature's inductor backend compiles, the kernels that one
generated module asks for are held (a future each, which is what inductor's
own asynchronous builds hand out too) until the module waits for them
(``AsyncCompile.wait``, at the end of the module).  Then they are built as
``compile_threads`` units at most, side by side, through inductor's own
``CppPythonBindingsCodeCache.load_async``: the same compiler, flags,
precompiled header, vector ISA, on-disk cache and locks as a kernel of its
own (a unit of one kernel is simply built as inductor builds it, and a
kernel built earlier in the process is reused).  The source of each kernel and of its Python binding is the one
inductor would build (taken from ``load_pybinding_async`` itself, so it
follows the installed torch), wrapped in a namespace of its own, with its
C entry points renamed by macro (``kernel`` -> ``armature_batched_kernel_3``),
and its ``#include`` lines moved to the top of the unit.  One extra
``PyInit_kernel`` at the end collects every kernel's bound function into
one module.  The functions the generated module calls are then built from
the same code with the same flags and called the same way.  (The compiler
limits inlining growth per unit, so its inlining inside a large unit could
in principle differ from a unit of one kernel; the steady state measured
the same: benchmarks/cpp_kernel_batches.py.)

When it does not apply, inductor does what it always does:

* outside armature's compiles (a ``torch.compile`` in the same process, on
  another thread or not);
* a kernel whose source does not have the expected shape (a condition or
  macro before an include, more than one ``extern "C"``, its own macros
  named like the renamed symbols) is built on its own;
* a module with a single kernel;
* a unit that fails to build: its kernels are built one by one, as
  inductor would have; if they build, the unit was at fault, and batching
  is off for the rest of the process (a warning under
  ``ARMATURE_LOGS=perf`` says why), so no later module pays for a failed
  unit again;
* ``armature.config.cpp_kernel_batches = False`` (or
  ``ARMATURE_CPP_KERNEL_BATCHES=0``) when the graph is compiled.

Inductor compiles a backward graph lazily, at the first backward call, out
of the compile's scope; it does so through the ``inner_compile`` it was
given, so the backend passes one that marks the thread (:func:`in_batches`).
A compile from inductor's own caches (FX graph cache, AOTAutograd cache)
loads the same modules, asks for the same kernels in the same order and
finds the units built.
"""
from __future__ import annotations

import contextlib
import functools
import re
import threading
import weakref
from typing import Any, Callable, Iterator

from ..diagnostics import logs

__all__ = ["batched", "deferred_waits", "forget_built", "in_batches", "plan_units", "unit_source"]

log_perf = logs.artifact("perf")

_marks = threading.local()   # (depth of armature compiles on this thread: > 0 while batching applies)


@contextlib.contextmanager
def batched() -> Iterator[None]:
    """Hold the C++ kernels of the modules that inductor loads on this thread
    inside the block, and build each module's kernels as a few units."""
    _install()
    depth = getattr(_marks, "depth", 0)
    _marks.depth = depth + 1
    try:
        yield
    finally:
        _marks.depth = depth


def in_batches(inner_compile: Callable[..., Any]) -> Callable[..., Any]:
    """``inner_compile`` (inductor's ``compile_fx_inner``) run under
    :func:`batched`, for the backward graph that inductor compiles later."""
    @functools.wraps(inner_compile)
    def compile_in_batches(*args: Any, **kwargs: Any) -> Any:
        with batched():
            return inner_compile(*args, **kwargs)
    return compile_in_batches


def forget_built() -> None:
    """Stop reusing the kernels built so far in this process (they were
    built for a vector ISA whose probe then failed: backends/inductor.py)."""
    _built.clear()


def _marked() -> bool:
    return getattr(_marks, "depth", 0) > 0


# --- the hook on inductor's AsyncCompile --------------------------------------------------------

_install_lock = threading.Lock()
_originals: dict[str, Callable[..., Any]] = {}
_batches: "weakref.WeakKeyDictionary[Any, _Batch]" = weakref.WeakKeyDictionary()
_built: dict[str, Callable[..., Any]] = {}   # (a kernel's whole source -> its function: later modules reuse it)
_broken: str | None = None   # (why batching is off in this process: a unit failed whose kernels built alone)


def _install() -> None:
    """Put the hooks on ``AsyncCompile`` once per process.  Unmarked threads
    go straight to inductor's methods."""
    if _originals:
        return
    with _install_lock:
        if _originals:
            return
        from torch._inductor.async_compile import AsyncCompile

        cpp_pybinding, wait = AsyncCompile.cpp_pybinding, AsyncCompile.wait

        @functools.wraps(cpp_pybinding)
        def cpp_pybinding_held(self, argtypes, source_code, *args, **kwargs):
            if args or kwargs or _broken is not None or not _marked():
                return cpp_pybinding(self, argtypes, source_code, *args, **kwargs)
            return _hold(self, list(argtypes), source_code)

        @functools.wraps(wait)
        def wait_after_batches(self, scope):
            pending = getattr(_deferral, "pending", None)
            if pending is not None and _marked():
                pending.append((self, scope))   # (built with the others at the end: deferred_waits)
                return None
            return _finish_wait(self, scope)

        _originals.update(cpp_pybinding=cpp_pybinding, wait=wait)
        AsyncCompile.cpp_pybinding = cpp_pybinding_held
        AsyncCompile.wait = wait_after_batches


def _finish_wait(async_compile: Any, scope: dict[str, Any]) -> Any:
    """Inductor's ``AsyncCompile.wait`` for one generated module, with its
    held kernels built as units and swapped into the module."""
    # (inductor's wait first: with several compile threads it asks every future for its
    # result, the held kernels too, inside its own timing of the builds)
    waited = _originals["wait"](async_compile, scope)
    batch = _batches.pop(async_compile, None)
    if batch is not None or _marked():
        if batch is not None:
            batch.build()
        # (with one thread inductor's wait resolves no future: every held kernel, also those
        # of a batch that a result() call built earlier, is swapped in here)
        for key, value in list(scope.items()):
            if isinstance(value, _HeldKernel):
                scope[key] = value.result()
    return waited


_deferral = threading.local()   # (.pending: the waits deferred_waits holds on this thread, or None)


@contextlib.contextmanager
def deferred_waits() -> Iterator[None]:
    """Within the block (and :func:`batched`), the modules inductor loads on
    this thread do not build their kernels at their ``wait``: all of them
    are built together when the block ends, as at most ``compile_threads``
    units side by side, and then swapped into their modules.  For a compile
    whose code cannot run before the block ends anyway -- the one that read
    the ISA ahead of its probe and compiles its backward with its forward
    (backends/inductor.py) -- that is one round of units instead of one per
    module.  A kernel called before (nothing in inductor's compile does)
    builds itself.  If the block raises, nothing is built."""
    if getattr(_deferral, "pending", None) is not None:
        yield   # (nested: the outer block builds)
        return
    _deferral.pending = pending = []
    try:
        yield
    except BaseException:
        _deferral.pending = None
        raise
    _deferral.pending = None
    batches = [batch for owner, _ in pending if (batch := _batches.pop(owner, None)) is not None]
    todo = [held for batch in batches for held in batch.held if held.kernel is None]
    if todo:
        _build_together(batches[0], todo)
    for owner, scope in pending:
        _finish_wait(owner, scope)


def _build_together(batch: "_Batch", todo: "list[_HeldKernel]") -> None:
    """Build the held kernels of several modules as one plan of units (a
    kernel asked for by two modules is built once)."""
    same: dict[str, list[_HeldKernel]] = {}
    for held in todo:
        same.setdefault(held.code, []).append(held)
    with batch.lock:
        batch._build([group[0] for group in same.values()])
    for group in same.values():
        for held in group:
            held.kernel = group[0].kernel
            _built[held.code] = held.kernel


def _hold(async_compile: Any, argtypes: list[str], source: str) -> Any:
    code = _binding_source(argtypes, source)
    if code is None:
        return _originals["cpp_pybinding"](async_compile, argtypes, source)
    if code in _built:
        return _built[code]   # (built in an earlier module of this process, alone or in a unit)
    from torch._inductor import async_compile as module

    kernel_log = getattr(module, "kernel_code_log", None)
    if kernel_log is not None:
        kernel_log.info("CPP+Bindings Kernel:\n%s", source)
    batch = _batches.get(async_compile)
    if batch is None:
        batch = _batches[async_compile] = _Batch(async_compile)
    return batch.add(argtypes, source, code)


def _binding_source(argtypes: list[str], source: str) -> str | None:
    """The whole source inductor would build for this kernel (kernel and
    Python binding), or None if it cannot go in a shared unit."""
    from torch._inductor.codecache import CppPythonBindingsCodeCache

    captured: list[str] = []

    class _Capture(CppPythonBindingsCodeCache):
        @classmethod
        def load_async(cls, main_code, *args, **kwargs):   # (records the source; builds nothing)
            captured.append(main_code)
            return lambda: None

    try:
        _Capture.load_pybinding_async(argtypes, source)
    except Exception as e:  # noqa: BLE001 - an optimisation only: inductor builds this one itself
        log_perf.debug("C++ kernel built on its own (binding source: %s: %s)", type(e).__name__, e)
        return None
    if len(captured) != 1 or CppPythonBindingsCodeCache.entry_function != "kernel":
        return None
    code = captured[0]
    return code if _shareable(code) else None


_INCLUDE = re.compile(r"^\s*#\s*include\b")
_HOISTED = re.compile(r"^\s*#\s*(include\b|define\s+PY_SSIZE_T_CLEAN\s*$)")
_CONDITIONAL = re.compile(r"^\s*#\s*if")
_DEFINE = re.compile(r"^\s*#\s*(define|undef)\b")
_OWN_MACROS = re.compile(r"^\s*#\s*(define|undef)\s+(kernel|PyInit_kernel|armature_\w*)\b", re.M)


def _shareable(code: str) -> bool:
    """A kernel's source can share a unit if its includes are unconditional,
    it has one C entry point of its own (``kernel``), a ``PyInit_kernel``,
    and no macros of the names the unit renames."""
    lines = code.splitlines()
    includes = [i for i, line in enumerate(lines) if _INCLUDE.match(line)]
    # (a condition or a macro of its own before an include: moving the include to the top of
    # the unit could change what it means)
    if includes and any(_CONDITIONAL.match(line) or (_DEFINE.match(line) and not _HOISTED.match(line))
                        for line in lines[:includes[-1]]):
        return False
    return (code.count('extern "C"') == 1 and re.search(r'extern "C"\s+void\s+kernel\s*\(', code) is not None
            and "PyInit_kernel" in code and not _OWN_MACROS.search(code))


# --- one generated module's kernels ------------------------------------------------------------

class _HeldKernel:
    """The future a held kernel stands for (the generated module keeps it in
    a global until ``AsyncCompile.wait`` swaps in the kernel)."""

    def __init__(self, batch: "_Batch", argtypes: list[str], source: str, code: str):
        self.batch, self.argtypes, self.source, self.code = batch, argtypes, source, code
        self.kernel: Callable[..., Any] | None = None

    def result(self, timeout: float | None = None) -> Callable[..., Any]:
        if self.kernel is None:
            self.batch.build()
        assert self.kernel is not None
        return self.kernel

    def __call__(self, *args: Any) -> Any:   # (a module that never waited: build, then run)
        return self.result()(*args)


class _Batch:
    """The kernels one generated module (one ``AsyncCompile``) asked for."""

    def __init__(self, async_compile: Any):
        # (weakly: the batch is the value of its AsyncCompile's entry in _batches, and a module
        # whose import fails before its wait must not keep both alive)
        self.owner = weakref.ref(async_compile)
        self.held: list[_HeldKernel] = []
        self.lock = threading.Lock()

    def _async_compile(self) -> Any:
        owner = self.owner()
        if owner is None:
            from torch._inductor.async_compile import AsyncCompile
            owner = AsyncCompile()
        return owner

    def add(self, argtypes: list[str], source: str, code: str) -> Any:
        held = _held_class()(self, argtypes, source, code)
        self.held.append(held)
        return held

    def build(self) -> None:
        owner = self.owner()
        if owner is not None:
            _batches.pop(owner, None)   # (kernels asked for after this go to a new batch)
        with self.lock:
            todo = [h for h in self.held if h.kernel is None]
            if todo:
                self._build(todo)
                for member in todo:
                    _built[member.code] = member.kernel

    def _build(self, todo: list[_HeldKernel]) -> None:
        from torch._inductor.async_compile import get_compile_threads
        from torch._inductor.codecache import CppPythonBindingsCodeCache

        threads = max(1, get_compile_threads())
        units = [[todo[i] for i in unit] for unit in plan_units([len(h.code) for h in todo], threads)]
        # (a unit of one kernel saves nothing: it is built as inductor builds it, in its cache)
        alone = self._submit_alone([unit[0] for unit in units if len(unit) == 1])
        shared = [unit for unit in units if len(unit) > 1]
        owner = self._async_compile()
        submit = owner.submit if threads > 1 else None
        loads = []
        for members in shared:
            try:
                source = unit_source([m.code for m in members])
                loads.append((members, CppPythonBindingsCodeCache.load_async(source, "cpu", submit_fn=submit)))
            except Exception as e:  # noqa: BLE001 - an optimisation only: built one by one
                self._failed(members, e)
        for members, load in loads:
            try:
                library = load()
                for i, member in enumerate(members):
                    member.kernel = getattr(library, f"kernel_{i}")
            except Exception as e:  # noqa: BLE001 - an optimisation only: built one by one
                self._failed(members, e)
        self._resolve(alone)
        log_perf.debug("%d C++ kernels built as %d shared units and %d alone", len(todo), len(shared), len(alone))

    def _failed(self, members: list[_HeldKernel], error: Exception) -> None:
        global _broken
        reason = f"{type(error).__name__}: {str(error)[:2000]}"
        self._resolve(self._submit_alone(members))   # (raises if a kernel itself does not build)
        # (each kernel builds alone, so the unit was at fault: whatever broke it, say once and stop
        # paying a failed unit plus one build per kernel in every later module)
        if _broken is not None:
            return
        _broken = reason
        log_perf.warning("C++ kernels are built one per compiler run for the rest of this process: a "
                         "shared unit of %d kernels failed to build while each builds alone (%s)",
                         len(members), reason)

    def _submit_alone(self, members: list[_HeldKernel]) -> list[tuple[_HeldKernel, Any]]:
        cpp_pybinding = _originals["cpp_pybinding"]
        owner = self._async_compile()
        return [(m, cpp_pybinding(owner, m.argtypes, m.source)) for m in members]

    @staticmethod
    def _resolve(submitted: list[tuple[_HeldKernel, Any]]) -> None:
        for member, kernel in submitted:
            member.kernel = kernel.result() if hasattr(kernel, "result") else kernel


@functools.cache
def _held_class() -> type:
    """:class:`_HeldKernel` as one of inductor's futures (made at first use:
    importing inductor takes seconds), so inductor's own wait resolves it."""
    from torch._inductor.codecache import CodeCacheFuture

    return type("HeldKernel", (_HeldKernel, CodeCacheFuture), {"__doc__": _HeldKernel.__doc__})


# --- the shared unit ---------------------------------------------------------------------------

def plan_units(sizes: list[int], threads: int) -> list[list[int]]:
    """Split kernels (their source sizes) into at most ``threads`` units of
    about equal size, biggest first onto the smallest unit; the same
    kernels give the same units (their source is the on-disk cache key)."""
    count = max(1, min(threads, len(sizes)))
    units: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        smallest = min(range(count), key=lambda u: (totals[u], u))
        units[smallest].append(i)
        totals[smallest] += sizes[i]
    return [sorted(unit) for unit in units if unit]


def unit_source(codes: list[str]) -> str:
    """One translation unit for several kernels' whole sources (kernel and
    binding each), whose ``PyInit_kernel`` makes a module with attributes
    ``kernel_0``, ``kernel_1``, ... in the order given."""
    hoisted: list[str] = []
    parts: list[str] = []
    for i, code in enumerate(codes):
        body = []
        for line in code.splitlines():
            if _HOISTED.match(line):
                if line.strip() not in hoisted:
                    hoisted.append(line.strip())
            else:
                body.append(line)
        parts.append("\n".join([
            f"#define kernel armature_batched_kernel_{i}",
            f"#define PyInit_kernel armature_batched_init_{i}",
            f"namespace armature_batch_{i} {{",
            *body,
            f"}}  // namespace armature_batch_{i}",
            "#undef kernel",
            "#undef PyInit_kernel",
        ]))
    # (PY_SSIZE_T_CLEAN must come before Python.h)
    hoisted.sort(key=lambda line: not line.startswith("#define"))
    adopt = "\n".join(
        f'    if (!armature_adopt(unit, "kernel_{i}", armature_batch_{i}::armature_batched_init_{i}())) '
        "{ Py_DECREF(unit); return nullptr; }"
        for i in range(len(codes)))
    return "\n".join([*hoisted, "", *parts, _UNIT_INIT.replace("@ADOPT@", adopt)])


_UNIT_INIT = """
// The unit's module: each kernel's bound function, taken from the module its own binding makes.
static PyModuleDef armature_unit_module = {PyModuleDef_HEAD_INIT, "kernel", nullptr, -1, nullptr};

static int armature_adopt(PyObject* unit, const char* name, PyObject* kernel_module) {
    if (kernel_module == nullptr) return 0;
    PyObject* bound = PyObject_GetAttrString(kernel_module, "kernel");
    Py_DECREF(kernel_module);
    if (bound == nullptr) return 0;
    if (PyModule_AddObject(unit, name, bound) < 0) { Py_DECREF(bound); return 0; }
    return 1;
}

PyMODINIT_FUNC PyInit_kernel(void) {
    PyObject* unit = PyModule_Create(&armature_unit_module);
    if (unit == nullptr) return nullptr;
@ADOPT@
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(unit, Py_MOD_GIL_NOT_USED);
#endif
    return unit;
}
"""
