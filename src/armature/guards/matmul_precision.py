"""Guards on the TF32 switches, for graphs whose result depends on them.

``torch.backends.cuda.matmul.allow_tf32`` (also set by
``torch.set_float32_matmul_precision``) and ``torch.backends.cudnn.allow_tf32``
decide how float32 matrix products and convolutions are computed.  Eager
reads them on every call; a backend may read them once, while compiling
(inductor's Triton matmul templates, decompositions), so a graph compiled
under one setting could keep computing with it after the user changed it.
torch.compile guards the cuBLAS switch on every frame (its global-state
guard); armature guards both, but only on graphs that contain a matrix
product or a convolution: elsewhere the switches change nothing and the
guard would only cost every call a C call.
"""
from __future__ import annotations

import torch

from .guard import Guard, Kind

#: substrings of op names whose results depend on the TF32 switches
_MATMUL = ("mm", "matmul", "linear", "einsum", "tensordot", "bilinear", "scaled_dot_product", "baddbmm",
           "addbmm", "addmv", "mv", "inner", "outer", "dot", "chain_matmul", "multi_dot", "lstm", "gru", "rnn",
           "multi_head_attention")
_CONV = ("conv",)


def _names(graph) -> set[str]:
    names = set()
    for node in graph.op_nodes:
        t = node.target
        names.add((t if isinstance(t, str) else getattr(t, "__name__", str(t))).lower())
    return names


def _mentions(names: set[str], parts: tuple[str, ...]) -> bool:
    return any(p in n for n in names for p in parts)


def precision_guards(graph) -> list[Guard]:
    """The guards a graph's ops call for (none for a graph without matmuls
    or convolutions)."""
    names = _names(graph)
    out = []
    if _mentions(names, _MATMUL):
        v = torch._C._get_cublas_allow_tf32()
        out.append(Guard(Kind.GLOBAL_STATE, None, text=f"___cublas_tf32() is {v}",
                         consts={"___cublas_tf32": torch._C._get_cublas_allow_tf32},
                         label=f"torch.backends.cuda.matmul.allow_tf32 is {v}"))
    if _mentions(names, _CONV):
        v = torch._C._get_cudnn_allow_tf32()
        out.append(Guard(Kind.GLOBAL_STATE, None, text=f"___cudnn_tf32() is {v}",
                         consts={"___cudnn_tf32": torch._C._get_cudnn_allow_tf32},
                         label=f"torch.backends.cudnn.allow_tf32 is {v}"))
    return out
