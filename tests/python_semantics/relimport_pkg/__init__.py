"""A package for tests/python_semantics/test_traceable_calls.py: relative
imports inside compiled functions (``from . import x``, ``from .x import y``)
and a submodule (``lazy_sub``) that no one imports before the compiled
function does."""


def in_package_init(x):
    """A function of the package's ``__init__``: ``.`` is the package itself."""
    from . import helpers, tensors
    return helpers.double(x) + tensors.OFFSET
