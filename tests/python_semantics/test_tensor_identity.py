"""Identity of tensors as eager has it (issue 36, "Never wrong", point 1):
``is``, membership in sets and dicts, and dicts keyed by tensors,

* when the same tensor is passed as two arguments (``f(x, x)``), and when
  aliased and distinct calls alternate (``f(x, x)``, ``f(x, y)``,
  ``f(y, x)``, back): each call right, aliased and distinct calls guarded
  apart;
* after in-place ops in the frame, which return their input object itself
  (``y = p.add_(1)``, ``z = torch.Tensor.add_(y, 1)``, ``torch.relu_``);
* with functorch transforms over in-place ops (``torch.vmap(Tensor.acos_)(x)
  is x``), on inputs and on clones made in the frame.

Variants follow PyTorch's own Dynamo tests (test_functions.py:
test_in_set_inplace, test_in_set_would_fail_broadcast,
test_is_vmapped_mutated_tensor_tensor, test_set_construction, ...).  Each
sequence of calls is run eagerly, compiled, and under torch.compile (the
oracle for graph counts).
"""
from __future__ import annotations

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, compile_fn, reset
from python_semantics.identity_support import describe

_graph_break = torch._dynamo.graph_break if USING_TORCH else armature.graph_break


def _run_calls(fn, calls, backend):
    """Run ``fn`` on each argument tuple of ``calls`` (a list of functions
    making fresh arguments, identity pattern included) with ``backend``
    compiled, or eagerly when ``backend`` is None.  Returns the identity-
    aware descriptions of (result, inputs after the call)."""
    target = fn if backend is None else compile_fn(fn, backend=backend)
    out = []
    for make in calls:
        torch.manual_seed(0)
        args = make()
        out.append(describe((target(*args), list(args)), args))
    return out


def check_calls(fn, calls, graphs=None):
    """Compiled equals eager call by call; graph count equal to torch.compile's
    over the same calls (or to ``graphs`` where torch.compile is not a fair
    oracle).  Returns the counting backend."""
    reset()
    expected = _run_calls(fn, calls, None)
    counter = CountingBackend("eager")
    got = _run_calls(fn, calls, counter)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert e == g, f"call {i}:\n eager:    {e}\n compiled: {g}"
    if graphs is None and not USING_TORCH:
        torch._dynamo.reset()
        try:
            oracle = CountingBackend("eager")
            compiled = torch.compile(fn, backend=oracle)
            for make in calls:
                torch.manual_seed(0)
                compiled(*make())
            graphs = oracle.frame_count
        finally:
            torch._dynamo.reset()
    if graphs is not None:
        assert counter.frame_count == graphs, f"captured {counter.frame_count} graphs, expected {graphs}"
    return counter


# --- argument patterns: each makes fresh tensors, aliased or not -------------------

def same():
    x = torch.randn(5)
    return x, x


def distinct():
    return torch.randn(5), torch.randn(5)


def distinct_shapes():
    return torch.zeros(5), torch.zeros(5, 10)


def aliased_shapes():
    x = torch.zeros(5)
    return x, x


ALTERNATING = [same, distinct, distinct, same, distinct]
DISTINCT_FIRST = [distinct, same, distinct, same]


# --- membership with two arguments ---------------------------------------------------

def in_set(a, b):
    return a in {b}, a + 1


def in_set_not(a, b):
    return a not in {b}, b not in {a}, a + b


def in_dict(a, b):
    return a in {b: 1}, b - 1


def dict_get(a, b):
    d = {b: "b"}
    return d.get(a, "missing"), a * 2


def dict_two_keys(a, b):
    d = {a: 1, b: 2}
    return len(d), d[a], d[b], a + b


def set_of_both(a, b):
    return len({a, b}), a * b


def set_union(a, b):
    return len({a} | {b}), len({a} & {b}), len({a} - {b}), a.sum()


def set_add_then_in(a, b):
    s = set()
    s.add(b)
    return a in s, len(s), b.cos()


def keyed_result(a, b):
    d = {a: a + 1}
    d[b] = b * 2
    return d


