"""Python's own operations on values: binary/unary/compare operators
(``operators``), the builtin functions and their rule table (``builtins``),
``id()`` and ``is`` (``identity``), string joins and ``%``-formatting
(``strings``), and ``str()``/``repr()``/``format()`` of objects
(``formatting``).

These sit above the value kinds they operate on: at module level they may
import the core and any of ``containers``, ``tensors``, ``numpy``,
``functions`` and ``stdlib`` (``builtins`` registers the rules of stdlib's C
functions by importing it).  Nothing below may import this package at
module level.  Nothing is imported here: importing the package costs
nothing.
"""
