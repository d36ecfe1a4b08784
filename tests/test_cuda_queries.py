"""torch.cuda's device queries are constants of the graph (no break, also
under fullgraph=True), as in torch.compile.  The GPU-only queries
(capability, name, current device) are tested in tests/test_gpu.py."""
import torch

import armature


def test_is_available_and_device_count_fold_to_constants():
    def fn(x):
        if torch.cuda.is_available():
            return x + torch.cuda.device_count()
        return x - 1
    x = torch.randn(4)
    f = armature.compile(fn, backend="eager", fullgraph=True)
    torch.testing.assert_close(f(x), fn(x))
    report = armature.explain(fn)(x)
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_is_initialized_is_guarded():
    def fn(x):
        return x + 1 if torch.cuda.is_initialized() else x - 1
    x = torch.randn(4)
    report = armature.explain(fn)(x)
    assert report.graph_break_count == 0
    assert f"torch.cuda.is_initialized() == {torch.cuda.is_initialized()}" in str(report)
