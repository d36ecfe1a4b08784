"""torch.no_grad(), torch.enable_grad(), torch.set_grad_enabled(b) as
context managers inside compiled code; the ambient grad mode; gradients.

assert_same compares ``requires_grad`` of every output tensor, so a region
traced under the wrong grad mode is caught.
"""

import pytest
import torch

from helpers import CASE_ARGS, assert_equal, assert_same, case, compile_fn, t


def rg(*shape):
    return t(*shape, requires_grad=True)


def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y


def no_grad_partial(x):
    a = x * 2
    with torch.no_grad():
        b = x + 1
    return a, b, a + b


def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
        c = x * 4
    return a, b, c


def set_grad_enabled_false(x):
    with torch.set_grad_enabled(False):
        y = x.sin()
    return y, x.cos()


def set_grad_enabled_true(x):
    with torch.no_grad():
        with torch.set_grad_enabled(True):
            y = x.sin()
    return y


def set_grad_enabled_arg(x, flag):
    with torch.set_grad_enabled(flag):
        y = x * x
    return y


def is_grad_enabled_query(x):
    with torch.no_grad():
        inside = torch.is_grad_enabled()
    return x * 2, inside, torch.is_grad_enabled()


def no_grad_in_helper(x):
    return _frozen_scale(x) + x


def _frozen_scale(x):
    with torch.no_grad():
        return x * 10


def detach_vs_no_grad(x):
    d = x.detach() * 2
    with torch.no_grad():
        n = x * 2
    return d, n, x * 2


def no_grad_mutation_of_non_leaf(x, w):
    y = w * 1
    with torch.no_grad():
        y.mul_(0.5)
    return x @ y


def sequential_contexts(x):
    with torch.no_grad():
        a = x + 1
    with torch.enable_grad():
        b = x + 2
    with torch.set_grad_enabled(False):
        c = x + 3
    return a, b, c


def no_grad_loop(xs):
    out = []
    for v in xs:
        with torch.no_grad():
            out.append(v * 2)
    return out


def grad_mode_restored_after_block(x):
    with torch.no_grad():
        pass
    return x * 2


CASES = [
    case(no_grad_block, rg(3)),
    case(no_grad_partial, rg(3)),
    case(enable_grad_inside_no_grad, rg(3)),
    case(set_grad_enabled_false, rg(3)),
    case(set_grad_enabled_true, rg(3)),
    case(set_grad_enabled_arg, rg(3), True, id="set_grad_enabled_arg_true"),
    case(set_grad_enabled_arg, rg(3), False, id="set_grad_enabled_arg_false"),
    case(is_grad_enabled_query, rg(3)),
    case(no_grad_in_helper, rg(3)),
    case(detach_vs_no_grad, rg(3)),
    case(no_grad_mutation_of_non_leaf, t(2, 3), rg(3, 2)),
    case(sequential_contexts, rg(3)),
    case(no_grad_loop, [rg(3), rg(2)]),
    case(grad_mode_restored_after_block, rg(3)),
    case(no_grad_block, t(3), id="no_grad_block_plain_input"),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_grad_modes(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(no_grad_partial, rg(3)),
    case(enable_grad_inside_no_grad, rg(3)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_grad_modes_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


# ------------------------------------------------------------ gradients


def grad_mixed(x, y):
    with torch.no_grad():
        s = y.sum()
    return (x * y).sin() * s + x.detach()


def grad_through_views_and_index(x):
    return x.view(2, 3).t()[1:] * 2


def grad_through_inplace_on_intermediate(x, w):
    h = x @ w
    h.mul_(2)
    h[:, 0] = 0.0
    return h.relu()


GRAD_CASES = [
    case(grad_mixed, rg(3), rg(3)),
    case(grad_through_views_and_index, rg(6)),
    case(grad_through_inplace_on_intermediate, t(2, 3), rg(3, 4)),
    case(no_grad_partial, rg(3)),
]


@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
@pytest.mark.parametrize(CASE_ARGS, GRAD_CASES)
def test_gradients(fn, args, opts, backend):
    assert_same(fn, *args, backend=backend, graphs=1, check_grad=True, **opts)


# ----------------------------------------------------- ambient grad mode


def plain_mul(x):
    return x * 2


def test_ambient_no_grad_is_respected():
    # called under an outer no_grad: output must not require grad
    with torch.no_grad():
        assert_same(plain_mul, rg(3), graphs=1)


def test_ambient_grad_mode_change_between_calls():
    # compile under grad mode, then call under no_grad (and back): the
    # compiled function must follow the ambient mode each time
    cf = compile_fn(plain_mul, backend="eager", fullgraph=True)
    x = rg(3)
    r1 = cf(x)
    with torch.no_grad():
        r2 = cf(x)
    r3 = cf(x)
    assert r1.requires_grad and not r2.requires_grad and r3.requires_grad
    assert_equal(plain_mul(x), r3)


def test_grad_mode_restored_after_compiled_call():
    cf = compile_fn(no_grad_block, backend="eager", fullgraph=True)
    cf(rg(3))
    assert torch.is_grad_enabled()
    with torch.no_grad():
        cf(rg(3))
        assert not torch.is_grad_enabled()
