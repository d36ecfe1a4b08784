"""Bytecode emission with the `bytecode` library."""
