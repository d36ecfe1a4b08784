"""Convolution layouts at the boundary of a merged block.

Inductor's layout optimization (on by default) runs a graph's convolutions
in channels-last layouts.  On CPU with oneDNN (mkldnn) it always does so,
whatever the shapes; elsewhere (CUDA) it decides per graph from the graph's
convolutions (their channels, FLOPs, dynamic shapes).  Inside the graph
that costs a copy of every convolution weight into channels-last at every
call: the weights are graph inputs, whose layout inductor cannot choose.

Inlined, those copies are cheap: inductor's memory planner gives block 7's
copy the buffer block 6's copy has just released.  In a merged block (an
``invoke_subgraph`` subgraph, regions.py) each call allocates its own
buffers and frees them on return, so a model with large weights allocates
and frees megabytes per block per call, which glibc serves from fresh
mmap'd or trimmed pages: page faults at every call.  torchvision's ResNet
(12 blocks, CPU, one thread) ran 1.45x slower merged than inlined; with the
allocator told not to give memory back (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``), 1.01x: the allocations were the whole cost.

So where inductor is known to choose channels-last for a block's
convolutions (CPU/XPU with oneDNN, or ``force_layout_optimization``), the
merged block's convolution weights are converted in the *outer* graph, just
before each call (``weight.contiguous(memory_format=torch.channels_last)``),
and the subgraph receives them already channels-last: the copy inductor
would make inside is made outside, where the planner reuses buffers across
calls as it does inlined, and inside the subgraph the weight has the layout
the convolution wants.  Values are unchanged (a layout is not a value) and
so is the convolution inductor runs (channels-last weight, as inlined).

Only plain 2-d convolutions (``conv2d``) whose weight is an operand of the
block (a parameter, not computed inside it) and used by nothing else in the
block are converted.  A block with another convolution (1-d, 3-d,
transposed), with a weight computed inside it, or on a device where
inductor decides the layout per graph stays inlined under
``regions="auto"``: merging it is measured slower (README, regions).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

__all__ = ["ConvolutionLayouts", "channels_last", "convolution_layouts", "hoist_weights", "is_convolution",
           "keep_output_layouts"]

#: the names of the convolution ops, whose layout inductor chooses per graph
CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d", "convolution", "_convolution", "conv_tbc"})
#: a merged block's convolution weights each hold at most this many bytes
#: (see the module's docstring: larger ones measured slower merged)
MAX_WEIGHT_BYTES = 1 << 20
#: devices on which inductor always picks channels-last convolutions (with oneDNN)
_ONEDNN_DEVICES = ("cpu", "xpu")


def is_convolution(n: torch.fx.Node) -> bool:
    t = n.target
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    return name in CONVOLUTIONS


class ConvolutionLayouts:
    """How the backend lays out convolutions, as far as merging blocks goes.

    ``per_graph``: inductor with its layout optimization on (the backend
    gives each graph's convolutions the layouts it prefers).  ``forced``:
    ``force_layout_optimization`` (channels-last on every device)."""

    def __init__(self, per_graph: bool, forced: bool = False):
        self.per_graph = per_graph
        self.forced = forced

    def weights_to_hoist(self, nodes: list, inputs: list, outputs: list) -> "list[int] | None":
        """For a block made of ``nodes`` with operands ``inputs`` and
        ``outputs`` (nodes of its own that later code reads): the
        positions in ``inputs`` of the convolution weights to give the block
        channels-last, or None when the block's convolutions cannot be
        handled that way (it then merges only where the layout is not the
        backend's to choose).  ``[]``: no convolution, or the backend leaves
        layouts alone: nothing to do."""
        convs = [n for n in nodes if is_convolution(n)]
        if not convs or not self.per_graph:
            return []
        positions: set = set()
        members = set(nodes)
        for n in convs:
            weight = _conv2d_weight(n)
            if weight is None or weight in members:
                return None
            for i in (n.args[0] if n.args else n.kwargs.get("input"), weight):
                v = i.meta.get("val") if isinstance(i, torch.fx.Node) else None
                if not isinstance(v, torch.Tensor) or not (self.forced or _onednn_device(v.device)):
                    return None   # (the layout is decided per graph, from the graph: not ours to predict)
            if any(u in members and not _only_as_weight(u, weight) for u in weight.users):
                return None
            w = weight.meta["val"]
            if not isinstance(w.numel(), int) or w.numel() * w.element_size() > MAX_WEIGHT_BYTES:
                return None
            positions.add(inputs.index(weight))
        if any(_dense_format(o.meta["val"]) is None for o in outputs):
            return None   # (an output of strides that no copy in a memory format reproduces)
        return sorted(positions)


def convolution_layouts(backend) -> ConvolutionLayouts:
    """What ``backend`` does with convolution layouts: inductor's
    ``layout_optimization`` and ``force_layout_optimization`` under the
    compile's ``mode``/``options``; any other backend leaves them alone."""
    from ..backends import _Backend
    if not isinstance(backend, _Backend) or backend.name != "inductor":
        return ConvolutionLayouts(False)
    from ..backends.inductor import config_patches, setting
    patches = config_patches(backend.kwargs.get("mode"), backend.kwargs.get("options"))
    if not setting("layout_optimization", patches):
        return ConvolutionLayouts(False)
    return ConvolutionLayouts(True, bool(setting("force_layout_optimization", patches)))


def hoist_weights(gm: torch.fx.GraphModule, after: torch.fx.Node, inputs: list, positions: list) -> tuple:
    """``(inputs, last)``: ``inputs`` with the operands at ``positions``
    replaced by channels-last copies made in ``gm`` right after ``after``
    (just before the block's call), and the last node inserted (``after``
    when none is)."""
    out = list(inputs)
    g = gm.graph
    for k in positions:
        w = inputs[k]
        with g.inserting_after(after):
            after = g.call_function(torch.Tensor.contiguous, (w,), {"memory_format": torch.channels_last})
        after.meta["val"] = after.meta["example_value"] = channels_last(w.meta["val"])
        out[k] = after
    return out, after


def keep_output_layouts(g: torch.fx.Graph, results: list, vals: list) -> list:
    """The block's results, each copied (``torch.clone(memory_format=...)``)
    into the strides it had when traced: a convolution given a
    channels-last weight returns a channels-last result (oneDNN follows
    the weight's layout), which would otherwise change the strides of the
    block's outputs, and with them those of what later code computes and
    the user may see.  Inductor fuses the copy into the kernel that makes
    the value when the layouts already agree."""
    out = []
    for r, v in zip(results, vals):
        c = g.call_function(torch.clone, (r,), {"memory_format": _dense_format(v)})
        c.meta["val"] = c.meta["example_value"] = v
        out.append(c)
    return out


def _dense_format(v: torch.Tensor) -> "torch.memory_format | None":
    """The memory format whose fresh tensors have exactly ``v``'s strides
    (``clone(memory_format=...)`` makes those), or None."""
    from torch._prims_common import make_channels_last_strides_for, make_contiguous_strides_for
    strides = tuple(str(s) for s in v.stride())
    if strides == tuple(str(s) for s in make_contiguous_strides_for(v.shape)):
        return torch.contiguous_format
    if v.dim() == 4 and strides == tuple(str(s) for s in make_channels_last_strides_for(v.shape)):
        return torch.channels_last
    return None


def channels_last(v: torch.Tensor) -> torch.Tensor:
    """The fake tensor of ``v``'s channels-last copy."""
    return v.contiguous(memory_format=torch.channels_last)


def _conv2d_weight(n: torch.fx.Node) -> "torch.fx.Node | None":
    """The weight operand of a 2-d convolution call (``F.conv2d``,
    ``torch.conv2d``, ``Tensor``-free forms), if it is a 4-d floating tensor
    node; None for any other convolution."""
    t = n.target
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    if name != "conv2d" or n.op != "call_function":
        return None
    w = n.args[1] if len(n.args) > 1 else n.kwargs.get("weight")
    v = w.meta.get("val") if isinstance(w, torch.fx.Node) else None
    if not isinstance(v, torch.Tensor) or v.dim() != 4 or not v.is_floating_point():
        return None
    return w


def _only_as_weight(use: torch.fx.Node, weight: torch.fx.Node) -> bool:
    """``use`` reads ``weight`` only as its 2-d convolution weight."""
    if _conv2d_weight(use) is not weight:
        return False
    rest: Any = (list(use.args[:1]) + list(use.args[2:]), {k: v for k, v in use.kwargs.items() if k != "weight"})
    found = []
    torch.fx.map_arg(rest, lambda a: found.append(a) if a is weight else None)
    return not found


def _onednn_device(device: torch.device) -> bool:
    return (device.type in _ONEDNN_DEVICES and torch.backends.mkldnn.enabled
            and torch.backends.mkldnn.is_available())
