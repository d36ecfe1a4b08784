"""The capture stage armature.export gives torch.export: validate
``dynamic_shapes``, trace, check the constraints, build the GraphModule."""
from __future__ import annotations

import torch

from . import constraints
from .capture import capture, signature_function
from .graph_module import build_graph_module, orig_arg_names


def capture_graph_module(mod: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes) -> torch.fx.GraphModule:
    from ..backends.export_program import check_dynamic_shapes
    check_dynamic_shapes(mod, args, kwargs, dynamic_shapes)
    cap = capture(mod, args, kwargs, dynamic_shapes)
    constraints.check(cap)
    # the program's fake mode is the trace's: give it the settings of an
    # export capture's (as Dynamo's is under export), which the lowering
    # and later compilers of the program (AOTInductor) rely on
    fake_mode = cap.ctx.graph.fake_mode
    fake_mode.allow_non_fake_inputs = True
    fake_mode.export = True
    names = orig_arg_names(signature_function(mod), args, kwargs)
    return build_graph_module(cap, args, kwargs, names)
