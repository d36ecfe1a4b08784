"""The packages import one way (docs/architecture/layers.md): no import
statement anywhere in armature -- function-level and type-only ones
included -- reaches a package above its own in the ``.importlinter``
contract, and every top-level package and module is in that contract.
(CI also runs import-linter itself on the contract: ``./dev layers``.)"""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")


def _counter():
    spec = importlib.util.spec_from_file_location("count_upward_imports",
                                                  os.path.join(ROOT, "tools", "count_upward_imports.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


counter = _counter()


def test_no_import_runs_up_the_layers():
    found = counter.upward_imports(SRC, counter.layers())
    assert not found, "imports against the layering (docs/architecture/layers.md):\n" + \
        "\n".join(f"  {where}: {a} -> {b}" for a, b, where in found)


def test_every_top_level_package_and_module_has_a_layer():
    order = counter.layers()
    names = {n[:-3] if n.endswith(".py") else n for n in os.listdir(os.path.join(SRC, "armature"))
             if (n.endswith(".py") or os.path.isfile(os.path.join(SRC, "armature", n, "__init__.py")))}
    assert names - {"__init__", "__main__"} <= set(order), \
        f"not in .importlinter's layers: {sorted(names - {'__init__', '__main__'} - set(order))}"


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


@pytest.mark.parametrize("statement", [
    "from ..api import compile_",                  # relative, at module level
    "def f():\n    from armature.api import x\n",   # absolute, inside a function
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import api\n",   # type-only
    "import armature.api\n",
])
def test_the_count_sees_every_kind_of_import(tmp_path, statement):
    """The check can fail: an upward import of each spelling is counted."""
    for pkg in ("armature", "armature/runtime"):
        _write(tmp_path, f"{pkg}/__init__.py", "")
    _write(tmp_path, "armature/api.py", "from .runtime import cache\n")   # (downward: not counted)
    _write(tmp_path, "armature/runtime/cache.py", statement)
    found = counter.upward_imports(str(tmp_path), {"runtime": 0, "api": 1})
    assert [(a, b) for a, b, _ in found] == [("runtime", "api")]


def test_every_up_call_is_installed_by_its_layer():
    """What lower layers call above them is in place once armature is
    imported, and is the very object of the layer that owns it."""
    import armature
    from armature import api, upcalls
    from armature.driver import compile_frame
    owners = {"api": api, "driver.compile_frame": compile_frame}
    for name, owner in upcalls.INSTALLED_BY.items():
        value = getattr(upcalls, name)
        if name == "module_call_code":
            assert value is api._module_call.__code__
        else:
            assert value is getattr(owners[owner], name)
    assert upcalls.CompiledFunction is armature.CompiledFunction
    with pytest.raises(AttributeError, match="no such up-call"):
        upcalls.install(not_an_up_call=1)
