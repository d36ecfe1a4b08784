"""The compile driver: what a cache miss runs.  It traces a frame
(``trace/``), plans its breaks, has the graph compiled (``backends/``),
emits the transformed code (``codegen/``) and builds the cache entry the
per-call runtime (``runtime/``) dispatches to; it also loads and stores
entries across processes (the warm start), compiles specializations lazily,
runs frames that break in loops natively, and records entries for
``explain()``.

It sits above the code generator and below ``api``: it may import every
package but ``api`` and ``exporter``, and nothing below it imports it (the
runtime reaches the compile entry point through ``armature.upcalls``).
"""
