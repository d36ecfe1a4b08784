"""mark_dynamic / maybe_mark_dynamic / mark_static, the dynamic_sources
whitelist, and dynamism across graph breaks."""
import pytest
import torch

import armature

from .util import compiles, guards, run_over, same


def _sum_rows(x):
    return x.sum(1) * x.shape[0]


def test_mark_dynamic_compiles_once_for_every_size():
    cf = armature.compile(_sum_rows, backend="eager")
    for n in range(2, 22):
        x = torch.randn(n, 3)
        armature.mark_dynamic(x, 0)
        same(_sum_rows(x), cf(x))
    assert compiles(cf) == 1


def test_mark_dynamic_specialised_is_a_clear_error():
    def f(x):
        if x.shape[0] == 8:          # specialises the marked dim
            return x * 2
        return x
    x = torch.randn(8, 3)
    armature.mark_dynamic(x, 0)
    with pytest.raises(armature.DynamicDimSpecialized, match=r"size\(\)\[0\]") as info:
        armature.compile(f, backend="eager")(x)
    assert "if x.shape[0] == 8:" in str(info.value) and "test_marks.py" in str(info.value)


def test_maybe_mark_dynamic_may_be_specialised():
    def f(x):
        if x.shape[0] == 8:
            return x * 2
        return x
    x = torch.randn(8, 3)
    armature.maybe_mark_dynamic(x, 0)
    cf = armature.compile(f, backend="eager")
    same(f(x), cf(x))


def test_mark_dynamic_min_max_bounds_are_guarded():
    cf = armature.compile(_sum_rows, backend="eager")
    for n in (4, 6, 8):
        x = torch.randn(n, 3)
        armature.mark_dynamic(x, 0, min=2, max=10)
        same(_sum_rows(x), cf(x))
    assert compiles(cf) == 1
    assert any("x.size()[0] <= 10" in g for g in guards(cf))
    x = torch.randn(12, 3)
    same(_sum_rows(x), cf(x))               # outside the bound: another entry
    assert compiles(cf) == 2


def test_mark_static_keeps_dims_static_under_dynamic_true():
    cf = armature.compile(_sum_rows, backend="eager", dynamic=True)
    for n in (3, 4, 5):
        x = torch.randn(n, 3)
        armature.mark_static(x, 0)
        same(_sum_rows(x), cf(x))
    assert compiles(cf) == 3


def test_whitelist_makes_a_parameter_dynamic():
    class M(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(n, 3))

        def forward(self, i):
            return self.table[i] * self.table.shape[0]

    m = M(4)
    cf = armature.compile(m, backend="eager")
    with armature.config.patch(dynamic_sources=r".*table"):
        for n in (4, 5, 6):
            m.table = torch.nn.Parameter(torch.randn(n, 3))   # a table that grows
            i = torch.tensor([0, 2])
            same(m(i), cf(i))
    assert len(armature.cache_entries(cf)) == 1


def test_mark_static_on_a_module_beats_the_whitelist():
    lin = torch.nn.Linear(3, 2)
    armature.mark_static(lin)

    def f(x):
        return lin(x)
    with armature.config.patch(dynamic_sources=r".*weight.*"):
        cf = run_over(f, [(torch.randn(4, 3),)])
    assert "lin.weight" in " ".join(guards(cf)) or compiles(cf) == 1


@pytest.mark.parametrize("bad", [
    lambda: armature.mark_dynamic([1, 2], 0),
    lambda: armature.mark_dynamic(torch.randn(2), 3),
    lambda: armature.mark_dynamic(torch.randn(2), "0"),
    lambda: armature.mark_dynamic(torch.randn(2), 0, min=5, max=2),
    lambda: armature.mark_dynamic(torch.randn(2), 0, specialize_on=[3]),
    lambda: armature.mark_static(torch.randn(2)),
])
def test_marks_reject_bad_input_clearly(bad):
    with pytest.raises((TypeError, ValueError, IndexError)):
        bad()


def test_whitelist_makes_names_dynamic_from_the_first_compile():
    def f(x, n):
        return x[:n] * x.shape[1]
    with armature.config.patch(dynamic_sources="x:1, n"):
        cf = run_over(f, [(torch.randn(4, c), n) for c, n in [(2, 2), (3, 3), (5, 2), (6, 4)]])
    assert compiles(cf) == 1


