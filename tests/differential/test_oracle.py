"""Oracle comparisons with torch.compile (torch's own, used only here in
tests): the implementation under test must capture the same number of
graphs as torch.compile and no more ops.

Cases are drawn from the construct files; they use only integer scalar
arguments (torch.compile lifts float arguments into the graph as inputs,
adding ops that armature folds away).
"""

import pytest

from helpers import CASE_ARGS, assert_matches_oracle, case, t, ti
from differential.test_arith_scalars import add_consts, augmented_scalars, large_int_fold, scalar_args, scalar_only
from differential.test_attributes_shapes import shape_arith_fold, shape_unpack, size_in_loop
from differential.test_containers import dict_build_get, list_build_append, list_comprehension
from differential.test_control_flow import for_break, for_range, for_zip, if_flag, while_on_shape
from differential.test_grad_modes import no_grad_partial
from differential.test_indexing_views import index_mixed_tuple, view_reshape
from differential.test_inlining_closures import call_helper, call_kwargs, closure_nested_two_levels
from differential.test_inplace_and_setitem import add_, setitem_row_from_tensor
from differential.test_operators import expression_tree, reflected_int_tensor
from differential.test_returns import ret_nested, ret_same_tensor_twice

CASES = [
    case(add_consts, t(3)),
    case(augmented_scalars, t(3)),
    case(large_int_fold, t(3)),
    case(scalar_args, t(3), 2, 5),
    case(scalar_only, 3, 4),
    case(shape_arith_fold, t(3, 4)),
    case(shape_unpack, t(3, 4)),
    case(size_in_loop, t(3, 2)),
    case(dict_build_get, t(3)),
    case(list_build_append, t(3)),
    case(list_comprehension, [t(3), t(3)]),
    case(for_break, t(3)),
    case(for_range, t(3)),
    case(for_zip, [t(3), t(3)], [t(3), t(3)]),
    case(if_flag, t(3), True),
    case(while_on_shape, t(8, 2)),
    case(no_grad_partial, t(3, requires_grad=True)),
    case(index_mixed_tuple, t(2, 3, 4)),
    case(view_reshape, t(3, 4)),
    case(call_helper, t(3)),
    case(call_kwargs, t(3)),
    case(closure_nested_two_levels, t(3)),
    case(add_, t(3)),
    case(setitem_row_from_tensor, t(3, 4), t(3, 4)),
    case(expression_tree, t(3), t(3), t(3)),
    case(reflected_int_tensor, ti(4, low=1, high=5)),
    case(ret_nested, t(3)),
    case(ret_same_tensor_twice, t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_matches_torch_compile_counts(fn, args, opts):
    assert_matches_oracle(fn, *args, ops="le", **opts)