def frozenset_in(a, b):
    return a in frozenset([b]), a.sin()


def keys_with_a_module_made_in_the_frame(a, b):
    # (the module's source is out of the guard function's reach: only the
    # arguments are guarded distinct)
    m = torch.nn.Linear(5, 5)
    d = {m: "m", a: "a"}
    return d.get(b, "missing"), m in d, m(a).shape


@pytest.mark.parametrize("fn", [in_set, in_set_not, in_dict, dict_get, dict_two_keys, set_of_both,
                                set_add_then_in, keyed_result, frozenset_in, keys_with_a_module_made_in_the_frame])
@pytest.mark.parametrize("order", [ALTERNATING, DISTINCT_FIRST], ids=["aliased_first", "distinct_first"])
def test_membership_with_aliased_and_distinct_arguments(fn, order):
    check_calls(fn, order)


@pytest.mark.skipif(USING_TORCH, reason="armature's graph count (torch.compile runs the frame as Python)")
@pytest.mark.parametrize("order", [ALTERNATING, DISTINCT_FIRST], ids=["aliased_first", "distinct_first"])
def test_set_algebra_with_aliased_and_distinct_arguments(order):
    # (torch.compile runs this frame as Python: no graph to compare with;
    # armature keeps one graph per identity pattern)
    check_calls(set_union, order, graphs=2)


def test_aliased_and_distinct_calls_get_their_own_entries():
    counter = check_calls(in_set, [same, distinct, same, distinct, same])
    assert counter.frame_count == 2   # (one per identity pattern, each reused)


# --- in-place ops return their input object -------------------------------------------

def in_set_inplace(param, param2):
    y = param.add_(1)                  # Tensor method
    z = torch.Tensor.add_(y, 1)        # the same op through torch.Tensor
    tensor_set = {param2}
    return y in tensor_set and z in tensor_set


def in_set_would_fail_broadcast(param, param2):
    param.add_(1)
    return param in {param2}


def inplace_identity(p):
    y = p.add_(1)
    z = torch.Tensor.add_(y, 1)
    w = torch.relu_(z)
    return y is p, z is p, w is p, y in {p}, {p: 1}.get(z), z in {y: 2}, len({p, y, z, w})


def inplace_result_returned(p):
    y = torch.Tensor.mul_(p, 2)
    return y, {y: "y"}


def set_construction(x):
    y = x.add_(1)
    s = set({x})
    s.add(y)
    return len(s)


def set_contains_constant(x):
    x.add_(1)
    return 1 in {x}, x in {1, x}


def inplace_on_clone(x):
    z = x.clone()
    y = z.add_(1)
    w = torch.Tensor.sub_(y, 1)
    return y is z, w is z, w is x, z


def is_mutated_across_break(x):
    y = x.add_(1)
    cond = x is y
    x.add_(1)
    _graph_break()
    x.add_(1)
    return x is y, cond


def functional_inplace(x):
    y = torch.nn.functional.relu(x, inplace=True)
    return y is x, y in {x}


def no_copy_to(x):
    # an op that returns its input object in eager (no copy needed)
    y = x.to(torch.float32)
    c = x.contiguous()
    return y is x, c is x, x.float() is x, x.double() is x


def new_object_ops(x):
    # ops that make a new object (a view, an alias) in eager
    return x.view(-1) is x, x[...] is x, x.detach() is x, x.reshape(x.shape) is x


@pytest.mark.parametrize("fn", [in_set_inplace, in_set_would_fail_broadcast])
def test_inplace_then_membership_aliased_and_distinct(fn):
    check_calls(fn, [distinct_shapes, aliased_shapes, distinct_shapes, aliased_shapes])


@pytest.mark.parametrize("fn", [inplace_identity, inplace_result_returned, set_construction, set_contains_constant,
                                inplace_on_clone, functional_inplace, no_copy_to, new_object_ops])
def test_inplace_results_are_their_input(fn):
    check_calls(fn, [lambda: (torch.randn(4),), lambda: (torch.randn(4),)])


