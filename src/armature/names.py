"""The names armature's generated code gives its own variables, kept apart
from every name the user's code uses.

Generated code shares a namespace with user code in three places, and each
has its own way of never colliding (a user local, argument, cell or global
may be named like anything below: ``___f``, ``___stack0``, ``___tmp1``):

- the *transformed function* of a cache entry has the user's parameters
  and, beside them, the hidden called-function argument (:data:`FN_ARG`),
  the graph's output tuple (:data:`GRAPH_OUT`), temporaries
  (:func:`temp_name`) and modules built by its setup (:data:`NEW_MODULE`).
  These exist only in bytecode, never in Python source, so they are
  spelled as no Python source can spell a name: with a leading ``.``, as
  CPython spells a comprehension's hidden iterator argument ``.0``.

- a *resume function*'s saved stack slots and cells (:func:`stack_arg`,
  :func:`cell_arg`) are parameters beside the original frame's locals, of a
  function that is compiled in turn: its guards (Python source) name them
  and ``explain`` prints them, so they are identifiers, spelled with the
  frame's *generated prefix* (:func:`generated_prefix`): ``___``, or where
  some local, argument or cell of the original code starts with ``___``,
  the shortest longer run of underscores that none of its names starts
  with.

- a *guard function* (Python source, guards/build.py) has the guarded
  function's parameters and, beside them, its constants, hoisted reads,
  shape-guard bindings and the hidden function argument: also spelled with
  the prefix.  Its parameters are the original code's locals (none starts
  with the prefix) or resume-function arguments (prefix + ``stack``/``cell_``,
  suffixes no guard name uses), so nothing collides.

Globals live in namespaces of their own (``LOAD_GLOBAL``; in guard source a
global reads as ``<globals dict>['name']``) and never meet these names.

Beside the names: which user code a resume function continues
(:data:`ORIGIN`, :func:`origin_of`), and the metadata key marking graph
inputs with a static address (:data:`STATIC_INPUTS_META`).  This module sits
at the bottom of the package (it imports nothing of armature): guards, the
runtime, values, diagnostics and the code generator all read these, and
the code generator writes ``ORIGIN``.
"""
from __future__ import annotations

import functools
import sys
import types

#: the hidden keyword argument carrying the called function object (its
#: closure cells and defaults are read from it): the transformed function
#: and the guard function take it, callers pass ``**{FN_ARG: fn}``
FN_ARG = sys.intern(".f")   # (interned, like a code object's names: keyword matching is by identity first)
#: the transformed function's local holding the compiled graph's outputs
GRAPH_OUT = ".graph_out"
#: locals of the transformed function holding modules its setup builds
#: (values/nn/fresh_modules.py), followed by their number
NEW_MODULE = ".new_module_"
#: ``gm.meta`` key: the placeholder positions of static inputs (see
#: ``OutputGraph.static_input_indices``; backends/cudagraphs.py reads it)
STATIC_INPUTS_META = "armature_static_inputs"


def temp_name(n: int) -> str:
    """The transformed function's n-th temporary local."""
    return f".tmp{n}"


@functools.lru_cache(maxsize=2048)
def _prefix_of(code: types.CodeType) -> str:
    names = code.co_varnames + code.co_cellvars + code.co_freevars
    prefix = "___"
    while any(n.startswith(prefix) for n in names):
        prefix += "_"
    return prefix


def generated_prefix(code: types.CodeType) -> str:
    """The prefix of the generated identifiers that sit beside ``code``'s
    names: ``___`` unless a local, argument or cell of the code starts with
    it.  A resume function shares the prefix of the code it resumes (its
    own arguments are the prefixed ones)."""
    return _prefix_of(origin_of(code)[0])


def stack_arg(prefix: str, slot: int) -> str:
    """The resume-function argument holding saved stack slot ``slot``."""
    return f"{prefix}stack{slot}"


def cell_arg(prefix: str, name: str) -> str:
    """The resume-function argument holding the cell of closure variable ``name``."""
    return f"{prefix}cell_{name}"


def is_resume_arg(prefix: str, name: str) -> bool:
    """Whether ``name`` is a saved stack slot or cell argument (not a user local)."""
    return name.startswith((f"{prefix}stack", f"{prefix}cell_"))


def guard_fn_name(prefix: str) -> str:
    """How guard source spells the hidden function argument (renamed to
    :data:`FN_ARG` once compiled: guards/build.py)."""
    return f"{prefix}f"


# --- resume functions: the code they came from, the names of the user's locals ---------

#: resume code -> (original code, {resume offset: original offset})
ORIGIN: dict[types.CodeType, tuple[types.CodeType, dict[int, int]]] = {}


def origin_of(code: types.CodeType):
    """(original code, offset translation) of a possibly-resume code object."""
    entry = ORIGIN.get(code)
    if entry is None:
        return code, None
    return entry


def local_key(code: types.CodeType, name: str) -> str:
    """The name a resume function of ``code`` gives the user's local ``name``:
    itself, or for a name that is not an identifier (pytest's
    ``@py_assert1``) ``<prefix>local<index in co_varnames>``."""
    if name.isidentifier():
        return name
    base = origin_of(code)[0]
    return f"{generated_prefix(base)}local{base.co_varnames.index(name)}"


def user_local_name(code: types.CodeType, key: str) -> str:
    """The user's name of a resume function's local ``key`` (of ``code``)."""
    base = origin_of(code)[0]
    prefix = f"{generated_prefix(base)}local"
    if key.startswith(prefix) and key[len(prefix):].isdigit():
        return base.co_varnames[int(key[len(prefix):])]
    return key


def handed_over_name(code: types.CodeType) -> str:
    """The local (of the traced frame, then a resume function's argument)
    holding 3.11's locals() dict across a graph break (values/functions/frame_locals.py)."""
    return f"{generated_prefix(code)}f_locals"
