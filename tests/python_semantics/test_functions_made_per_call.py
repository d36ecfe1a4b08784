"""Functions made anew on every call (lambdas, closures, inner functions)
handed to a compiled function, compiled vs eager (side effects included),
entry counts vs torch.compile's frame counts.

A function defined inside another (a lambda, an inner function, a closure
made per call) is guarded by its code from the first call: one entry, as
torch.compile.  Its cells are read, and guarded, through it; which cell
objects it holds is guarded where the trace depends on it (a cell shared
with another function the trace reached stays shared; cells the trace
writes stay distinct): values/functions/closure_aliasing.py, tested below.
"""
import functools

import pytest
import torch

import armature
from helpers import assert_equal, t

X = t(3)


def apply(x, fn):
    return fn(x) * 2


def apply_twice(x, fn):
    y = fn(x)
    return fn(y) + 1


def lambdas():
    return [(X, lambda y: y + 1) for _ in range(3)]


def inner_functions():
    out = []
    for _ in range(3):             # no cells: a default, the same each call
        def inner(y, _k=2):
            return y + _k
        out.append((X, inner))
    return out


def closures_over_cells():
    out = []
    for k in (2.0, 2.0, 2.0):       # the same value, a new cell each call
        def make(k):
            def inner(y):
                return y * k
            return inner
        out.append((X, make(k)))
    return out


def closures_over_tensors():
    return [(X, (lambda w: (lambda y: y + w))(t(3))) for _ in range(3)]


def _torch_frames(fn, calls):
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter)
    for args in calls:
        compiled(*args)
    torch._dynamo.reset()
    return counter.frame_count


@pytest.mark.parametrize("fn", [apply, apply_twice])
@pytest.mark.parametrize("make_calls", [lambdas, inner_functions, closures_over_cells,
                                        closures_over_tensors])
def test_one_entry_for_functions_made_per_call(fn, make_calls):
    armature.reset()
    compiled = armature.compile(fn, backend="eager")
    for args in make_calls():
        assert_equal(fn(*args), compiled(*args))
    ours = len(armature.cache_entries(compiled))
    assert ours == _torch_frames(fn, make_calls()) == 1


def counting_calls():
    """Each call's closure writes its own cell (nonlocal): the write lands in
    that call's cell, not in the first call's."""
    out = []
    for _ in range(3):
        box = {"n": 0}

        def make(box):
            count = 0

            def inner(y):
                nonlocal count
                count += 1
                box["n"] = count
                return y + count
            return inner
        out.append(((X, make(box)), box))
    return out


def test_cell_writes_land_in_each_calls_cell():
    armature.reset()
    compiled = armature.compile(apply_twice, backend="eager")
    eager_calls, compiled_calls = counting_calls(), counting_calls()
    for (e_args, e_box), (c_args, c_box) in zip(eager_calls, compiled_calls):
        assert_equal(apply_twice(*e_args), compiled(*c_args))
        assert e_box == c_box == {"n": 2}


def test_a_module_level_function_is_still_guarded_by_identity():
    def other(y):
        return y - 1
    armature.reset()
    compiled = armature.compile(apply, backend="eager")
    assert_equal(apply(X, torch.sin), compiled(X, torch.sin))
    assert_equal(apply(X, functools.partial(torch.add, other=2)), compiled(X, functools.partial(torch.add, other=2)))
    assert_equal(apply(X, other), compiled(X, other))


def pair_sharing_a_cell(share):
    """Two closures over one cell (``share``) or over two cells: ``bump``
    writes, ``read`` reads."""
    def make():
        n = 0

        def bump():
            nonlocal n
            n += 1

        def read(y):
            return y + n
        return bump, read
    bump, read = make()
    if not share:
        _, read = make()
    return bump, read


def bump_then_read(x, bump, read):
    bump()
    return read(x)


@pytest.mark.parametrize("order", [(True, False, True), (False, True, False)])
def test_cells_shared_or_not_between_closures_made_per_call(order):
    """The trace writes through one closure and reads through the other:
    whether they share the cell decides the result, so it is guarded both
    ways (SAME_OBJECT when shared while tracing, DISTINCT when not)."""
    armature.reset()
    compiled = armature.compile(bump_then_read, backend="eager")
    for share in order:
        e_bump, e_read = pair_sharing_a_cell(share)
        c_bump, c_read = pair_sharing_a_cell(share)
        assert_equal(bump_then_read(X, e_bump, e_read), compiled(X, c_bump, c_read))
        assert_equal(bump_then_read(X, e_bump, e_read), compiled(X, c_bump, c_read))   # (the cells' second call)


