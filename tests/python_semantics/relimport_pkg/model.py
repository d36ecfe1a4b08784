"""Functions with relative imports in their bodies."""


def relative_imports(x):
    from . import helpers
    from .helpers import SCALE, double
    return double(x) * SCALE + helpers.double(x)


def import_submodule_not_yet_imported(x):
    from . import lazy_sub
    return x + lazy_sub.OFFSET
