"""Multi-process tests: each test module runs its scenarios once, in one
pair of processes (launch.py), and its tests read the results."""
import os
import sys

import pytest
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))

if not dist.is_available() or not dist.is_gloo_available():   # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from helpers import USING_TORCH  # noqa: E402

if USING_TORCH:
    pytest.skip("the distributed tests compare armature with torch.compile themselves", allow_module_level=True)


@pytest.fixture(scope="session")
def run(request):
    """One 2-rank run of every scenario the selected tests need (each test
    module lists its scenarios in NAMES): process start-up and torch's
    imports are paid once for the whole distributed test set.  Under
    pytest-xdist the first worker to get here runs it and the others read
    its results (every worker collects the same tests)."""
    import launch
    names = []
    for item in request.session.items:
        for n in getattr(item.module, "NAMES", ()):
            if n not in names:
                names.append(n)
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if uid is None:
        return launch.run(names, timeout=420)
    import tempfile
    base = os.path.join(tempfile.gettempdir(), f"armature-dist-{uid}")
    try:
        os.close(os.open(base + ".lock", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return launch.RunResult.wait_for(base + ".json", timeout=480)
    try:
        result = launch.run(names, timeout=420)
    except BaseException:   # (the waiting workers must not wait for nothing)
        import traceback
        launch.RunResult([{}, {}], [traceback.format_exc()] * 2, True, [None, None]).save(base + ".json")
        raise
    result.save(base + ".json")
    return result
