"""Inductor's CPU vector-ISA probes: only those its answer needs, behind the compile.

Before it generates its first C++ kernel in a process, inductor decides which
SIMD instruction set its kernels use: ``cpu_vec_isa.pick_vec_isa()``, which
reads ``valid_vec_isa_list()``.  That list is computed once per process by
probing every ISA the CPU reports (AMX, AVX-512 with VNNI, AVX-512, AVX2 on
a typical x86 server): for each, a small program compiled against torch's
vectorised headers and loaded in a child process.  With a cold inductor
cache those are up to six C++ builds of about 2 s each, one after another,
on the critical path of the first compile: 7-10 s of a 15-20 s compile on
this project's 2-core machine, paid by torch.compile too.

But ``pick_vec_isa`` (the list's only reader in torch 2.11-2.15) uses the
*first* valid ISA of the list unless ``cpp.simdlen`` or
``ATEN_CPU_CAPABILITY`` asks for another: once the best ISA has passed its
probe, the others' answers change nothing.  So:

* **Only what is read.**  :func:`start_probes` replaces the module global
  ``cpu_vec_isa.valid_vec_isa_list`` (every reader looks it up at each call)
  with a function returning a :class:`LazyValidList`: a ``list`` whose items
  are exactly inductor's list, in its order, computed on demand -- reading
  item 0 probes candidates in order until one passes; iterating probes as it
  goes; anything that needs the whole list (``len``, ``==``, ``repr``,
  slices, ...) probes everything first.  Each candidate is asked the
  question inductor asks (``bool(isa)``: inductor's own code) once, in a copy
  of the context of the first read of the list (inductor's config, the
  compiler among it, as inductor's ``functools.cache`` freezes them at its
  first call).
* **Behind the compile.**  A background thread starts at once on the probes
  the pick needs -- it runs inductor's own ``pick_vec_isa`` over the lazy
  list, under the compile's settings, so it reads exactly what the compile's
  pick will read: the first valid candidate by default, on to the ISA that
  ``ATEN_CPU_CAPABILITY`` or ``cpp.simdlen`` names otherwise, whatever the
  machine's candidates are (AMX, AVX-512, AVX2-only, ...) -- while the
  compiling thread traces the rest of the way, runs AOTAutograd and
  inductor's lowering, none of which needs the answer; a read waits for the
  probe it needs (or runs it, if nobody has).  A probe changes its ISA
  object's compiler flags for a moment (AVX-512's bf16 check), so each
  candidate is probed by one thread and handed out only after.

* **Ahead of the probe, checked before anything runs.**  Inside
  :func:`speculating` (armature's inductor backend around one compile), a
  read of item 0 (or of the list's truth) while the first candidate's probe
  is still running answers that candidate at once: the compile goes on to
  generate and build its kernels side by side with the probe, instead of
  waiting for it (1.3 s of a 5 s first training step of the per-block
  recipe on this project's machine).  Nothing built that way runs before
  :meth:`Speculation.confirmed` has waited for the probe: the backend asks
  it once ``compile_fx`` returns (or raises), and if the probe failed it
  compiles the graph again from a copy, now reading the real list (the
  speculation's kernels are dropped, and a compile that knows its ISA
  keys inductor's on-disk caches on it unless it is the one read ahead:
  inductor_cache_key.py).  Only the
  plain pick reads item 0: ``ATEN_CPU_CAPABILITY`` and ``cpp.simdlen`` make
  it iterate, which waits as before.

The answers are exactly the ones inductor would compute; what changes is
which are computed, and when.  Nothing is done where inductor would not
probe (not x86, ``cpp.vec_isa_ok`` set: inductor's ``__bool__`` answers
without building), where the compile overrides inductor's config and this
torch keeps overrides process-wide (2.11: a background thread would not see
them, so the probes stay with the compiling thread, still only those read), for graphs without CPU tensors (a GPU graph need not pay
for CPU probes) or once inductor's list has been computed in this process.
A probe that fails in the background is asked again by the reader (inductor
raising as it would); ``valid_vec_isa_list.cache_clear()`` puts inductor's
function back.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import threading
from typing import Any, Iterator

import torch

from ..diagnostics import logs

__all__ = ["LazyValidList", "Speculation", "ahead_candidate", "probe_ahead", "speculating", "start_probes",
           "unexpected_isa", "wait_for_probes", "wants_cpu_probes"]

log_perf = logs.artifact("perf")


def wants_cpu_probes(example_inputs: list[Any]) -> bool:
    """Whether a graph with these inputs will likely have C++ kernels: a CPU
    tensor among them, or no tensor input at all (factories default to CPU)."""
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    return not devices or "cpu" in devices


def _candidates(cpu_vec_isa) -> list:
    """The ISAs ``valid_vec_isa_list`` would probe on this machine (x86 only:
    elsewhere it probes at most one)."""
    flags = cpu_vec_isa.x86_isa_checker()
    return [isa for isa in cpu_vec_isa.supported_vec_isa_list
            if flags and all(flag in flags for flag in str(isa).split())]


def start_probes(patches: dict[str, Any]) -> None:
    """Start the ISA probes inductor's pick needs on a background
    thread, under the inductor config overrides ``patches`` (a
    ``cpp.vec_isa_ok`` given in ``options`` wins, as it does inside
    ``compile_fx``), and return; inductor's reads of the list wait for the
    probes they need."""
    try:
        _start(patches)
    except Exception as e:  # noqa: BLE001 - an optimisation only: inductor probes by itself
        log_perf.debug("inductor CPU ISA probes left to inductor (%s: %s)", type(e).__name__, e)


def probe_ahead(patches: dict[str, Any]) -> None:
    """:func:`start_probes`, then wait for the background probes
    (benchmarks/isa_probes.py times them alone this way)."""
    start_probes(patches)
    wait_for_probes()


def wait_for_probes() -> None:
    """Return once the background probes started here are done."""
    done = _running
    if done is not None:
        done.wait()


class Speculation:
    """What one compile read ahead of the probes (see :func:`speculating`)."""

    def __init__(self) -> None:
        self.read: "LazyValidList | None" = None   # (the list whose first candidate was answered unprobed)

    @property
    def isa(self) -> Any:
        """The ISA answered ahead of its probe (None: nothing was)."""
        return None if self.read is None else self.read._isas[0]

    def confirmed(self) -> bool:
        """Whether what the compile read is what inductor's list says: True
        at once if it read nothing ahead; otherwise waits for the first
        candidate's probe (runs it, if nobody is) and tells whether it
        passed with the findings the stand-in predicted."""
        lazy = self.read
        if lazy is None:
            return True
        lazy._fill(1)
        real = lazy._isas[0]
        return (list.__len__(lazy) > 0 and list.__getitem__(lazy, 0) is real
                and _same_findings(real, lazy._stand_in))


def _stand_in(isa: Any) -> Any:
    """A copy of candidate ``isa`` that a speculating compile reads: true on
    that thread without a probe (elsewhere it answers as ``isa`` does), with
    what a passing probe would also find predicted from what the CPU
    reports (AVX-512 BF16, AMX FP16: flags the kernels are built with, and
    the micro-GEMM's choices).  Made before the probe starts, as the probe
    changes its ISA's flags for a moment.  A class of its own, so that it is
    neither equal to ``isa`` nor shares its cached answers."""
    copy = object.__new__(_stand_in_class(type(isa)))
    copy.__dict__.update(isa.__dict__)
    copy._probed = isa
    from torch._inductor import cpu_vec_isa
    if isinstance(isa, cpu_vec_isa.VecAVX512) and torch.cpu._is_avx512_bf16_supported():
        copy._is_avx512_bf16_supported = True
    amx = getattr(cpu_vec_isa, "VecAMX", None)
    fp16 = getattr(torch.cpu, "_is_amx_fp16_supported", None)
    if amx is not None and isinstance(isa, amx) and fp16 is not None and fp16():
        copy._is_amx_fp16_supported = True
    return copy


@functools.cache
def _stand_in_class(cls: type) -> type:
    def __bool__(self) -> bool:
        if getattr(_speculation, "current", None) is not None:
            return True
        return bool(self._probed)

    def __reduce__(self):   # (pickled as the candidate's own class, findings and all)
        state = {k: v for k, v in self.__dict__.items() if k != "_probed"}
        return _rebuilt, (cls, state)

    return type(f"Ahead{cls.__name__}", (cls,), {"__bool__": __bool__, "__reduce__": __reduce__,
                                                  "__hash__": cls.__hash__, "__module__": __name__})


def _rebuilt(cls: type, state: dict) -> Any:
    isa = object.__new__(cls)
    isa.__dict__.update(state)
    return isa


_FINDINGS = ("_is_avx512_bf16_supported", "_is_amx_fp16_supported", "_arch_flags", "_macro", "_bit_width",
             "_dtype_nelements")


def _exact_signature(isa: Any) -> str:
    """What a compile's kernels depend on in its ISA: the ISA, its build
    flags and macros, and what its probe found (raises for an ISA object of
    another shape)."""
    found = [repr(getattr(isa, k, None)) for k in _FINDINGS]
    return f"{isa}:{isa.build_arch_flags()}:{isa.build_macro()}:{','.join(found)}"


def _same_findings(real: Any, stand_in: Any) -> bool:
    """Whether the probed candidate builds and generates as its stand-in did
    (its instance state too, whatever a probe of this torch sets)."""
    try:
        return (_exact_signature(real) == _exact_signature(stand_in)
                and all(getattr(real, k, None) == v for k, v in stand_in.__dict__.items() if k != "_probed"))
    except Exception:  # noqa: BLE001 - unsure: not the same
        return False


def _signature(isa: Any) -> str:
    """:func:`_exact_signature`, or the ISA's name for an object of another shape."""
    try:
        return _exact_signature(isa)
    except Exception:  # noqa: BLE001 - its name still tells most apart
        return str(isa)


def unexpected_isa(patches: dict[str, Any], example_inputs: list[Any]) -> "str | None":
    """For a compile that does not read ahead: the signature of the ISA its
    kernels will be generated for, when the lazy list is in use and that ISA
    is not what a compile reading ahead assumes (the first candidate with
    the stand-in's findings); None otherwise.  Reads the pick as the compile
    will (under its overrides: ``cpp.simdlen``), so it waits for the probes
    the compile's codegen would wait for, a little earlier."""
    lazy = _lazy_list()
    if lazy is None or not lazy._isas or not wants_cpu_probes(example_inputs):
        return None
    from torch._inductor import config, cpu_vec_isa
    with config.patch(patches):
        isa = cpu_vec_isa.pick_vec_isa()
    if isa is lazy._isas[0] and _same_findings(isa, lazy._stand_in):
        return None
    return _signature(isa)


_speculation = threading.local()   # (.current: the Speculation of the compile on this thread, if any)


@contextlib.contextmanager
def speculating() -> "Iterator[Speculation]":
    """Within the block, this thread's reads of the first item of the lazy
    list answer the first candidate without waiting for its probe; the
    caller must ask :meth:`Speculation.confirmed` before running anything
    compiled in the block."""
    spec = Speculation()
    outer = getattr(_speculation, "current", None)
    _speculation.current = spec
    try:
        yield spec
    finally:
        _speculation.current = outer


def ahead_candidate() -> Any:
    """The ISA a compile starting now could read ahead of its probe (the
    lazy list is installed and its first candidate not yet decided), or
    None: only then does the backend speculate, keeping a spare copy of
    the graph for a second compile."""
    lazy = _lazy_list()
    return lazy._isas[0] if lazy is not None and lazy._undecided() else None


def _lazy_list() -> "LazyValidList | None":
    """The lazy list standing in for inductor's, if installed."""
    with _state:
        installed = _installed
    return None if installed is None else installed[2]()


_state = threading.Lock()                  # (guards _running, _installed and the module global)
_running: threading.Event | None = None    # (set when the background probes are done)
_installed: tuple | None = None            # (inductor's module, its function, the one standing in for it)


class LazyValidList(list):
    """Inductor's ``valid_vec_isa_list()``, item by item as it is read.

    Its items are the candidates (inductor's ``supported_vec_isa_list``
    entries the CPU reports, in that order) whose probe passes; the probes
    run as the reads get to them.  Reads that need the whole list fill it
    first, so every answer is the list inductor would have returned.  One
    lock covers the probes: each candidate is probed once, by one thread,
    and a probe that raises leaves it to the next reader."""

    def __init__(self, isas: list, context: contextvars.Context):
        super().__init__()
        self._isas = isas
        self._context = context         # (copied for each probe: a context is entered by one thread at a time)
        self._next = 0                  # (the first candidate not yet looked at)
        self._fill_lock = threading.RLock()
        self._stand_in = _stand_in(isas[0]) if isas else None   # (what a speculating compile reads)

    def _fill(self, n: "int | None") -> None:
        """Look at candidates until ``n`` items are known (None: all)."""
        with self._fill_lock:
            while (n is None or list.__len__(self) < n) and self._next < len(self._isas):
                isa = self._isas[self._next]
                if self._context.copy().run(bool, isa):
                    list.append(self, isa)
                self._next += 1

    def _undecided(self) -> bool:
        """Whether the first candidate's probe has not answered yet."""
        return bool(self._isas) and not list.__len__(self) and not self._next

    def _ahead(self) -> Any:
        """The first candidate, unprobed, for a compile inside
        :func:`speculating` while its probe is undecided (None otherwise:
        the read waits).  No lock: the probe thread holds it while it builds."""
        spec = getattr(_speculation, "current", None)
        if spec is None or not self._undecided():
            return None
        if spec.read is None:
            spec.read = self
            log_perf.debug("inductor CPU ISA: %s read ahead of its probe (checked before the compile's "
                           "code runs)", self._isas[0])
        return self._stand_in

    def __iter__(self):
        i = 0
        while True:
            self._fill(i + 1)
            if i >= list.__len__(self):
                return
            yield list.__getitem__(self, i)
            i += 1

    def __getitem__(self, i):
        if type(i) is int and i == 0 and (isa := self._ahead()) is not None:
            return isa
        self._fill(i + 1 if isinstance(i, int) and i >= 0 else None)
        return list.__getitem__(self, i)

    def __bool__(self) -> bool:
        if self._ahead() is not None:
            return True
        self._fill(1)
        return list.__len__(self) > 0

    def __len__(self) -> int:
        self._fill(None)
        return list.__len__(self)

    def __reduce_ex__(self, protocol):
        self._fill(None)
        return (list, (list(list.__iter__(self)),))


def _whole(name: str):
    base = getattr(list, name)

    @functools.wraps(base)
    def method(self, *args, **kwargs):
        self._fill(None)
        return base(self, *args, **kwargs)
    return method


for _name in ("__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__repr__",
              "__reversed__", "__add__", "__mul__", "__rmul__", "copy", "count", "index"):
    setattr(LazyValidList, _name, _whole(_name))
del _name


def _start(patches: dict[str, Any]) -> None:
    global _running, _installed
    from torch._inductor import config, cpu_vec_isa

    with _state:
        if _installed is not None:
            return   # (installed by an earlier compile: its list serves this one too)
        inductors = cpu_vec_isa.valid_vec_isa_list
        cache_info = getattr(inductors, "cache_info", None)
        if cache_info is None or cache_info().currsize:
            return   # (computed already, or not inductor's cached function: nothing to gain)
        if patches and not _overrides_are_per_thread(config):
            # (torch 2.11: a config.patch is process-wide and ends when the compile's `with` does, so
            # a background thread could not see the compile's overrides -- a pick reading on for
            # `cpp.simdlen`, the compiler the probes build with -- and would probe for other settings)
            log_perf.debug("inductor CPU ISA probes left to inductor: this torch's config overrides "
                           "(%s) are process-wide, not visible to a background thread", sorted(patches))
            return
        with config.patch(patches):
            if config.cpp.vec_isa_ok is not None or config.is_fbcode():
                return
            isas = _candidates(cpu_vec_isa)
            if not isas:
                return
            # (inductor's config overrides are per thread (context variables): the probes run in
            # copies of this thread's context, so they see the compile's settings, the compiler to
            # use among them, as inductor's cached list sees those of its first caller)
            lazy = LazyValidList(isas, contextvars.copy_context())

        @functools.wraps(inductors)
        def valid_vec_isa_list():
            return lazy

        def cache_clear():
            with _state:
                _remove()
            inductors.cache_clear()

        valid_vec_isa_list.cache_clear = cache_clear
        valid_vec_isa_list.cache_info = inductors.cache_info
        done = threading.Event()
        cpu_vec_isa.valid_vec_isa_list = valid_vec_isa_list
        _running, _installed = done, (cpu_vec_isa, inductors, valid_vec_isa_list)
    # (what a probe imports, imported here: two threads importing torch's packages at once can
    # leave one with a half-made package -- seen here once in a few dozen cold starts, as "No module named
    # 'torch._functorch._aot_autograd.streams'" in the compiling thread; 0.06 s once torch._inductor's
    # config is in, as it is by now)
    import torch._inductor.codecache  # noqa: F401
    import torch._inductor.cpp_builder  # noqa: F401
    import torch.utils._filelock  # noqa: F401
    threading.Thread(target=_probe, args=(done, lazy, cpu_vec_isa.pick_vec_isa), name="armature-isa-probes",
                     daemon=True).start()


def _overrides_are_per_thread(config) -> bool:
    """Whether inductor's ``config.patch`` overrides live in context
    variables (torch 2.13 on), so a thread started in a copy of the
    compile's context sees them; in torch 2.11 they are module-wide and
    undone when the compile's ``with`` ends."""
    entries = getattr(config, "_config", None)
    entry = next(iter(entries.values()), None) if isinstance(entries, dict) else None
    return isinstance(getattr(entry, "user_override", None), contextvars.ContextVar)


def _probe(done: threading.Event, lazy: LazyValidList, pick) -> None:
    """The probes the compile's pick will need, in the background: inductor's
    own ``pick_vec_isa`` run over the lazy list in a copy of the compile's
    context (its config overrides, ``cpp.simdlen`` among them), so the
    candidates probed are those the pick reads and no more."""
    try:
        picked = lazy._context.copy().run(pick)
        log_perf.debug("inductor CPU ISA probes behind the compile: picks %s, %d of %d candidates probed",
                       picked, lazy._next, len(lazy._isas))
    except Exception as e:  # noqa: BLE001 - the reader asks again (and sees inductor's error)
        log_perf.debug("inductor CPU ISA probe failed in the background (%s: %s); left to the reader",
                       type(e).__name__, e)
    finally:
        done.set()


def _remove() -> None:
    """Put inductor's function back (unless someone replaced ours since)."""
    global _running, _installed
    if _installed is not None:
        module, inductors, ours = _installed
        if module.valid_vec_isa_list is ours:
            module.valid_vec_isa_list = inductors
    _running = _installed = None


def _after_fork_in_child() -> None:
    """A process forked while the probes ran has our list but not the probe
    thread that would answer it: it gets inductor's function back (and
    probes by itself if it compiles)."""
    global _state
    _state = threading.Lock()
    if _running is not None and not _running.is_set():
        _remove()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
