"""The ``inductor`` backend: torch's own optimizing compiler (C++/OpenMP on CPU, Triton on GPU).

``torch._inductor`` takes seconds to import, so nothing here touches it until
a graph is compiled (or until options need checking).  ``mode`` maps to
inductor config exactly as in ``torch.compile`` (via ``list_mode_options``);
``options`` are inductor config overrides, checked at lookup time so a typo
fails where it was written rather than at the first compile.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from typing import Any, Callable

import torch

from ..config import config as armature_config
from ..diagnostics import logs
from . import register_backend

log_perf = logs.artifact("perf")


def check_options(options: dict[str, Any]) -> None:
    """Raise ``ValueError`` for an option that is not an inductor config key, or of the wrong type."""
    from torch._inductor import config

    known = config.get_config_copy()
    for key, value in options.items():
        attr = key.replace("-", "_")
        if attr not in known:
            raise ValueError(
                f"unknown inductor option {key!r}; see torch._inductor.list_options()"
            )
        expected = config.get_type(attr)
        # Generic aliases (list[str], Optional[...]) can't be isinstance-checked.
        if isinstance(expected, type) and not isinstance(value, expected):
            raise ValueError(
                f"inductor option {key!r} expects {expected.__name__}, "
                f"got {type(value).__name__}"
            )


def config_patches(mode: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
    """The inductor config overrides that ``mode`` and ``options`` stand for."""
    patches: dict[str, Any] = {}
    if mode not in (None, "default"):
        from torch._inductor import list_mode_options

        patches.update(list_mode_options(mode))
    for key, value in (options or {}).items():
        patches[key.replace("-", "_")] = value
    return patches


def setting(key: str, patches: dict[str, Any]) -> Any:
    """Inductor's config value ``key`` ("layout_optimization",
    "triton.cudagraphs") under the compile's overrides ``patches``, as
    ``compile_fx`` will see it."""
    from torch._inductor import config

    with config.patch(patches):
        value = config
        for part in key.split("."):
            value = getattr(value, part)
        return value


def warm_compile_workers(patches: dict[str, Any] | None = None) -> None:
    """Start inductor's pool of Triton compile workers now, if it will use one.

    Inductor compiles Triton kernels in a pool of worker processes, but only
    once the pool reports ready: kernels compiled before that are compiled
    one after another in this process.  Starting the pool takes seconds (each
    worker imports torch), so torch.compile's inductor backend starts it as
    soon as the backend is called.  armature starts it when a compile begins,
    before the frame is traced, so the pool boots while armature traces.

    The pool compiles Triton kernels only (C++ kernels are built on a thread
    pool), so it is not started where no Triton kernel can come: Triton not
    installed, or no GPU and inductor's CPU backend is not Triton (under the
    compile's options ``patches``).  torch.compile starts it whenever Triton is
    installed; on a machine without a GPU its workers then only take cores
    from the C++ builds (2-core CPU, GPT-2: see README, regions).
    ``TORCH_WARM_POOL=0`` turns it off, as in torch.
    """
    global _workers_started
    if _workers_started:
        return
    if importlib.util.find_spec("triton") is None or os.environ.get("TORCH_WARM_POOL", "1") != "1":
        return
    if not _triton_kernels_possible(patches or {}):
        return
    from torch._inductor.async_compile import maybe_warm_pool

    maybe_warm_pool()
    _workers_started = True


def _triton_kernels_possible(patches: dict[str, Any]) -> bool:
    """Whether inductor may generate Triton kernels in this process: a GPU
    it drives with Triton is present, or the CPU backend is Triton."""
    return _accelerator_present() or setting("cpu_backend", patches) == "triton"


_workers_started = False   # (the pool lives as long as the process: started once)


def prepare(mode: str | None = None, options: dict[str, Any] | None = None) -> None:
    """What a compile starts before its frame is traced (the registry's
    ``prepare``): the Triton worker pool where it will be used, and, in a
    process without a GPU (where every graph inductor compiles is a CPU
    graph), the CPU ISA probes its first C++ kernel will wait for, so that
    they build while armature traces (backends/cpu_isa_probes.py; with a
    GPU they start once a graph with CPU tensors reaches the backend)."""
    patches = config_patches(mode, options)
    warm_compile_workers(patches)
    if not _accelerator_present():
        from .cpu_isa_probes import start_probes
        start_probes(patches)


def _accelerator_present() -> bool:
    for name in ("cuda", "xpu", "mtia"):
        device = getattr(torch, name, None)
        try:
            if device is not None and device.is_available():
                return True
        except Exception:  # noqa: BLE001 - unsure: leave the probes to the backend call
            return True
    return False


@register_backend("inductor", check_options=check_options, prepare=prepare)
def inductor(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    *,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """Compile ``gm`` with inductor.

    Static inputs (parameters, buffers, ``mark_static_address``) are told to
    AOTAutograd as torch.compile's frontend tells it; a graph compiled with
    CUDA graphs makes every top-level call advance the trees' generation
    (backends/cudagraphs.py).  Inductor's CPU ISA probes, which its first
    C++ kernel waits for, run side by side in the background while
    ``compile_fx`` lowers the graph (backends/cpu_isa_probes.py); its C++
    kernels are built a few to a compiler run (backends/cpp_kernel_batches.py);
    inductor's on-disk caches are keyed on the CPU's vector ISA as well
    (backends/inductor_cache_key.py).
    ``compile_fx`` takes ownership of ``gm`` and may rewrite it.  What it
    returns may use the boxed calling convention; the registry unboxes it.
    """
    patches = config_patches(mode, options)
    warm_compile_workers(patches)   # (a graph compiled without a traced frame: export, regions' retries; options)
    from .cpu_isa_probes import ahead_candidate, speculating, start_probes, wants_cpu_probes

    if wants_cpu_probes(example_inputs):
        start_probes(patches)   # (a cold process's C++ ISA probes, side by side, behind the lowering: backends/cpu_isa_probes.py)
    if ahead_candidate() is None:
        return _compile(gm, example_inputs, patches)
    # (the first CPU compile of a cold process: its kernels are generated and built while the ISA
    # probe runs, and checked against the probe before anything runs: backends/cpu_isa_probes.py)
    try:
        spare = _spare_copy(gm)
    except Exception as e:  # noqa: BLE001 - an optimisation only: this compile waits for the probe instead
        log_perf.debug("inductor compile not speculating on the CPU ISA: no spare copy of the graph (%s: %s)",
                       type(e).__name__, e)
        return _compile(gm, example_inputs, patches)
    compiled, error = None, None
    with speculating() as speculation:
        try:
            compiled = _compile(gm, example_inputs, patches, speculating=True)
        except Exception as e:  # noqa: BLE001 - re-raised below unless the ISA read ahead was the cause
            error = e
    if speculation.confirmed():
        if error is not None:
            raise error
        return compiled
    from .cpp_kernel_batches import forget_built
    forget_built()
    log_perf.info("inductor CPU ISA %s failed its probe after this compile read it ahead: compiling the graph "
                  "again for the ISA inductor picks", speculation.isa)
    return _compile(spare, example_inputs, patches)


def _backward_while_probing() -> Any:
    """AOTAutograd compiles the backward graph with the forward, instead of
    at the first backward call, if the ISA probe is still running when the
    forward is compiled: the compile that read the ISA ahead waits for the
    probe before it returns, so the backward's lowering and C++ build fill
    that wait instead of coming after it.  Decided at that moment (a probe
    already answered means no wait to fill, and the backward stays lazy:
    a model run under grad without a backward pays nothing for it)."""
    from torch._functorch import config as functorch_config
    if not hasattr(functorch_config, "force_non_lazy_backward_lowering"):
        return contextlib.nullcontext()
    return functorch_config.patch(force_non_lazy_backward_lowering=_WhileProbing())


class _WhileProbing:
    """True while the first ISA candidate's probe is undecided (AOTAutograd
    reads its ``force_non_lazy_backward_lowering`` once the forward is
    compiled)."""

    def __bool__(self) -> bool:
        from .cpu_isa_probes import ahead_candidate
        return ahead_candidate() is not None

    def __reduce__(self):   # (in AOTAutograd's cache key: a backward compiled with the forward)
        return bool, (True,)

    def __repr__(self) -> str:
        return "True-while-the-ISA-probe-runs"


def _spare_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A graph module ``compile_fx`` can rewrite without touching ``gm``'s
    graph (the graph is copied; parameters and submodules are shared)."""
    import copy
    spare = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph), class_name=type(gm).__name__)
    spare.meta = dict(gm.meta)
    return spare


