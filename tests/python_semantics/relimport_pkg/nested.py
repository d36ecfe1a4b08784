"""Relative imports in nested functions, of tensors and numbers, from the
package, its parent and beyond the top-level package
(tests/python_semantics/test_relative_imports.py)."""


def make():
    def from_module_import_tensor(x):
        from .tensors import WEIGHT
        return x * 2 * WEIGHT

    def import_module_then_attribute(x):
        from . import tensors
        return x * 2 * tensors.WEIGHT + tensors.OFFSET

    def import_as(x):
        from . import tensors as t
        from .tensors import BIAS as b, OFFSET as off
        return x * t.WEIGHT + b * off

    def from_parent_package(x):
        from .. import relimport_pkg as pkg
        from ..relimport_pkg import helpers
        return pkg.helpers.double(x) + helpers.SCALE

    def beyond_top_level_package(x):
        from .... import nothing   # noqa: F401  (eager: ImportError)
        return x + 1

    return (from_module_import_tensor, import_module_then_attribute, import_as, from_parent_package,
            beyond_top_level_package)
