"""Speculated checks: a data-dependent branch whose other side only raises.

``if not torch._is_all_true(valid): raise ValueError(...)`` (the argument
validation of every ``torch.distributions`` object), ``assert (x > 0).all()``,
``if torch.isnan(loss): raise FloatingPointError``: the branch needs the
tensor's data, so it would be a graph break, yet one side exists only to
raise, and on a run that does not raise the code simply goes on.
(torch.compile gets one graph for distributions by switching their
validation off for the whole process on first use, which changes what
eager code does; armature keeps the check.)

While tracing, such a branch is *assumed* to go the way that does not raise
(:func:`branch_truth`): the condition tensor becomes an extra output of the
graph, and the graph's call (:class:`CheckedGraph`) checks it right away,
before anything else happens (no side effect replayed, no native
instruction run).  If the assumption is wrong, or the graph itself fails
(the ops after the check meet the data it rejects: an index out of range),
the entry raises :class:`SpeculationMissed`, and :func:`speculating_run`
runs the original function (or resume function) as Python from its start
with the same arguments: it takes the same path up to the branch and raises
eager's exception with eager's message.

That rerun is only faithful when running the graph first left no trace, so
an entry keeps its assumptions only if its graph mutates no input in place
(a graph that draws random numbers from torch's default CPU generator has
the generator's state saved before the call and restored before a rerun;
one drawing from a generator of its own is refused), runs no collective,
builds no module in its setup (values/nn/fresh_modules.py), and runs on the
CPU (on an accelerator, a kernel meeting the rejected data may fail with a
device-side assert, which poisons the device); otherwise the
frame is traced again without speculation (:class:`SpeculationRefused`) and
the branch is a graph break as before.  Not in exported programs (no Python
to rerun) nor in sandbox traces (their graphs are not the entry's).

Which side "only raises" is a heuristic on the bytecode (:func:`_raises`);
a wrong guess costs speed, never correctness, since a missed assumption
always reruns as Python.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..diagnostics.errors import ArmatureError
from ..values.tensors.deferred_truth import DeferredTruth

#: how far along a branch side to look for its ``raise``
_SCAN_LIMIT = 80
#: instructions that end the straight run of a raising side without raising
_LEAVES = frozenset({"RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "FOR_ITER", "JUMP_BACKWARD",
                     "JUMP_BACKWARD_NO_INTERRUPT", "RERAISE", "SEND", "END_FOR"})


class SpeculationMissed(Exception):
    """Raised by a transformed function whose assumed branch went the other
    way at run time (caught by :func:`speculating_run`)."""


class SpeculationRefused(ArmatureError):
    """The trace assumed branches but its graph cannot be rerun as Python
    without a trace (it mutates inputs, draws random numbers...): trace the
    frame again without assumptions."""


@dataclass
class Assumption:
    """One assumed branch: ``bool(value)`` must be ``expected``."""
    node: torch.fx.Node
    expected: bool
    where: str   # "file:line: source"

    def describe(self) -> str:
        return f"{self.where} (assumed {'true' if self.expected else 'false'}; checked after the graph)"


def branch_truth(f, inst, value, jump_if: bool) -> bool:
    """The truth of ``value`` for ``POP_JUMP_IF_<jump_if>`` at ``inst``: a
    tensor (or a deferred ``bool()`` of one) whose one side only raises is
    assumed to avoid that side."""
    from ..values.tensors.tensor import TensorValue
    tensor, negated = (value.tensor, value.negated) if isinstance(value, DeferredTruth) else (value, False)
    if isinstance(tensor, TensorValue) and _may_speculate(f.ctx, tensor):
        on_jump = _raises(f, f.index_of[inst.argval])
        on_fall = _raises(f, f.ip)
        if on_jump != on_fall:
            truth = jump_if if on_fall else not jump_if
            loc = f.location()
            where = f"{loc.filename}:{loc.lineno}: {loc.source_line}"
            f.ctx.assumptions.append(Assumption(tensor.node, truth != negated, where))
            return truth
    return value.truth(f)


def deferred_truth(f, value) -> "DeferredTruth | None":
    """``bool(value)`` left undecided, where the result goes straight to a
    conditional jump (through ``not`` and returns from inlined functions:
    :func:`_goes_to_a_jump`), so a branch may assume it; anything else it
    could meet (a comparison, arithmetic, a container) decides it now."""
    from ..values.tensors.tensor import TensorValue
    if isinstance(value, TensorValue) and _may_speculate(f.ctx, value) and _goes_to_a_jump(f):
        return DeferredTruth(value)
    return None


_PASS_THROUGH = frozenset({"UNARY_NOT", "TO_BOOL", "NOP", "CACHE"})


def _goes_to_a_jump(f) -> bool:
    """Whether the value a call of frame ``f`` just produced reaches a
    POP_JUMP_IF_TRUE/FALSE with only ``not``s and returns in between."""
    while f is not None:
        insts, i = getattr(f, "instructions", None), getattr(f, "ip", None)
        current = getattr(f, "current", None)
        if insts is None or current is None or not current.opname.startswith("CALL"):
            return False   # (the value comes from a call made by a bytecode CALL, not a dunder or a builtin)
        while i < len(insts) and insts[i].opname in _PASS_THROUGH:
            i += 1
        if i >= len(insts):
            return False
        name = insts[i].opname
        if name.startswith("POP_JUMP") and name.endswith(("IF_TRUE", "IF_FALSE")):
            return True
        if name != "RETURN_VALUE":
            return False
        f = f.parent   # (its CALL is the current instruction; what follows takes the value)
    return False


def _may_speculate(ctx, value) -> bool:
    if not getattr(ctx, "speculate", False) or getattr(ctx.graph, "is_sandbox", False):
        return False
    if getattr(ctx.graph.fake_mode, "export", False) or getattr(ctx, "auditing_construction", False):
        return False
    numel = value.fake.numel()
    return not isinstance(numel, torch.SymInt) and numel == 1 and value.fake.device.type != "meta"


def _raises(f, index: int) -> bool:
    """Whether the code from instruction ``index`` runs straight into a
    ``raise`` (following forward unconditional jumps; any other branch,
    loop, return or yield first: no)."""
    insts = f.instructions
    for _ in range(_SCAN_LIMIT):
        if index >= len(insts):
            return False
        inst = insts[index]
        name = inst.opname
        if name == "RAISE_VARARGS":
            return inst.arg >= 1
        if name in _LEAVES or "JUMP_IF" in name or name.startswith("POP_JUMP"):
            return False
        if name == "JUMP_FORWARD":
            index = f.index_of[inst.argval]
            continue
        index += 1
    return False


def validate(ctx) -> None:
    """At the end of a trace with assumptions: raise SpeculationRefused
    unless rerunning the piece as Python after its graph ran is faithful."""
    if not ctx.assumptions:
        return
    from ..graph.output_graph import _is_mutation
    from ..values.nn.modules import _draws_random_numbers
    graph = ctx.graph
    if not graph.has_ops():
        raise SpeculationRefused("no graph to check the condition in")
    if ctx.__dict__.get("new_modules"):
        raise SpeculationRefused("the setup builds modules")
    ctx.speculation_restores_rng = _draws_random_numbers(graph)
    # placeholders and get_attr constants (parameters and buffers read as attributes)
    inputs = [n.meta.get("val") for n in graph.graph.nodes if n.op in ("placeholder", "get_attr")]
    for node in graph.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and val.device.type != "cpu":
            # an accelerator's kernel meeting the data the check rejects may
            # fail with a device-side assert, which poisons the device
            raise SpeculationRefused("the graph runs on an accelerator")
        if node.op not in ("call_function", "call_method"):
            continue
        if ctx.speculation_restores_rng and isinstance(node.kwargs.get("generator"), (torch.Generator, torch.fx.Node)):
            raise SpeculationRefused("the graph draws from a generator of its own")
        if "c10d" in str(node.target) or "distributed" in (getattr(node.target, "__module__", None) or ""):
            raise SpeculationRefused("the graph runs a collective")
        if _is_mutation(node.op, node.target, node.kwargs):
            target = node.kwargs.get("out", node.args[0] if node.args else None)
            val = target.meta.get("val") if isinstance(target, torch.fx.Node) else None
            if not isinstance(val, torch.Tensor) or any(
                    isinstance(i, torch.Tensor) and torch._C._is_alias_of(val, i) for i in inputs):
                raise SpeculationRefused("the graph mutates an input in place")


def plan_checks(ctx, body) -> tuple | None:
    """Add the assumed conditions to the graph's outputs: ((output index,
    expected truth), ...), or None without assumptions."""
    if not ctx.assumptions:
        return None
    return tuple((body.graph_output_index(a.node), a.expected) for a in ctx.assumptions)


class CheckedGraph:
    """The compiled graph of an entry with assumptions: a call whose
    assumption does not hold, or that fails (the ops after an assumed
    check may meet the very data the check rejects: an index out of range
    where eager raised a ValueError first), raises SpeculationMissed."""

    def __init__(self, compiled, plan: tuple, restores_rng: bool = False):
        self.compiled, self.plan, self.restores_rng = compiled, plan, restores_rng

    def __call__(self, *inputs):
        state = torch.random.get_rng_state() if self.restores_rng else None
        try:
            outputs = self.compiled(*inputs)
        except Exception as e:   # noqa: BLE001  (the rerun raises eager's own error, if any)
            self._rewind(state)
            raise SpeculationMissed from e
        for index, expected in self.plan:
            if bool(outputs[index]) is not expected:
                self._rewind(state)
                raise SpeculationMissed
        return outputs

    @staticmethod
    def _rewind(state) -> None:
        """The rerun draws eager's random numbers: from where the graph started."""
        if state is not None:
            torch.random.set_rng_state(state)


def speculating_run(run):
    """The entry's run: a missed assumption reruns the function as Python."""
    from ..names import FN_ARG

    def run_or_rerun(*args, **kwargs):
        try:
            return run(*args, **kwargs)
        except SpeculationMissed:
            fn = kwargs.pop(FN_ARG)   # (kwargs is this call's own dict)
            return fn(*args, **kwargs)
    run_or_rerun.__wrapped__ = run
    return run_or_rerun
