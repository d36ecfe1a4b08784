"""Symbolic values: what sits on the tracer's stack.

The core is this folder's own modules: ``base`` (``Value``, laziness),
``constant`` (``ConstantValue``), ``builder`` (the one place real objects
become Values) and ``kinds`` (value kinds by name, for code that builds a
value of a kind defined higher up).  Everything else is a sub-package by
what it models: ``objects``, ``containers``, ``functions``, ``nn``,
``tensors``, ``operations``, ``directives``, ``distributed``, ``stdlib``,
``numpy`` (docs/ARCHITECTURE.md, "The value layer", draws who uses whom).
"""
from .base import NULL, Value  # noqa: F401
