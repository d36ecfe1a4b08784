"""What runs on every call, and what generated code calls: cache entries
and guard dispatch, stances, markers and marks, the compiled wrappers of
callees, side-effect replay, frame views, DDP/FSDP wrappers.

It sits below the value layer (values and generated code call it) and above
the graph: it may import graph, backends, diagnostics, guards and the
bottom modules, never values, trace, codegen, the driver or api (it reaches
those through ``armature.upcalls``: docs/architecture/layers.md).
"""