def test_whitelist_regex_and_override_of_dynamic_false():
    def f(x):
        return x * 2
    with armature.config.patch(dynamic_sources=r"[xy]"):
        cf = run_over(f, [(torch.randn(n),) for n in (3, 4, 5)], dynamic=False)
    assert compiles(cf) == 1


def test_whitelist_change_takes_effect_on_later_compiles():
    def f(x):
        return x + 1
    cf = armature.compile(f, backend="eager", dynamic=False)
    cf(torch.randn(3))
    with armature.config.patch(dynamic_sources="x"):
        cf(torch.randn(4))           # a recompile: now dynamic
        cf(torch.randn(5))
    assert compiles(cf) == 2


def test_whitelist_from_the_environment(monkeypatch):
    monkeypatch.setenv("ARMATURE_DYNAMIC_SOURCES", "x")
    from armature.config import Config
    assert Config().dynamic_sources_list() == ["x"]


def test_dynamism_survives_a_graph_break():
    def f(x):
        y = x * 2
        print("size", y.shape[0])      # a graph break
        return y.sum(0) + y.shape[0]
    cf = armature.compile(f, backend="eager")
    for n in (3, 4, 5, 6, 7, 8):
        x = torch.randn(n, 2)
        same(f(x), cf(x))
    from armature.runtime.wrappers import _RESUME
    resumes = [r for r in _RESUME.values()]
    assert compiles(cf) == 2
    assert sum(len(armature.cache_entries(r)) for r in resumes) <= 2


def test_resume_function_dynamic_from_the_start_with_dynamic_true():
    def f(x):
        y = x + 1
        armature.graph_break()
        return y * y.shape[0]
    cf = armature.compile(f, backend="eager", dynamic=True)
    for n in (3, 4, 5, 6):
        x = torch.randn(n)
        same(f(x), cf(x))
    from armature.runtime.wrappers import _RESUME
    assert compiles(cf) == 1
    assert sum(len(armature.cache_entries(r)) for r in _RESUME.values()) == 1


def test_resume_function_inherits_a_dynamic_argument():
    """An argument the frame made dynamic (``x``, used before the break and
    after it) is dynamic in the resume function's first compile too, also
    when the break is first met after the frame became dynamic."""
    def f(x, flag):
        y = x.sin()
        if flag:
            armature.graph_break()
        return y.cos() + x.shape[0]
    cf = armature.compile(f, backend="eager")
    for n, flag in ((3, False), (4, False), (5, True), (6, True), (7, True)):
        x = torch.randn(n)
        same(f(x, flag), cf(x, flag))
    from armature.runtime.wrappers import _RESUME
    assert sum(len(armature.cache_entries(r)) for r in _RESUME.values()) == 1


def test_mark_unbacked_serves_sizes_zero_and_one_with_one_compile():
    def f(x):
        return (x * 2).sum(0), x.shape[0] + 1
    cf = armature.compile(f, backend="eager")
    for n in (1, 0, 3, 1, 7):
        x = torch.randn(n, 4)
        armature.mark_unbacked(x, 0)
        same(f(x), cf(x))
    assert compiles(cf) == 1


def test_mark_unbacked_branch_is_data_dependent():
    def f(x):
        if x.shape[0] == 1:
            return x * 2
        return x
    x = torch.randn(1, 3)
    armature.mark_unbacked(x, 0)
    with pytest.raises(armature.Unsupported, match="data-dependent"):
        armature.compile(f, backend="eager", fullgraph=True)(x)
    same(f(x), armature.compile(f, backend="eager")(x))


def test_a_size_handed_over_a_break_stays_dynamic():
    def f(x):
        s = x.shape
        armature.graph_break()
        return x.reshape(s[0] * s[1]) + s[0], s
    cf = armature.compile(f, backend="eager")
    for n in range(3, 9):
        x = torch.randn(n, 4)
        same(f(x), cf(x))
    from armature.runtime.wrappers import _RESUME
    assert compiles(cf) == 2
    assert sum(len(armature.cache_entries(r)) for r in _RESUME.values()) <= 2
