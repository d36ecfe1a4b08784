"""Shared pytest configuration for the armature test-suite.

ARMATURE_TEST_IMPL=torch runs the differential corpus with torch.compile
standing in for armature.compile (see tests/helpers.py).
"""

import os
import sys

# Errors of armature's own machinery fail the test instead of quietly
# running the frame as Python (see armature.diagnostics.errors.InternalError).
os.environ.setdefault("ARMATURE_STRICT_INTERNAL_ERRORS", "1")

import pytest  # noqa: E402
import torch

sys.path.insert(0, os.path.dirname(__file__))

from helpers import USING_TORCH  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "inductor: compiles with the inductor backend (slow: 5-30 s each)")
    config.addinivalue_line("markers", "aot_eager: runs on the aot_eager backend")
    config.addinivalue_line("markers", "slow: slow test")
    config.addinivalue_line("markers", "armature_only: exercises armature-specific API")


def pytest_report_header(config):
    return f"armature differential tests: ARMATURE_TEST_IMPL={'torch' if USING_TORCH else 'armature'}"


@pytest.fixture(autouse=True)
def _reset_compiler_state():
    """Clear compiler caches before every test."""
    if USING_TORCH:
        torch._dynamo.reset()
    else:
        import armature

        armature.reset()
    yield


@pytest.fixture(autouse=True)
def seed():
    """Deterministic RNG for anything random inside a test."""
    torch.manual_seed(0)
    return 0
