#!/usr/bin/env python
"""Write docs/reference/configuration.md from src/armature/config.py.

Every ``armature.config`` setting is a field of ``config.Config``; its
``#:`` comment is its documentation.  This script reads both and writes the
reference page: per setting its type, default, environment variable, the
values it accepts and what it does.  What a setting accepts is not restated
here: it is what config.py's own checks say, found by asking them (a value
they refuse, and the message they refuse it with), so the page cannot drift
from the code.  tests/test_config_reference.py fails when the committed page
differs from what this script writes (a setting added, removed, renamed or
re-documented without running it).

    python tools/gen_config_reference.py           # (re)write the page
    python tools/gen_config_reference.py --check   # exit 1 if the page is out of date

config.py is loaded from its file on its own (it imports only the standard
library), so this runs without torch: ``./dev docs`` runs it in the docs
tool's small venv.  ARMATURE_* variables of the calling environment are
ignored: the page shows the defaults.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import pathlib
import re
import sys
import types
import unittest.mock

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG_PY = ROOT / "src" / "armature" / "config.py"
PAGE = ROOT / "docs" / "reference" / "configuration.md"


def load_config_module() -> types.ModuleType:
    """src/armature/config.py as a module of its own, with no ARMATURE_*
    variable set (its defaults, not this shell's settings)."""
    name = "_armature_config_for_docs"
    spec = importlib.util.spec_from_file_location(name, CONFIG_PY)
    module = importlib.util.module_from_spec(spec)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ARMATURE_")}
    sys.modules[name] = module    # config.py sets its own module's class through sys.modules
    try:
        with unittest.mock.patch.dict(os.environ, clean, clear=True):
            spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def field_comments(source: str) -> dict[str, str]:
    """Each ``Config`` field's ``#:`` comment, by field name."""
    body = source.split("class Config", 1)[1]
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in body.splitlines()[1:]:
        stripped = line.strip()
        if line and not line[0].isspace():
            break                        # the end of the class body
        if stripped.startswith("#:"):
            pending.append(stripped[2:])
            continue
        m = re.match(r"\s+([a-z_][a-z0-9_]*)\s*:\s*\w+\s*=", line)
        if m:
            comments[m.group(1)] = "\n".join(pending)
        pending = []
    return comments


def as_markdown(comment: str) -> str:
    """A ``#:`` comment as Markdown: lines joined into paragraphs; a line
    that starts with a quoted value followed by ``--`` starts a list item
    (module_parameters's two modes, loop_breaks's)."""
    items: list[str] = []
    for raw in comment.splitlines():
        line = raw.strip()
        if re.match(r'^"[^"]+"\s+--', line) or not items:
            items.append(line)
        else:
            items[-1] += " " + line
    if len(items) == 1:
        return items[0]
    head, rest = items[0], items[1:]
    if re.match(r'^"[^"]+"\s+--', head):
        return "\n".join(f"- {i}" for i in items)
    return head + "\n\n" + "\n".join(f"- {i}" for i in rest)


def capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def accepted(cfg: types.ModuleType, name: str, kind: type) -> str:
    """What config.py's checks let a setting be, in their own words."""
    if kind is bool:
        return "`True` or `False`"
    probes = ["\x00 not a value \x00"] if kind is str else [0, -1]
    for probe in probes:
        try:
            cfg._check(name, probe)
        except ValueError as e:
            said = str(e)
            if kind is str:
                choices = re.findall(r"'([^']*)'", said.split(", got")[0])
                quoted = [f'`"{c}"`' for c in choices]
                return ", ".join(quoted[:-1]) + " or " + quoted[-1] if len(quoted) > 1 else quoted[0]
            m = re.search(r"must be (.*)$", said)
            return f"an int {m.group(1) if m else said}"
    return "any string" if kind is str else "any int"


def env_spelling(cfg: types.ModuleType, name: str, kind: type) -> str:
    """How the environment variable is read (config._from_env's words)."""
    if kind is bool:
        try:
            cfg._from_env(name, "?")
        except ValueError as e:
            return str(e).split(": ", 1)[1]
    if kind is int:
        return "an integer"
    return "the text as is"


def render(cfg: types.ModuleType) -> str:
    comments = field_comments(CONFIG_PY.read_text())
    fields = dataclasses.fields(cfg.Config)
    defaults = cfg.Config()
    missing = [f.name for f in fields if not comments.get(f.name, "").strip()]
    if missing:
        raise SystemExit(f"config.py: settings without a '#:' comment: {', '.join(missing)}")
    out = [
        "# Configuration reference",
        "",
        "<!-- generated by tools/gen_config_reference.py from src/armature/config.py: do not edit;",
        "     run `./dev docs` (or `python tools/gen_config_reference.py`) after changing a setting -->",
        "",
        "`armature.config` holds the settings that change how armature traces and",
        "compiles.  Four ways to set one, all checked the same way (an unknown name,",
        "a wrong type or a value out of range raises; a setting is never silently",
        "ignored):",
        "",
        "```python",
        "import armature",
        "armature.config.recompile_limit = 2                   # assignment",
        "armature.config.set(recompile_limit=2)                 # several at once",
        "with armature.config.patch(recompile_limit=2): ...     # for a block (also a decorator)",
        "```",
        "",
        "```bash",
        "ARMATURE_RECOMPILE_LIMIT=2 python train.py            # environment, read when armature is imported",
        "```",
        "",
        "Settings that change tracing may also be patched inside compiled code",
        "(`with armature.config.patch(capture_scalar_outputs=True):` around a few",
        "lines of a compiled function); see",
        "[Stances and tracing marks](../guide/stances-and-marks.md).",
        "",
        "| setting | type | default | environment variable |",
        "| --- | --- | --- | --- |",
    ]
    for f in fields:
        kind = cfg._TYPES[f.name]
        out.append(f"| [`{f.name}`](#{f.name}) | `{kind.__name__}` | `{getattr(defaults, f.name)!r}` "
                   f"| `ARMATURE_{f.name.upper()}` |")
    for f in fields:
        kind = cfg._TYPES[f.name]
        default = getattr(defaults, f.name)
        out += [
            "",
            f"## `{f.name}`",
            "",
            f"- type: `{kind.__name__}`, default `{default!r}`",
            f"- accepts: {accepted(cfg, f.name, kind)}",
            f"- environment: `ARMATURE_{f.name.upper()}` ({env_spelling(cfg, f.name, kind)})",
            "",
            capitalized(as_markdown(comments[f.name])),
        ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    text = render(load_config_module())
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python tools/gen_config_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    if not PAGE.exists() or PAGE.read_text() != text:
        PAGE.write_text(text)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
