"""What README.md and the pages under docs/ name exists: every
``armature.<name>`` they spell resolves, every ``ARMATURE_*`` variable is
read somewhere, every ``./dev <command>`` is a command of ./dev, and the API
reference lists everything ``import armature`` exports.  (The links and
anchors between pages are checked by ``./dev docs``, a --strict MkDocs
build; the configuration reference by tests/test_config_reference.py.)"""
from __future__ import annotations

import pathlib
import re

import armature

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _mentions(pattern: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for m in re.finditer(pattern, page.read_text()):
            found.setdefault(m.group(1), []).append(str(page.relative_to(ROOT)))
    return found


def _resolves(dotted: str) -> bool:
    obj = armature
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def test_every_armature_name_the_docs_spell_exists():
    # `armature.compile(`, `armature.config.regions`, `armature.Unsupported`;
    # a trailing method call on a result (`.start()`) is not part of the name
    names = _mentions(r"(?<![\w/.])armature\.((?:[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*)")
    from armature.diagnostics.logs import ARTIFACTS     # loggers: `armature.fallbacks`
    missing = {n: sorted(set(p)) for n, p in names.items() if not _resolves(n) and n not in ARTIFACTS}
    assert not missing, f"the docs name armature attributes that do not exist: {missing}"


def test_every_environment_variable_the_docs_name_is_read_somewhere():
    code = "\n".join(p.read_text(errors="replace") for d in ("src", "tests", "benchmarks")
                     for p in (ROOT / d).rglob("*.py"))
    code += (ROOT / "dev").read_text() + (ROOT / ".ci" / "run").read_text()
    settings = {f"ARMATURE_{name.upper()}" for name in armature.config._TYPES}
    names = _mentions(r"\b(ARMATURE_[A-Z][A-Z0-9_]*[A-Z0-9])\b")
    unknown = {n: sorted(set(p)) for n, p in names.items() if n not in settings and n not in code}
    assert not unknown, f"the docs name environment variables nothing reads: {unknown}"


def test_every_dev_command_the_docs_name_exists():
    dev = (ROOT / "dev").read_text()
    body = dev.split('case "$cmd" in', 1)[1]
    commands = set(re.findall(r"^    ([a-z|-]+)\)", body, flags=re.M))
    commands = {c for group in commands for c in group.split("|")}
    named = _mentions(r"\./dev ([a-z]+)\b")
    unknown = {n: sorted(set(p)) for n, p in named.items() if n not in commands}
    assert not unknown, f"the docs name ./dev commands that do not exist: {unknown}"


def test_api_reference_lists_every_public_name():
    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    missing = [n for n in armature.__all__ if not re.search(rf"`armature\.{n}\b", page)]
    assert not missing, f"docs/reference/api.md does not list: {missing}"
