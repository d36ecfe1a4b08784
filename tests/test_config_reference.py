"""The configuration reference (docs/reference/configuration.md) lists every
``armature.config`` setting, as tools/gen_config_reference.py writes it from
src/armature/config.py: a setting added, removed or re-documented without
regenerating the page fails here."""
from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import re

import armature

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "configuration.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_reference", ROOT / "tools" / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _settings():
    return {f.name: f for f in dataclasses.fields(armature.config.Config)}


def test_committed_page_is_what_the_generator_writes():
    gen = _generator()
    expected = gen.render(gen.load_config_module())
    assert PAGE.read_text() == expected, (
        "docs/reference/configuration.md is out of date with src/armature/config.py: "
        "run `python tools/gen_config_reference.py` (or `./dev docs`) and commit the page")


def test_every_setting_has_its_section_type_default_and_variable():
    page = PAGE.read_text()
    sections = dict(re.findall(r"^## `(\w+)`\n(.*?)(?=^## |\Z)", page, flags=re.M | re.S))
    fresh = armature.config.Config()
    for name in _settings():
        assert name in sections, f"armature.config.{name} has no section in {PAGE.relative_to(ROOT)}"
        body = sections[name]
        kind = armature.config._TYPES[name].__name__
        assert f"type: `{kind}`, default `{getattr(fresh, name)!r}`" in body, (name, body)
        assert f"`ARMATURE_{name.upper()}`" in body, (name, body)
        assert len(body.split("\n\n", 1)[-1].strip()) > 20, f"{name}: no description"
    extra = set(sections) - set(_settings())
    assert not extra, f"the page documents settings armature.config does not have: {sorted(extra)}"


def test_every_setting_is_in_the_summary_table():
    table = {m for m in re.findall(r"^\| \[`(\w+)`\]", PAGE.read_text(), flags=re.M)}
    assert table == set(_settings())


def test_generator_takes_accepted_values_from_configs_own_checks():
    # the choices the page lists are the ones config.py accepts: each is
    # accepted, and config.py refuses a value the page does not list
    page = PAGE.read_text()
    for name, kind in armature.config._TYPES.items():
        if kind is not str:
            continue
        line = re.search(rf"^## `{name}`\n.*?^- accepts: ([^\n]*)$", page, flags=re.M | re.S).group(1)
        choices = re.findall(r'`"([^"]*)"`', line)
        for choice in choices:
            armature.config._check(name, choice)
        if choices:
            try:
                armature.config._check(name, "not-" + "-".join(choices))
            except ValueError:
                pass
            else:
                raise AssertionError(f"{name}: config.py accepts a value the page does not list")