def test_inplace_identity_across_a_graph_break():
    # (torch.compile breaks there too: two graphs; armature.graph_break is
    # not a break for the oracle, so the count is given)
    check_calls(is_mutated_across_break, [lambda: (torch.randn(4),), lambda: (torch.randn(4),)], graphs=2)


# --- functorch transforms over in-place ops ---------------------------------------------

def vmapped_inplace_is_input(x):
    y = torch.vmap(torch.Tensor.acos_)(x)
    return y is x


def vmapped_inplace_on_clone(z):
    x = z.clone()
    y = torch.vmap(torch.Tensor.acos_)(x)
    _ = y is z
    return y is x, y is z, x


def vmapped_inplace_in_set(x):
    y = torch.vmap(torch.Tensor.acos_)(x)
    return y in {x}, len({x, y})


def vmapped_two_clones(y, z):
    a = y.clone()
    b = z.clone()

    def g(a, b):
        return a.acos_(), b.acos_()

    c, d = torch.vmap(g)(a, b)
    return a is c, b is d, a is d, a is c is b is d


def vmapped_out_of_place(x):
    y = torch.vmap(torch.Tensor.acos)(x)
    return y is x


@pytest.mark.parametrize("fn", [vmapped_inplace_is_input, vmapped_inplace_on_clone, vmapped_inplace_in_set,
                                vmapped_out_of_place])
def test_vmap_over_inplace_returns_the_input(fn):
    check_calls(fn, [lambda: (torch.rand(4, 1),), lambda: (torch.rand(4, 1),)])


def test_vmap_over_inplace_two_arguments():
    check_calls(vmapped_two_clones, [lambda: (torch.rand(4, 2), torch.rand(4, 10)),
                                     lambda: (lambda y: (y, y))(torch.rand(4, 2))])


# --- keys of containers from outside the frame ----------------------------------------

_T1 = torch.randn(3)
_T2 = torch.randn(3)


def key_in_outer_dict(d, x):
    return x in d, d.get(x, 0), x + 1


def key_in_outer_set(s, x):
    return x in s, x + 1


@pytest.mark.skipif(USING_TORCH, reason="torch.compile (2.13) answers the second call (the key itself) with "
                                         "the first call's False: it does not guard the argument distinct from the keys")
@pytest.mark.parametrize("fn,container", [(key_in_outer_dict, {_T1: 1}), (key_in_outer_set, {_T1})],
                         ids=["dict", "set"])
def test_lookup_in_a_container_from_outside(fn, container):
    # the argument is first not a key, then is one, then is not
    reset()
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter)
    for x in (_T2, _T1, _T2, _T1):
        expected, got = fn(container, x), compiled(container, x)
        assert expected[:-1] == got[:-1]
        assert torch.equal(expected[-1], got[-1])
    assert counter.frame_count == 2


# --- one check for overlapping distinctness guards -------------------------------------

@pytest.mark.skipif(USING_TORCH, reason="armature's guard function")
def test_overlapping_distinct_guards_are_checked_once():
    # a mutated input and identity-hashed keys both ask for distinct objects;
    # the guard function checks the larger group only, and still tells
    # aliased calls apart
    def fn(a, b, c):
        a.add_(1)
        return a in {b}, b in {c}, c * 2

    reset()
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter)
    def distinct3():
        return torch.randn(3), torch.randn(3), torch.randn(3)

    def aliased3():
        x = torch.randn(3)
        return x, x, torch.randn(3)

    for make in (distinct3, distinct3, aliased3):
        torch.manual_seed(0)
        e_args = make()
        torch.manual_seed(0)
        c_args = make()
        expected, got = fn(*e_args), compiled(*c_args)
        assert expected[:2] == got[:2] and torch.equal(expected[2], got[2])
    entry = armature.cache_entries(compiled)[0]
    source = entry.guard.__armature_source__
    n_distinct = sum(1 for g in entry.guards if g.kind.name == "DISTINCT")
    assert n_distinct >= 2
    assert source.count("len({id(") == 1
