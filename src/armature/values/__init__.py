"""Symbolic values: what sits on the tracer's stack."""
from .base import NULL, Value  # noqa: F401
