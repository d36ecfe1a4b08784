"""An identity-aware differential check, for programs whose results hold
objects as dict/set keys (tensors, modules, functions) or are objects built
in the frame.

``helpers.assert_same`` compares dict keys with ``==``, which cannot say
whether a returned key *is* the input tensor.  Here every result (and every
input after the call) is first turned into a description where each object
is named by what it is: the i-th input, an object already seen at some path
of the result, or a new object with its value.  The eager and the compiled
descriptions must be equal; graph counts are compared with torch.compile's
(the oracle, with a counting backend), over calls with fresh inputs, so a
recompile per call shows up as extra graphs.
"""
from __future__ import annotations

import types

import torch

from armature import torch_compat

from helpers import USING_TORCH, CountingBackend, compile_fn, reset

_SCALARS = (int, float, bool, str, bytes, complex, type(None), torch.dtype, torch.device)


def describe(obj, inputs, seen=None, path="out"):
    """A comparable description of ``obj``; see the module text."""
    if seen is None:
        seen = {}
    if type(obj) in _SCALARS:
        return obj
    for i, inp in enumerate(inputs):
        if obj is inp:
            return ("input", i)
    if id(obj) in seen:
        return ("same as", seen[id(obj)])
    seen[id(obj)] = path
    if isinstance(obj, torch.Tensor):
        return ("tensor", type(obj).__name__, tuple(obj.shape), obj.dtype, obj.requires_grad,
                obj.detach().flatten().tolist()[:64])
    if isinstance(obj, torch.nn.Module):
        return ("module", type(obj).__name__,
                [(k, describe(v, inputs, seen, f"{path}.{k}")) for k, v in obj.state_dict(keep_vars=True).items()])
    if isinstance(obj, torch.Size):
        return ("size", tuple(obj))
    if isinstance(obj, dict):
        out = [type(obj).__name__]
        if hasattr(obj, "default_factory"):
            out.append(describe(obj.default_factory, inputs, seen, f"{path}.default_factory"))
        out.append([(describe(k, inputs, seen, f"{path}.key{i}"), describe(v, inputs, seen, f"{path}[{i}]"))
                    for i, (k, v) in enumerate(obj.items())])
        if type(obj).__dict__.get("__dict__") is not None or vars_of(obj):
            out.append(sorted((k, describe(v, inputs, seen, f"{path}.{k}")) for k, v in vars_of(obj).items()))
        return tuple(out)
    if isinstance(obj, (set, frozenset)):
        # a set's order depends on hashes (addresses for objects): compare sorted descriptions
        return (type(obj).__name__, sorted(repr(describe(k, inputs, seen, f"{path}.elem")) for k in obj))
    if isinstance(obj, (list, tuple)):
        out = (type(obj).__name__, [describe(v, inputs, seen, f"{path}[{i}]") for i, v in enumerate(obj)])
        return out + (sorted((k, describe(v, inputs, seen, f"{path}.{k}")) for k, v in vars_of(obj).items()),)
    if isinstance(obj, types.GenericAlias) or type(obj).__module__ == "typing":
        return ("typing", repr(obj))
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
        return ("callable", getattr(obj, "__qualname__", repr(obj)),
                getattr(obj, "__code__", None) and obj.__code__.co_firstlineno)
    if hasattr(obj, "__dict__"):
        return ("object", type(obj).__qualname__,
                sorted((k, describe(v, inputs, seen, f"{path}.{k}")) for k, v in vars(obj).items()))
    return ("value", repr(obj))


def vars_of(obj) -> dict:
    try:
        return dict(vars(obj))
    except TypeError:
        return {}


def _run(fn, inputs):
    try:
        return fn(*inputs), None
    except Exception as e:  # noqa: BLE001 - exceptions are compared
        return None, e


