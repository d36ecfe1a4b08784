"""The ``inductor`` backend: torch's own optimizing compiler (C++/OpenMP on CPU, Triton on GPU).

``torch._inductor`` takes seconds to import, so nothing here touches it until
a graph is compiled (or until options need checking).  ``mode`` maps to
inductor config exactly as in ``torch.compile`` (via ``list_mode_options``);
``options`` are inductor config overrides, checked at lookup time so a typo
fails where it was written rather than at the first compile.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import register_backend
from .inductor_warmup import prepare_inductor, warm_compile_workers


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


@register_backend("inductor", check_options=check_options, prepare=prepare_inductor)
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
    (backends/cudagraphs.py).  ``compile_fx`` takes ownership of ``gm`` and
    may rewrite it.  What it returns may use the boxed calling convention;
    the registry unboxes it.
    """
    warm_compile_workers()   # (a graph compiled without a traced frame: export, regions' retries)
    from torch._inductor.compile_fx import compile_fx

    from .cudagraphs import compile_with_static_inputs, install_step, note_cpu_only, uses_cudagraphs

    patches = config_patches(mode, options)
    if uses_cudagraphs(patches) and not note_cpu_only(gm, example_inputs):
        install_step()   # (first: the skip reasons inductor logs while compiling reach the perf log)
    return compile_with_static_inputs(
        gm, lambda gm: compile_fx(gm, example_inputs, config_patches=patches))
