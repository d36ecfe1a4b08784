"""Relative imports inside compiled functions (issue #36, item 3).

``from . import mod`` / ``from .mod import name`` in a function of a
package: the module object came out of the import without a source, so a
tensor read from it (``from .utils import WEIGHT``) got a guard on
"nothing" (an internal error while building guards), and a number read from
it (``from .helpers import SCALE``) was not guarded at all: after
``helpers.SCALE = 10`` the compiled function still used 3.  A module from
an import is now read through the module object (a constant: the import
guards ``sys.modules``), so its attributes are graph inputs and guarded
values like any global's.  The package a relative import is relative to is
computed as ``__import__`` does (``__package__``, ``__spec__.parent``,
``__name__``), and one beyond the top-level package raises eager's
ImportError.  Results, the module state after the calls and graph counts
are compared with eager and torch.compile (upstream Dynamo's
test_relative_import / test_relative_import_no_modulename cover the first
two forms).
"""
from __future__ import annotations

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, dynamo_graph_count, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def _nested():
    from python_semantics.relimport_pkg import nested
    return {f.__name__: f for f in nested.make()}


def check(fn, *args, calls=2):
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    for i in range(calls):
        assert_equal(fn(*args), compiled(*args), f"call {i}")
    assert counter.frame_count == dynamo_graph_count(fn, *args)
    return counter, compiled


@pytest.mark.parametrize("name", ["from_module_import_tensor", "import_module_then_attribute", "import_as",
                                  "from_parent_package"])
def test_relative_import_in_a_nested_function(name):
    fn = _nested()[name]
    counter, compiled = check(fn, t(3))
    assert counter.frame_count == 1
    (entry,) = armature.cache_entries(compiled)
    assert not entry.is_fallback and entry.graph_break is None


def test_relative_import_with_fullgraph():
    fn = _nested()["import_as"]
    x = t(3)
    assert_equal(fn(x), armature.compile(fn, backend="eager", fullgraph=True)(x))


def test_relative_import_in_the_package_init():
    from python_semantics.relimport_pkg import in_package_init
    counter, _ = check(in_package_init, t(3))
    assert counter.frame_count == 1


def test_gradient_to_a_tensor_read_through_a_relative_import():
    from python_semantics.relimport_pkg import tensors
    fn = _nested()["import_as"]
    x = t(3)
    tensors.BIAS.grad = None
    fn(x).sum().backward()
    expected = tensors.BIAS.grad.clone()
    tensors.BIAS.grad = None
    armature.compile(fn, backend="aot_eager")(x).sum().backward()
    assert_equal(expected, tensors.BIAS.grad)
    tensors.BIAS.grad = None


def test_a_number_read_through_a_relative_import_is_guarded(monkeypatch):
    # (compiled code used the old value after the module changed)
    from python_semantics.relimport_pkg import helpers
    from python_semantics.relimport_pkg.model import relative_imports
    compiled = armature.compile(relative_imports, backend="eager")
    x = t(3)
    assert_equal(relative_imports(x), compiled(x))
    monkeypatch.setattr(helpers, "SCALE", 10)
    assert_equal(relative_imports(x), compiled(x))
    assert_equal(x * 22, compiled(x))


def test_a_tensor_read_through_a_relative_import_is_read_on_each_call(monkeypatch):
    from python_semantics.relimport_pkg import tensors
    fn = _nested()["from_module_import_tensor"]
    compiled = armature.compile(fn, backend="eager")
    x = t(3)
    assert_equal(fn(x), compiled(x))
    monkeypatch.setattr(tensors, "WEIGHT", torch.full((3,), 5.0))
    assert_equal(fn(x), compiled(x))
    tensors.WEIGHT.mul_(2)     # in place: the same tensor, new values
    assert_equal(fn(x), compiled(x))


def test_relative_import_beyond_the_top_level_package_raises_as_eager():
    fn = _nested()["beyond_top_level_package"]
    x = t(3)
    with pytest.raises(ImportError, match="beyond top-level package"):
        fn(x)
    for fullgraph in (False, True):
        armature.reset()
        with pytest.raises(ImportError, match="beyond top-level package"):
            armature.compile(fn, backend="eager", fullgraph=fullgraph)(x)


def _function_in(globals_: dict, body: str):
    namespace = dict(globals_)
    exec(f"def f(x):\n{body}\n", namespace)
    return namespace["f"]


@pytest.mark.parametrize("globals_", [
    # no __package__, no __spec__: the parent of __name__
    {"__name__": "python_semantics.relimport_pkg.somewhere", "__package__": None, "__spec__": None},
    # a package's __init__ (it has __path__): __name__ itself
    {"__name__": "python_semantics.relimport_pkg", "__package__": None, "__spec__": None, "__path__": []},
    # __package__ wins over __name__
    {"__name__": "elsewhere", "__package__": "python_semantics.relimport_pkg"},
], ids=["parent-of-name", "package-init", "package"])
def test_the_package_is_computed_as_import_does(globals_):
    import python_semantics.relimport_pkg.helpers  # noqa: F401
    f = _function_in(globals_, "    from .helpers import SCALE\n    return x * SCALE")
    x = t(3)
    assert_equal(f(x), armature.compile(f, backend="eager", fullgraph=True)(x))


def test_relative_import_without_a_package_raises_as_eager():
    f = _function_in({"__name__": "toplevel", "__package__": ""}, "    from . import helpers\n    return x")
    with pytest.raises(ImportError, match="no known parent package"):
        f(t(3))
    with pytest.raises(ImportError, match="no known parent package"):
        armature.compile(f, backend="eager")(t(3))
