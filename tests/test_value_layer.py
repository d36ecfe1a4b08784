"""The value layer's layout: the registry of value kinds points where each
kind lives, and the sub-packages' ``__init__`` files stay empty of imports
(so importing one costs nothing and makes no circle)."""
import ast
import importlib
import os

import pytest

from armature.values import kinds

VALUES = os.path.dirname(kinds.__file__)


@pytest.mark.parametrize("name", sorted(kinds.HOMES))
def test_each_kind_lives_where_the_registry_says(name):
    home = importlib.import_module(f"armature.values.{kinds.HOMES[name]}")
    obj = getattr(kinds, name)
    assert obj is getattr(home, name)
    assert obj.__module__ == home.__name__
    assert obj.__name__ == name


def test_an_unknown_kind_is_an_attribute_error():
    with pytest.raises(AttributeError):
        kinds.NoSuchValue


SUBPACKAGES = sorted(d for d in os.listdir(VALUES)
                     if os.path.isfile(os.path.join(VALUES, d, "__init__.py")) and d not in ("numpy", "stdlib"))


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_subpackage_init_has_a_docstring_and_no_imports(package):
    with open(os.path.join(VALUES, package, "__init__.py")) as f:
        tree = ast.parse(f.read())
    assert ast.get_docstring(tree) and "May import" in ast.get_docstring(tree)
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_values_keeps_only_the_core_as_modules():
    modules = sorted(f for f in os.listdir(VALUES) if f.endswith(".py"))
    assert modules == ["__init__.py", "base.py", "builder.py", "constant.py", "kinds.py"]
