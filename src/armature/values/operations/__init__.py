"""Python's own operations on values: binary/unary/compare operators
(``operators``), the builtin functions and their rule table (``builtins``),
``id()`` and ``is`` (``identity``), string joins and ``%``-formatting
(``strings``), and ``str()``/``repr()``/``format()`` of objects
(``formatting``; of exceptions: ``exception_text``), and ``eval`` of a constant string (``eval_builtin``).

These sit above the value kinds they operate on.  May import at module
level: the core (``values.base``, ``values.constant``, ``values.builder``,
``values.kinds``) and ``containers``, ``functions``, ``tensors``, ``numpy``
and ``stdlib`` (``builtins`` imports ``stdlib`` so that every stdlib C
function's rule is in ``builtins.RULES`` before anything is wrapped).  Of the
packages below, only ``stdlib`` imports this one at module level (its
modules add those rules); the others reach it inside functions.  This
``__init__`` imports nothing, so importing the package costs nothing.
"""
