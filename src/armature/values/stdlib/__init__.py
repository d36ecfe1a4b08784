"""Models of standard-library objects, one module per library module:
functools, operator, itertools, math, os (fspath, os.path), collections (OrderedDict, defaultdict,
deque), namedtuple, enum, dataclasses, typing; lazy_builtins holds the lazy
zip/enumerate/map/filter; deferred_output the output calls (logging,
warnings) of a cached function whose call is replayed.

``common.wrap_special`` is consulted first by the builder: it returns a
Value for objects these modules model, or None to let the builder continue.
Builtin (C) functions of these modules get rules in ``builtins.RULES``,
registered when the modules are imported; importing this package imports
them all (builtins.py does, before anything is wrapped).

May import at module level: the core (``values.base``, ``values.constant``,
``values.builder``, ``values.kinds``), ``containers``, ``objects`` and
``operations.builtins`` (to register rules; ``operations.builtins`` imports
this package back, the one circle of the layer at module level besides
``objects``/``functions``).  Anything else is reached inside a function, a
value kind through ``values.kinds``.

Everything here follows CPython 3.11's C implementations (Modules/
_functoolsmodule.c, itertoolsmodule.c, _collectionsmodule.c, _operator.c):
the same evaluation order, laziness and error conditions.  Where an error is
certain, the same exception is raised as a user exception; where the model
is unsure, Unsupported makes the frame run as plain Python.
"""
# Order matters only for wrap_special's fallbacks: enum before namedtuple,
# as an enum class is never treated as a namedtuple class.
from . import common  # noqa: F401
from . import functools  # noqa: F401
from . import operator  # noqa: F401
from . import itertools  # noqa: F401
from . import lazy_builtins  # noqa: F401
from . import math  # noqa: F401
from . import collections  # noqa: F401
from . import enum  # noqa: F401
from . import namedtuple  # noqa: F401
from . import dataclasses  # noqa: F401
from . import typing  # noqa: F401
from . import copy  # noqa: F401
from . import abc  # noqa: F401
from . import os  # noqa: F401
from . import deferred_output  # noqa: F401
from .common import wrap_special  # noqa: F401