def _compile(gm: torch.fx.GraphModule, example_inputs: list[Any], patches: dict[str, Any], *,
             speculating: bool = False) -> Callable[..., Any]:
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    from .cpp_kernel_batches import batched, deferred_waits, in_batches
    from .cudagraphs import compile_with_static_inputs, install_step, note_cpu_only, uses_cudagraphs
    from .cpu_isa_probes import unexpected_isa
    from .inductor_cache_key import keyed_inner_compile, keyed_on_cpu_isa

    # (the ISA in inductor's cache keys, where it is not the one a compile reading ahead of the
    # probe assumes: backends/inductor_cache_key.py)
    isa = None if speculating else unexpected_isa(patches, example_inputs)
    if uses_cudagraphs(patches) and not note_cpu_only(gm, example_inputs):
        install_step()   # (first: the skip reasons inductor logs while compiling reach the perf log)
    # (C++ kernels built a few to a unit, the lazily compiled backward's too: backends/cpp_kernel_batches.py)
    batching = armature_config.cpp_kernel_batches
    inner = in_batches(compile_fx_inner) if batching else compile_fx_inner
    # (inductor's caches keyed on the CPU's vector ISA as well: a cache filled on another machine
    # or under another ATEN_CPU_CAPABILITY must miss, not serve kernels of another vector width)
    inner = keyed_inner_compile(inner, isa)
    capture, skip_aot_cache = None, contextlib.nullcontext()
    if armature_config.cache:   # (the warm start keeps what inductor made: backends/inductor_warm.py)
        capture, inner, skip_aot_cache = _warm_start_capture(gm, example_inputs, inner)
    # (read ahead of the ISA probe: nothing compiled here runs before the probe answers, so the
    # forward's and the backward's kernels build together, at the end, beside the probe)
    with batched() if batching else contextlib.nullcontext(), keyed_on_cpu_isa(isa), skip_aot_cache, \
            _backward_while_probing() if speculating else contextlib.nullcontext(), \
            deferred_waits() if speculating and batching else contextlib.nullcontext():
        compiled = compile_with_static_inputs(
            gm, lambda gm: compile_fx(gm, example_inputs, inner_compile=inner, config_patches=patches))
    if capture is not None:
        capture.remember(compiled)
    return compiled


def _warm_start_capture(gm, example_inputs, inner):
    """(capture, inner compile, context) that keep what inductor makes for
    ``gm`` (backends/inductor_warm.py); on torch before 2.13, or on an error
    of armature's own (strict in tests), nothing is kept and the compile is
    unchanged: only the warm start may lose."""
    from . import inductor_warm
    if not inductor_warm.SUPPORTED:
        return None, inner, contextlib.nullcontext()
    try:
        capture = inductor_warm.Capture(gm)
        return capture, capture.wrap(inner), inductor_warm.inner_compile_seen(gm, example_inputs)
    except Exception as e:  # noqa: BLE001
        from ..diagnostics.errors import strict_internal_errors
        if strict_internal_errors():
            raise
        from ..diagnostics import logs
        logs.artifact("cache").debug("inductor's module will not be kept for the warm start: internal error "
                                     "%s: %s", type(e).__name__, e)
        return None, inner, contextlib.nullcontext()
