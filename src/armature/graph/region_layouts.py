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

The activations a block's convolutions read are converted the same way,
and the block returns its 4-d results channels-last (a copy inside the
subgraph, which inductor fuses into the kernel that makes the result):
between two merged blocks the activation stays channels-last, as it does
inlined, where inductor picks channels-last for every convolution's input
and output.  Without it each block converted its input into channels-last
and its result back (a copy kernel and a strided write per block: the
simple ResNet, 24 blocks of 64 channels, ran 1.03-1.11x of inlined).  Code
after a block that reads its result (the user's return value, a mean, a
block that is not merged) reads a copy in the strides the result had when
traced, made in the outer graph right after the call
(:func:`restore_layout`), so every value the outer graph computes keeps its
traced strides and the user sees eager's.  Where only the next merged
block reads the result, the copy and that block's conversion cancel
(:func:`settle_layouts`); where other code reads it too, both copies stay:
that code may write the copy in place before the next block reads it.

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

__all__ = ["ConvolutionLayouts", "carried_val", "channels_last", "convert_inputs", "convolution_layouts",
           "is_convolution", "output_layouts", "restore_layout", "settle_layouts"]

#: the names of the convolution ops, whose layout inductor chooses per graph
CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d", "convolution", "_convolution", "conv_tbc"})
#: a merged block's convolution weights each hold at most this many bytes
#: (see the module's docstring: larger ones measured slower merged)
MAX_WEIGHT_BYTES = 1 << 20
#: devices on which inductor always picks channels-last convolutions (with oneDNN)
_ONEDNN_DEVICES = ("cpu", "xpu")
#: meta keys marking the outer graph's layout copies (convert_inputs, restore_layout)
_CONVERTED, _RESTORES = "armature_to_channels_last", "armature_restores_layout"


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

    def inputs_to_convert(self, nodes: list, inputs: list, outputs: list) -> "list[int] | None":
        """For a block made of ``nodes`` with operands ``inputs`` and
        ``outputs`` (nodes of its own that later code reads): the
        positions in ``inputs`` to give the block in channels-last layout
        (its convolution weights, and the activations its convolutions
        read), or None when the block's convolutions cannot be handled that
        way (it then merges only where the layout is not the backend's to
        choose).  ``[]``: no convolution, or the backend leaves layouts
        alone: nothing to do."""
        convs = [n for n in nodes if is_convolution(n)]
        if not convs or not self.per_graph:
            return []
        positions: set = set()
        members = set(nodes)
        for n in convs:
            weight = _conv2d_weight(n)
            if weight is None or weight in members:
                return None
            x = n.args[0] if n.args else n.kwargs.get("input")
            for i in (x, weight):
                v = i.meta.get("val") if isinstance(i, torch.fx.Node) else None
                if not isinstance(v, torch.Tensor) or not (self.forced or _onednn_device(v.device)):
                    return None   # (the layout is decided per graph, from the graph: not ours to predict)
            if any(u in members and not _only_as_weight(u, weight) for u in weight.users):
                return None
            w = weight.meta["val"]
            if not isinstance(w.numel(), int) or w.numel() * w.element_size() > MAX_WEIGHT_BYTES:
                return None
            positions.add(inputs.index(weight))
            if x not in members and x is not weight and _carried(x.meta["val"]):
                positions.add(inputs.index(x))
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


def convert_inputs(gm: torch.fx.GraphModule, after: torch.fx.Node, inputs: list, positions: list) -> tuple:
    """``(inputs, last)``: ``inputs`` with the operands at ``positions``
    replaced by channels-last copies made in ``gm`` right after ``after``
    (just before the block's call), and the last node inserted (``after``
    when none is).  Each copy is marked, for :func:`settle_layouts`."""
    out = list(inputs)
    g = gm.graph
    for k in positions:
        w = inputs[k]
        with g.inserting_after(after):
            after = g.call_function(torch.Tensor.contiguous, (w,), {"memory_format": torch.channels_last})
        after.meta["val"] = after.meta["example_value"] = channels_last(w.meta["val"])
        after.meta[_CONVERTED] = True
        out[k] = after
    return out, after


def output_layouts(g: torch.fx.Graph, results: list, vals: list) -> list:
    """The block's results, each copied (``torch.clone(memory_format=...)``)
    into the layout the block's callers receive (:func:`carried_val`): a
    4-d floating result channels-last (what the block's convolutions make,
    and what the next block's convolutions want: nothing is converted
    between two merged blocks), any other into the strides it had when
    traced.  Inductor fuses the copy into the kernel that makes the value
    when the layouts already agree; without it the layout of a result
    would depend on oneDNN's choices (a convolution given a channels-last
    weight returns a channels-last result) rather than be known to the
    outer graph."""
    out = []
    for r, v in zip(results, vals):
        v = carried_val(v)
        c = g.call_function(torch.clone, (r,), {"memory_format": _dense_format(v)})
        c.meta["val"] = c.meta["example_value"] = v
        out.append(c)
    return out


def carried_val(v: torch.Tensor) -> torch.Tensor:
    """The fake value of a merged convolution block's result as the outer
    graph receives it: ``v`` channels-last when it is a 4-d floating
    tensor, ``v`` itself otherwise."""
    return channels_last(v) if _carried(v) else v


def restore_layout(gm: torch.fx.GraphModule, item: torch.fx.Node) -> torch.fx.Node:
    """For the block's result ``item`` (its meta: the value as traced):
    when the block returns it channels-last (:func:`carried_val`), ``item``
    gets that value's meta and a copy in the traced strides is made right
    after it, for the code after the block (the user and the rest of the
    graph see eager's strides); :func:`settle_layouts` removes the copy
    where only the next block's channels-last conversion reads it.  The
    node later code should read is returned."""
    traced = {key: item.meta[key] for key in ("val", "example_value") if key in item.meta}
    if not _carried(traced["val"]):
        return item
    item.meta["val"] = item.meta["example_value"] = channels_last(traced["val"])
    with gm.graph.inserting_after(item):
        r = gm.graph.call_function(torch.clone, (item,), {"memory_format": _dense_format(traced["val"])})
    r.meta.update(traced)
    r.meta[_RESTORES] = True
    return r


def settle_layouts(gm: torch.fx.GraphModule) -> None:
    """Between two merged blocks, the first's channels-last result goes to
    the second's call as it is: a conversion to channels-last of a copy
    back to the traced strides (:func:`restore_layout`) is the result
    itself, as long as nothing else reads the copy.  (Code that does may
    write it in place, through a view or with ``out=``; the next block
    must then see the written copy: both copies stay.)"""
    for r in list(gm.graph.nodes):
        if not r.meta.get(_RESTORES) or not all(u.meta.get(_CONVERTED) for u in r.users):
            continue
        for n in list(r.users):
            n.replace_all_uses_with(r.args[0])
            gm.graph.erase_node(n)
        gm.graph.erase_node(r)


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


def _carried(v) -> bool:
    """``v`` (a traced value) crosses a merged convolution block's boundary
    channels-last: a 4-d floating tensor whose traced strides a memory
    format reproduces."""
    return (isinstance(v, torch.Tensor) and v.dim() == 4 and v.is_floating_point()
            and _dense_format(v) is not None)


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
