"""Shared pytest configuration for the armature test-suite.

ARMATURE_TEST_IMPL=torch runs the differential corpus with torch.compile
standing in for armature.compile (see tests/helpers.py).
"""

import os
import sys

# Errors of armature's own machinery fail the test instead of quietly
# running the frame as Python (see armature.diagnostics.errors.InternalError).
os.environ.setdefault("ARMATURE_STRICT_INTERNAL_ERRORS", "1")

# The persistent compile cache (the warm start) stays off in tests, whatever
# the shell says, so that tests never load each other's entries (nor a run's
# from the last run); its directory is a temporary one of this session, so
# that a test turning it on (tests/warm_start/ runs processes of its own,
# each with its own directory) never reads or writes the user's real cache.
# Interpreters the tests start inherit both.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

if os.environ.get("ARMATURE_TEST_CACHE_DIR"):
    # (a check of the warm start itself: run a directory twice with the same
    # ARMATURE_TEST_CACHE_DIR and the second run's compiled functions load
    # what the first stored; tests that count traces or graphs then differ)
    os.environ["ARMATURE_CACHE"] = "1"
    os.environ["ARMATURE_CACHE_DIR"] = os.environ["ARMATURE_TEST_CACHE_DIR"]
else:
    os.environ["ARMATURE_CACHE"] = "0"
    os.environ["ARMATURE_CACHE_DIR"] = tempfile.mkdtemp(prefix="armature-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ARMATURE_CACHE_DIR"], True)

import pytest  # noqa: E402
import torch

sys.path.insert(0, os.path.dirname(__file__))

from helpers import USING_TORCH  # noqa: E402


def _stub_cpu_isa() -> "list[str] | None":
    """ARMATURE_TEST_CPU_ISA (tests/machine_stubs/sitecustomize.py): run as if
    on another CPU, in this process and in every interpreter a test starts."""
    if not os.environ.get("ARMATURE_TEST_CPU_ISA"):
        return None
    import importlib.util

    stubs = os.path.join(os.path.dirname(__file__), "machine_stubs")
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if stubs not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([stubs] + [p for p in paths if p])
    if stubs not in sys.path:
        # (inductor's compile workers get this process's sys.path as their PYTHONPATH, not
        # its environment's: without it they would build for the real CPU the kernels
        # generated for the stubbed one)
        sys.path.append(stubs)
    spec = importlib.util.spec_from_file_location("armature_test_cpu_stub", os.path.join(stubs, "sitecustomize.py"))
    started_with_it = getattr(sys.modules.get("sitecustomize"), "__file__", None) == spec.origin
    stub = sys.modules["sitecustomize"] if started_with_it else importlib.util.module_from_spec(spec)
    if not started_with_it:
        spec.loader.exec_module(stub)   # (pytest was not started with the folder on its path)
    return stub.stubbed_flags()


STUBBED_CPU_ISA = _stub_cpu_isa()


def pytest_configure(config):
    config.addinivalue_line("markers", "inductor: compiles with the inductor backend (slow: 5-30 s each)")
    config.addinivalue_line("markers", "aot_eager: runs on the aot_eager backend")
    config.addinivalue_line("markers", "slow: slow test")
    config.addinivalue_line("markers", "armature_only: exercises armature-specific API")


def pytest_report_header(config):
    header = f"armature differential tests: ARMATURE_TEST_IMPL={'torch' if USING_TORCH else 'armature'}"
    if STUBBED_CPU_ISA is not None:
        header += f"; inductor sees CPU ISA flags {STUBBED_CPU_ISA} (ARMATURE_TEST_CPU_ISA)"
    return header


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
