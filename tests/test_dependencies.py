"""The dependency ranges pyproject.toml declares are the ones the code needs
and the ones tested.

The oldest ``bytecode`` and torch the project accepts are not only declared:
``./dev test --python 3.12`` installs exactly them (``.venv-py312``), so the
whole suite runs on the floor there; these tests make sure that run really is
on the floor, and that every release in the declared ranges has what the code
imports.
"""
from __future__ import annotations

import pathlib
import re
import sys

import bytecode
import pytest
import torch

from armature import torch_compat

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = ROOT.joinpath("pyproject.toml").read_text()


def _floor(name: str) -> tuple[int, ...]:
    m = re.search(rf'"{name}>=([0-9.]+)', PYPROJECT)
    assert m, f"pyproject.toml declares no floor for {name}"
    return tuple(int(p) for p in m.group(1).split("."))


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.match(r"[0-9.]+", version).group(0).rstrip(".").split("."))


def _on_the_floor_venv() -> bool:
    """The suite runs in ./dev's 3.12 venv, which pins the floors."""
    return pathlib.Path(sys.prefix).name == ".venv-py312"


def test_installed_bytecode_is_in_the_declared_range():
    assert _release(bytecode.__version__) >= _floor("bytecode")


def test_bytecode_floor_has_what_the_code_imports():
    """The names armature takes from ``bytecode`` (FormatValue: 0.17)."""
    from bytecode import BinaryOp, Compare, Intrinsic1Op, Intrinsic2Op  # noqa: F401
    from bytecode.instr import FormatValue  # noqa: F401


@pytest.mark.skipif(not _on_the_floor_venv(), reason="only ./dev's 3.12 venv installs the floors")
def test_the_floor_venv_runs_on_the_floors():
    floor = _floor("bytecode")
    assert _release(bytecode.__version__)[:len(floor)] == floor
    assert torch_compat.VERSION == torch_compat.OLDEST


def test_torch_range_matches_torch_compat():
    m = re.search(r'"torch>=([0-9.]+),<([0-9.]+)"', PYPROJECT)
    assert m, "pyproject.toml declares no torch range"
    oldest = tuple(int(p) for p in m.group(1).split("."))
    below = tuple(int(p) for p in m.group(2).split("."))
    assert oldest == torch_compat.OLDEST
    assert below == (torch_compat.NEWEST[0], torch_compat.NEWEST[1] + 1)
    assert torch_compat.is_supported(), f"torch {torch.__version__} is outside {oldest}..{below}"


@pytest.mark.parametrize("text, parsed", [("2.11.0+cu130", (2, 11)), ("2.9.1", (2, 9)),
                                          ("2.15.0a0+git1234", (2, 15)), ("3.0.0", (3, 0))])
def test_torch_versions_compare_as_numbers(text, parsed):
    assert torch_compat._parse(text) == parsed
