"""armature's version, in a module of its own so that any layer may read it
(the HTML report prints it) without importing the package root, which
imports every layer."""
__version__ = "0.1.0"
