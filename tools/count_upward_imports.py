"""Count the import statements that run against armature's layering.

The layers are the ones the import-linter contract in ``.importlinter``
names (top first; ``a : b`` on one line is one layer).  Every ``import``
and ``from ... import`` in src/armature is read -- at module level, inside
functions, under ``if TYPE_CHECKING`` alike -- and resolved to the
top-level package or module it reaches; a statement whose importer sits in
a lower layer than what it imports is an upward import.  Statements inside
one top-level package are not counted (the value layer's sub-packages have
their own rules: tests/test_value_layer.py).

``python tools/count_upward_imports.py [--rev REV] [-v]`` prints the total
and the count per (importer, imported) pair; ``--rev`` counts the tree of a
git revision (with today's layer order: how the issue's "before" number is
reproduced); ``-v`` lists each statement.  The test suite runs it on the
working tree (tests/test_layers.py) and CI runs import-linter on the same
contract (``./dev layers``).
"""
from __future__ import annotations

import argparse
import ast
import collections
import configparser
import io
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def layers(config_path: str = os.path.join(ROOT, ".importlinter")) -> dict[str, int]:
    """Top-level name -> layer index (0 is the bottom)."""
    cp = configparser.ConfigParser()
    cp.read(config_path)
    section = next(s for s in cp.sections() if cp.get(s, "type", fallback="") == "layers")
    lines = [ln.strip() for ln in cp.get(section, "layers").splitlines() if ln.strip()]
    out = {}
    for depth, line in enumerate(reversed(lines)):
        for name in line.replace("|", ":").split(":"):
            out[name.strip()] = depth
    return out


def resolve(node: ast.ImportFrom, package: str | None) -> str:
    """The absolute module a ``from ... import`` names, written in
    ``package`` (tools/move_modules.py uses it too)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: str, package: str):
    """(line, absolute module) of each import statement of one file."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, [a.name]
        elif isinstance(node, ast.ImportFrom):
            mod = resolve(node, package)
            # ``from armature import api`` reaches api, not the root
            yield node.lineno, [f"{mod}.{a.name}" for a in node.names] if mod == "armature" else [mod]


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "armature" and len(parts) > 1 else None


def upward_imports(src: str, order: dict[str, int]) -> list[tuple[str, str, str]]:
    """(importer package, imported package, "file:line") of every upward
    import statement under ``src`` (the directory holding ``armature/``)."""
    found = []
    pkg_root = os.path.join(src, "armature")
    for dirpath, dirnames, filenames in os.walk(pkg_root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in sorted(filenames):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)[:-3].replace(os.sep, ".")
            module = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
            package = module if f == "__init__.py" else module.rsplit(".", 1)[0]
            importer = _top(module)
            if importer not in order:
                continue     # the root package (armature/__init__, __main__) sits above every layer
            for line, targets in _imports(path, package):
                for target in targets:
                    imported = _top(target)
                    if imported in order and imported != importer and order[imported] > order[importer]:
                        found.append((importer, imported, f"{os.path.relpath(path, src)}:{line}"))
                        break   # (one per statement)
    return found


def _tree_at(rev: str, into: str) -> str:
    data = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return os.path.join(into, "src")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", help="count this git revision's src/ (default: the working tree)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every upward import statement")
    opts = ap.parse_args(argv)
    order = layers()
    with tempfile.TemporaryDirectory() as tmp:
        src = _tree_at(opts.rev, tmp) if opts.rev else os.path.join(ROOT, "src")
        found = upward_imports(src, order)
    pairs = collections.Counter((a, b) for a, b, _ in found)
    print(f"upward imports: {len(found)}" + (f" (at {opts.rev})" if opts.rev else ""))
    for (a, b), n in pairs.most_common():
        print(f"  {a} -> {b}: {n}")
    if opts.verbose:
        for a, b, where in found:
            print(f"    {where}: {a} -> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