def check_identity(fn, make_inputs, calls=2, fullgraph=False, graphs=None, observe=None):
    """Run ``fn`` eagerly and compiled on fresh inputs from ``make_inputs()``
    for ``calls`` calls; compare descriptions of the results and of the
    inputs afterwards (``observe(result, inputs)`` may pick what to compare,
    for results that hold fresh random state).  Returns the counting backend."""
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter, fullgraph=fullgraph)
    for call in range(calls):
        torch.manual_seed(call)
        e_in = make_inputs()
        torch.manual_seed(call)
        c_in = make_inputs()
        torch.manual_seed(100 + call)
        e_out, e_exc = _run(fn, e_in)
        torch.manual_seed(100 + call)
        c_out, c_exc = _run(compiled, c_in)
        if e_exc is not None or c_exc is not None:
            assert type(c_exc) is type(e_exc) and str(c_exc) == str(e_exc), \
                f"call {call}: eager raised {e_exc!r}, compiled {c_exc!r}"
            continue
        if observe is not None:
            e_out, c_out = observe(e_out, e_in), observe(c_out, c_in)
        e_d = describe((e_out, list(e_in)), e_in)
        c_d = describe((c_out, list(c_in)), c_in)
        assert e_d == c_d, f"call {call}:\n eager:    {e_d}\n compiled: {c_d}"
    if graphs is not None:
        assert counter.frame_count == graphs, f"captured {counter.frame_count} graphs, expected {graphs}"
    return counter


def oracle_graphs(fn, make_inputs, calls=2, fullgraph=False):
    """torch.compile's graph count over ``calls`` calls on fresh inputs
    (None where its fullgraph compile fails)."""
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, backend=counter, fullgraph=fullgraph)
        for call in range(calls):
            torch.manual_seed(call)
            inputs = make_inputs()
            try:
                compiled(*inputs)
            except Exception:  # noqa: BLE001
                if fullgraph:
                    return None
    finally:
        torch._dynamo.reset()
    return counter.frame_count


#: cases that torch.compile before 2.13 (``torch_compat.OLD_ORACLE``; seen
#: with torch 2.11 on CPython 3.12) does not compile whole where 2.13+ and
#: armature do: it breaks the graph (ids of objects made in the frame: 3 and
#: 6 graphs), skips the frame (namedtuple defaults, an id()-deduplicating
#: set: 0 graphs) or fails fullgraph (a nested function's attributes or a
#: nested function as a dict key, attributes of a tuple subclass).  On such a
#: torch the case is checked against eager, and ``fullgraph=True``, alone.
OLD_ORACLE_DIFFERS = frozenset({"nested_function_setattr", "id_dict_keys", "id_of_closure_objects",
                                "id_seen_dedupe", "nested_function_keys", "namedtuple_defaults",
                                "tuple_subclass",
                                # (test_list_subclasses_passed_in: torch 2.11 fails fullgraph on
                                # list-subclass indexing, breaks on a tuple subclass's method)
                                "index_len_bool", "tuple_subclass_passed_in"})


def check_against_oracle(fn, make_inputs, calls=2, fullgraph_ok=True, fewer_than_oracle=None):
    """The differential check, then graph counts equal to torch.compile's;
    with ``fullgraph_ok``, torch.compile's fullgraph succeeds and so must
    ours (``fullgraph=True``).  ``fewer_than_oracle=(ours, why)`` states a
    case where armature captures ``ours`` graphs and torch.compile more (it
    recompiles where armature does not): the oracle's count is still
    measured and must be larger.  Cases in ``OLD_ORACLE_DIFFERS`` on an old
    torch skip the oracle (above)."""
    if torch_compat.OLD_ORACLE and fn.__name__ in OLD_ORACLE_DIFFERS:
        reset()
        check_identity(fn, make_inputs, calls)
        if fullgraph_ok:
            reset()
            check_identity(fn, make_inputs, calls, fullgraph=True)
        reset()
        return
    expected = oracle_graphs(fn, make_inputs, calls)
    reset()
    counter = check_identity(fn, make_inputs, calls)
    if not USING_TORCH:
        if fewer_than_oracle is not None:
            ours, _why = fewer_than_oracle
            assert counter.frame_count == ours and expected > ours, \
                f"captured {counter.frame_count} graphs (stated {ours}), torch.compile {expected}"
        else:
            assert counter.frame_count == expected, \
                f"captured {counter.frame_count} graphs, torch.compile {expected}"
    if fullgraph_ok:
        assert oracle_graphs(fn, make_inputs, calls, fullgraph=True) is not None, \
            "torch.compile's fullgraph fails: pass fullgraph_ok=False"
        reset()
        check_identity(fn, make_inputs, calls, fullgraph=True)
    reset()
