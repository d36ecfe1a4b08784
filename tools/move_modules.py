"""Move armature modules and rewrite every import of them (a refactoring aid).

``python tools/move_modules.py old.dotted=new.dotted ...`` (names relative to
``armature``) ``git mv``s each module and rewrites, in src/, tests/,
benchmarks/, demo/ and tools/, every import statement that reaches a moved
module (relative imports stay relative, with their level recomputed for the
importing file's package; a moved module's own relative imports are
recomputed for its new package), and every dotted string naming one
(``"armature.runtime.x"``, as in ``monkeypatch.setattr``).  It changes
nothing else, so a move is a pure move.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

from count_upward_imports import resolve   # (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
TREES = ("src", "tests", "benchmarks", "demo", "tools", "examples")


def module_of(path: str) -> tuple[str, str] | None:
    """(module, package) of a file under src/, or None."""
    rel = os.path.relpath(path, SRC)
    if rel.startswith(".."):
        return None
    mod = rel[:-3].replace(os.sep, ".")
    if mod.endswith(".__init__"):
        mod = mod[:-9]
        return mod, mod
    return mod, mod.rsplit(".", 1)[0]


def relative(target: str, package: str) -> tuple[int, str]:
    """(level, module) of ``target`` as a relative import from ``package``."""
    p, t = package.split("."), target.split(".")
    common = 0
    while common < min(len(p), len(t)) and p[common] == t[common]:
        common += 1
    return len(p) - common + 1, ".".join(t[common:])


def spell(target: str, names: str, package: str | None, relative_ok: bool) -> str:
    if relative_ok and package is not None and target.split(".")[0] == package.split(".")[0]:
        level, mod = relative(target, package)
        return f"from {'.' * level}{mod} import {names}"
    return f"from {target} import {names}"


def alias_text(a: ast.alias) -> str:
    return a.name + (f" as {a.asname}" if a.asname else "")


def rewrite_file(path: str, moves: dict[str, str], new_mod: tuple | None, old_mod: tuple | None) -> bool:
    """Rewrite one file's imports; ``old_mod`` is where the file lived before
    it moved (its relative imports were written for that package)."""
    text = open(path).read()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    old_pkg = old_mod[1] if old_mod else (new_mod[1] if new_mod else None)
    new_pkg = new_mod[1] if new_mod else None
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level and old_pkg is None:
                continue     # (a relative import outside src/: tests' own helpers)
            target = resolve(node, old_pkg)
            if not target.startswith("armature"):
                continue
            rel_ok = node.level > 0
            changed = target in moves or (old_pkg != new_pkg and node.level > 0)
            groups: dict[str, list] = {}
            for a in node.names:
                full = f"{target}.{a.name}"
                if full in moves:
                    parent, _, name = moves[full].rpartition(".")
                    changed = True
                    alias = name + (f" as {a.asname}" if a.asname else (f" as {a.name}" if name != a.name else ""))
                    groups.setdefault(parent, []).append(alias)
                else:
                    groups.setdefault(moves.get(target, target), []).append(alias_text(a))
            if not changed:
                continue
            start = offsets[node.lineno - 1] + node.col_offset
            end = offsets[node.end_lineno - 1] + node.end_col_offset
            if len(groups) == 1 and not any(f"{target}.{a.name}" in moves for a in node.names):
                # only the module moved: keep the statement's own layout of its names
                original = text[start:end]
                head = spell(next(iter(groups)), "", new_pkg, rel_ok)
                out = head + original[original.index(" import ") + len(" import "):]
            else:
                indent = " " * node.col_offset
                out = ("\n" + indent).join(spell(t, ", ".join(ns), new_pkg, rel_ok) for t, ns in groups.items())
            start = offsets[node.lineno - 1] + node.col_offset
            end = offsets[node.end_lineno - 1] + node.end_col_offset
            edits.append((start, end, out))
        elif isinstance(node, ast.Import):
            names = []
            changed = False
            for a in node.names:
                if a.name in moves:
                    changed = True
                    names.append(moves[a.name] + (f" as {a.asname}" if a.asname else ""))
                else:
                    names.append(alias_text(a))
            if changed:
                start = offsets[node.lineno - 1] + node.col_offset
                end = offsets[node.end_lineno - 1] + node.end_col_offset
                edits.append((start, end, "import " + ", ".join(names)))
    new = text
    for start, end, out in sorted(edits, reverse=True):
        new = new[:start] + out + new[end:]
    new = rename_in_text(new, moves)
    if new != text:
        open(path, "w").write(new)
        return True
    return False


def rename_in_text(text: str, moves: dict[str, str]) -> str:
    """Dotted names (``armature.runtime.x``) and file paths (``runtime/x.py``)
    of moved modules, in code, comments and docs."""
    for old, target in moves.items():
        text = re.sub(r"(?<![\w.])" + re.escape(old) + r"(?![\w])", target, text)
        old_path = old.split(".", 1)[1].replace(".", "/") + ".py"
        new_path = target.split(".", 1)[1].replace(".", "/") + ".py"
        text = re.sub(r"(?<![\w./])" + re.escape(old_path) + r"(?![\w])", new_path, text)
    return text


def main(argv):
    moves = {}
    for arg in argv:
        old, new = arg.split("=")
        moves["armature." + old] = "armature." + new
    relocated = {}
    for old, new in moves.items():
        src = os.path.join(SRC, *old.split(".")) + ".py"
        dst = os.path.join(SRC, *new.split(".")) + ".py"
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        init = os.path.join(os.path.dirname(dst), "__init__.py")
        if not os.path.exists(init):
            raise SystemExit(f"{init} missing: create the package (with its docstring) first")
        subprocess.run(["git", "mv", src, dst], check=True, cwd=ROOT)
        relocated[os.path.abspath(dst)] = module_of(src)
    changed = 0
    for tree in TREES:
        for dp, dn, fn in os.walk(os.path.join(ROOT, tree)):
            dn[:] = [d for d in dn if d != "__pycache__"]
            for f in fn:
                if f.endswith(".py"):
                    p = os.path.abspath(os.path.join(dp, f))
                    if p == os.path.abspath(__file__):
                        continue
                    changed += rewrite_file(p, moves, module_of(p), relocated.get(p))
    for dp, dn, fn in os.walk(ROOT):
        dn[:] = [d for d in dn if not d.startswith(".") and d not in ("__pycache__", "site", "node_modules")]
        for f in fn:
            if f.endswith(".md") or f == "mkdocs.yml":
                p = os.path.join(dp, f)
                text = open(p).read()
                new = rename_in_text(text, moves)
                if new != text:
                    open(p, "w").write(new)
                    changed += 1
    print(f"moved {len(moves)} modules, rewrote {changed} files")


if __name__ == "__main__":
    main(sys.argv[1:])
