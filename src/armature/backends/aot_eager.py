"""The ``aot_eager`` backend: AOTAutograd tracing with a no-op compiler.

AOTAutograd re-traces the graph down to ATen ops, functionalizes it and splits
it into forward and backward graphs, which it then hands to a "compiler"; here
that compiler returns each graph unchanged.  It exercises everything inductor
relies on (fake tensors, the shape env, autograd) without inductor's codegen,
which makes it the backend to bisect with when inductor gives wrong results.

torch's internals are imported inside the function: functorch is slow to
import and most programs never ask for this backend.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import register_backend


def _boxed_nop(fx_g: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Compiler for AOTAutograd's forward and backward graphs: run them as they are.

    AOTAutograd calls its compiled graphs with one list argument (the "boxed"
    convention, which lets it free inputs early); ``make_boxed_func`` adapts the
    graph's plain ``forward(*args)`` to that.
    """
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(fx_g.forward)


@register_backend("aot_eager")
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Compile ``gm`` through AOTAutograd; the result is called as ``compiled(*args)``."""
    from torch._functorch.aot_autograd import aot_module_simplified

    from .cudagraphs import compile_with_static_inputs

    # (static inputs told as under torch.compile: fw_metadata.static_input_indices)
    return compile_with_static_inputs(gm, lambda gm: aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=_boxed_nop,
        bw_compiler=_boxed_nop,
        inference_compiler=_boxed_nop,
    ))