def test_a_closure_over_the_compiled_functions_own_cell():
    """A closure handed in that shares a cell with the compiled function
    itself: the compiled function writes its cell, the closure reads it."""
    def outer():
        k = 1

        def f(x, fn):
            nonlocal k
            k += 1
            return fn(x)

        def over_k(y):
            return y * k
        return f, over_k

    def foreign(y):
        return y * 1

    e_f, e_over = outer()
    c_f, c_over = outer()
    compiled = armature.compile(c_f, backend="eager")
    armature.reset()
    for _ in range(2):
        assert_equal(e_f(X, e_over), compiled(X, c_over))
    # another closure with the same code over a different cell: not the frame's own
    _, e_other = outer()
    _, c_other = outer()
    assert_equal(e_f(X, e_other), compiled(X, c_other))
    assert_equal(e_f(X, e_over), compiled(X, c_over))


def test_closure_cell_contents_are_guarded():
    """A cell holding a number the trace specialised on: a closure over
    another number is another entry, never the first one's result."""
    def make(k):
        return lambda y: y * k
    armature.reset()
    compiled = armature.compile(apply, backend="eager")
    for k in (2.0, 2.0, 3.0, 2.0, 3.0):
        assert_equal(apply(X, make(k)), compiled(X, make(k)))
    assert len(armature.cache_entries(compiled)) == 2


def counter_that_breaks():
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        print("bump", count)    # a graph break inside the closure
        return v * count
    return bump


def test_a_break_inside_a_closure_made_per_call(capsys):
    """The break runs the closure natively (compiled per code): it must be
    this call's closure, with this call's cell, never the first call's."""
    armature.reset()
    compiled = armature.compile(apply_twice, backend="eager")
    for _ in range(3):
        expected = apply_twice(X, counter_that_breaks())
        eager_out = capsys.readouterr().out
        assert_equal(expected, compiled(X, counter_that_breaks()))
        assert capsys.readouterr().out == eager_out


def closure_called_before_its_cell_is_read(x):
    v = x * 2

    def g():
        return v
    print("break")
    y = g()          # the resume function reaches the cell through g first,
    return y + v     # then through its own cell argument: one cell, guarded as one


def test_a_closure_and_its_cell_handed_across_a_break(capsys):
    from helpers import CountingBackend
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(closure_called_before_its_cell_is_read, backend=counter)
    for _ in range(3):
        assert_equal(closure_called_before_its_cell_is_read(X), compiled(X))
    assert counter.frame_count == _torch_frames(closure_called_before_its_cell_is_read, [(X,)] * 3) == 2


def maybe_bound(flag):
    def inner(y):
        return y + k
    if flag:
        k = 1
    return inner


def calls_it(x, fn):
    try:
        return fn(x)
    except NameError:
        return x - 1


def test_a_closure_whose_cell_is_empty_on_one_call():
    """An empty cell (NameError when read) on one call, bound on the next:
    the entry made for the empty one must not serve the bound one."""
    armature.reset()
    compiled = armature.compile(calls_it, backend="eager")
    for flag in (False, True, False, True):
        assert_equal(calls_it(X, maybe_bound(flag)), compiled(X, maybe_bound(flag)))


def sibling_closures_with_a_break(x, n):
    def leaf(a):
        print("leaf")         # a graph break: ``inner`` is compiled on its own
        return a * 3

    def inner(a, b):
        a = (a + b).relu()
        return leaf(a)        # ``leaf`` from inner's closure: made per call of the outer code
    return inner(x, n)


def test_a_sibling_closure_read_from_the_closure_is_guarded_by_code(capsys):
    """``inner``, compiled on its own after the break, reads ``leaf`` from
    its closure: a new function on every call of the outer code, guarded by
    its code (not identity), so ``inner`` compiles once (it recompiled on
    every call, up to the recompile limit)."""
    from helpers import CountingBackend
    armature.reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(sibling_closures_with_a_break, backend=counter)
    for _ in range(4):
        expected = sibling_closures_with_a_break(X, 3)
        eager_out = capsys.readouterr().out
        assert_equal(expected, compiled(X, 3))
        assert capsys.readouterr().out == eager_out
    # (inner's graph and leaf's after its print; torch.compile: the same)
    assert counter.frame_count == 2 <= _torch_frames(sibling_closures_with_a_break, [(X, 3)] * 4)
