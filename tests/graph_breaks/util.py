"""Shared helpers for the graph-break / side-effect tests.

``check_calls`` runs a function eagerly and compiled on two *independent*
states built by a factory (so module globals, user objects, classes and
closures can be compared, which ``helpers.assert_same`` cannot copy), calls
each several times and compares, after every call, the result (or the
exception, type and message) and a snapshot of the state.  It also makes
sure the compiled side really compiled: no frame ran as plain Python.
"""
from __future__ import annotations

import contextlib
import logging

import armature
from helpers import CountingBackend, assert_equal

FALLBACK_LOGGER = "armature.fallbacks"


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def collect_log(name):
    """Collect DEBUG records of one armature logger (works whether or not
    ARMATURE_LOGS enabled it)."""
    lg = logging.getLogger(name)
    h = _Collect()
    old = lg.level
    lg.addHandler(h)
    lg.setLevel(logging.DEBUG)
    try:
        yield h.messages
    finally:
        lg.removeHandler(h)
        lg.setLevel(old)


def _call(fn, args, kwargs):
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - compared with eager
        return None, e


def _same_exc(e, c, label, exc_match):
    if e is None:
        if c is not None:
            raise AssertionError(f"{label}: compiled raised {type(c).__name__}: {c} but eager did not") from c
        return
    assert c is not None, f"{label}: eager raised {e!r}, compiled did not raise"
    assert type(c) is type(e), f"{label}: compiled raised {type(c).__name__}({c}), eager {type(e).__name__}({e})"
    if exc_match == "exact":
        assert str(c) == str(e), f"{label}: message {str(c)!r} != eager {str(e)!r}"


def check_calls(fn, make_state, snapshot=None, *, calls=3, graphs=None, min_graphs=1,
                exc_match="exact", backend="eager", allow_fallback=False, args_of=None, kwargs=None):
    """Compare ``calls`` successive calls of ``fn`` eager vs compiled.

    make_state() -> state  builds fresh state (and resets any globals);
    args_of(state) -> args tuple for fn (default: state itself when a tuple,
    else (state,)); snapshot(state) -> a structure compared with assert_equal
    after every call (default: the args).
    graphs: exact number of graphs compiled over all calls; min_graphs: at
    least that many.  Returns (eager_results, compiled_results, counter).
    """
    kwargs = kwargs or {}
    if args_of is None:
        def args_of(s):
            return s if isinstance(s, tuple) else (s,)
    if snapshot is None:
        def snapshot(s):
            return list(args_of(s))

    eager = []
    st = make_state()
    for _ in range(calls):
        r, e = _call(fn, args_of(st), kwargs)
        eager.append((r, e, snapshot(st)))

    counter = CountingBackend(backend)
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        cf = armature.compile(fn, backend=counter)
        st = make_state()
        comp = []
        for _ in range(calls):
            r, e = _call(cf, args_of(st), kwargs)
            comp.append((r, e, snapshot(st)))

    for i, ((er, ee, es), (cr, ce, cs)) in enumerate(zip(eager, comp), start=1):
        label = f"call #{i}"
        _same_exc(ee, ce, label, exc_match)
        if ee is None:
            assert_equal(er, cr, f"out ({label})")
        assert_equal(es, cs, f"state ({label})")

    if not allow_fallback:
        assert not fallbacks, f"ran as plain Python: {fallbacks}"
    if graphs is not None:
        assert counter.frame_count == graphs, (
            f"captured {counter.frame_count} graphs, expected {graphs}:\n"
            + "\n".join(gm.code for gm in counter.graphs))
    elif min_graphs:
        assert counter.frame_count >= min_graphs, f"captured {counter.frame_count} graphs"
    return [x[0] for x in eager], [x[0] for x in comp], counter


def explain_fresh(fn, *args, **kwargs):
    """armature.explain after armature.reset(), so that resume functions
    compiled by earlier calls do not hide their graphs."""
    armature.reset()
    return armature.explain(fn)(*args, **kwargs)


def graph_count(fn, *args, **kwargs) -> int:
    """Graphs captured by one call, per armature.explain (fresh)."""
    return explain_fresh(fn, *args, **kwargs).graph_count


def dynamo_graph_count(fn, *args, **kwargs) -> int:
    import torch
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(fn)(*args, **kwargs).graph_count
    finally:
        torch._dynamo.reset()



def snap(obj, _depth=0):
    """A comparable deep snapshot: tensors cloned, containers rebuilt, user
    objects (and modules' plain attributes) as (class name, attributes)."""
    import torch
    if _depth > 8:
        return "..."
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(snap(v, _depth + 1) for v in obj) if type(obj) in (list, tuple) else \
            (type(obj).__name__, [snap(v, _depth + 1) for v in obj])
    if isinstance(obj, dict):
        return {k: snap(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return (type(obj).__name__, sorted(obj, key=repr))
    if isinstance(obj, torch.nn.Module):
        plain = {k: snap(v, _depth + 1) for k, v in vars(obj).items() if not k.startswith("_")}
        return (type(obj).__name__, plain, {k: snap(v) for k, v in obj.state_dict().items()})
    if isinstance(obj, type):
        return ("class", obj.__qualname__,
                {k: snap(v, _depth + 1) for k, v in vars(obj).items()
                 if not k.startswith("__") and isinstance(v, (int, float, str, list, dict, tuple, torch.Tensor))})
    if hasattr(obj, "__dict__") and not callable(obj) and type(obj).__module__ not in ("builtins",):
        attrs = {k: snap(v, _depth + 1) for k, v in sorted(vars(obj).items(), key=lambda kv: repr(kv[0]))}
        slots = {}
        for klass in type(obj).__mro__:
            for s in getattr(klass, "__slots__", ()):
                if s not in ("__dict__", "__weakref__") and hasattr(obj, s):
                    slots[s] = snap(getattr(obj, s), _depth + 1)
        return (type(obj).__qualname__, attrs, slots)
    if hasattr(type(obj), "__slots__") and not isinstance(obj, (int, float, str, bytes)):
        slots = {}
        for klass in type(obj).__mro__:
            for s in getattr(klass, "__slots__", ()):
                if hasattr(obj, s):
                    slots[s] = snap(getattr(obj, s), _depth + 1)
        return (type(obj).__qualname__, slots)
    return obj
