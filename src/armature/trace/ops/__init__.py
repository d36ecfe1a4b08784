"""Opcode handlers, one module per family.  Importing this package registers
them all in ``pyversion.HANDLERS``."""
from . import build, call, class_body, compare, control, load_store, match, misc, py314, with_  # noqa: F401
