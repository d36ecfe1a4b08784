"""Leaving a traced region: the residual code after the graph call.

Phase 1 reads every value the exit needs (side-effect operands, the return
value, the saved stack and locals of a graph break) into temporaries; phase
2 writes the side effects back in program order.  Only then does control
continue: return, or the break's native instruction and the resume call.
"""
from __future__ import annotations

from typing import Any

import torch

from .. import effects as fx
from ..runtime import replay
from ..values.base import NULL, Value
from .emitter import Emitter, _Temp


def emit_side_effects(ctx, out: Emitter, preload: list[Value]) -> list[_Temp]:
    """Phase 1 for ``preload`` and every effect operand, then phase 2.
    Returns the temporaries holding ``preload``."""
    pre = [out.materialize(v) for v in preload]
    plans: list[tuple[Any, tuple]] = []
    for rec in list(ctx.effects.log):  # (realizing a lazy list may edit the log)
        if isinstance(rec, fx.AttrStore):
            obj, val = out.materialize(rec.obj), out.materialize(rec.value)
            fn = replay.store_type_attr if rec.on_type else (
                replay.store_dict_item if rec.via_dict else (
                    replay.module_setattr if rec.via_module else replay.store_attr))
            plans.append((fn, (obj, rec.name, val)))
        elif isinstance(rec, fx.AttrDelete):
            obj = out.materialize(rec.obj)
            fn = replay.delete_type_attr if rec.on_type else (
                replay.delete_dict_item if rec.via_dict else (
                    replay.module_delattr if rec.via_module else replay.delete_attr))
            plans.append((fn, (obj, rec.name)))
        elif isinstance(rec, fx.MethodCall):
            obj = out.materialize(rec.obj)
            args = tuple(out.materialize(a) for a in rec.args)
            kwargs = {k: out.materialize(v) for k, v in rec.kwargs.items()}
            plans.append((replay.call_method, (obj, rec.name, tuple(kwargs)) + args + tuple(kwargs.values())))
        elif isinstance(rec, fx.DictReplace):
            plans.append((replay.replace_instance_dict, (out.materialize(rec.obj), out.materialize(rec.new))))
        elif isinstance(rec, fx.ContainerMutated):
            c = rec.container
            target = _materialize_source(out, c)
            from ..values.containers.containers import DictValue, SetValue, _address_ordered
            from ..values.containers.keys import has_value_keys
            if isinstance(c, SetValue) and c.recipe is not None and c.recipe.start[0] == "real" \
                    and any(_address_ordered(k) for k in c.recipe.start[2] | c.items):
                # objects hashed by identity: eager's operations, in order, on the real set
                from ..values.containers import set_order
                vals, steps = set_order.emit_steps_operand(out, c)
                plans.append((set_order.replay_into, (target, vals, steps)))
            elif isinstance(c, SetValue):
                plans.append((replay.replace_set, (target, _keys_operand(out, c.items))))
            elif isinstance(c, DictValue):
                keys = _keys_operand(out, c.items) if has_value_keys(c.items) else tuple(c.items)
                for v in c.items.values():
                    out.reconstruct(v)
                out.instr("BUILD_TUPLE", len(c.items))
                vals = out.new_temp()
                out.instr("STORE_FAST", vals.name)
                plans.append((replay.replace_dict, (target, keys, vals)))
            else:
                for v in c.items:
                    out.reconstruct(v)
                out.instr("BUILD_LIST", len(c.items))
                vals = out.new_temp()
                out.instr("STORE_FAST", vals.name)
                plans.append((replay.replace_list, (target, vals)))
        elif isinstance(rec, fx.ListAppend):
            c = rec.container
            target = _materialize_source(out, c)
            for v in c.appended:
                out.reconstruct(v)
            out.instr("BUILD_TUPLE", len(c.appended))
            vals = out.new_temp()
            out.instr("STORE_FAST", vals.name)
            plans.append((replay.extend_list, (target, vals)))
        elif isinstance(rec, fx.GlobalStore):
            if rec.value is None:
                plans.append((replay.delete_global, (rec.globals_dict, rec.name)))
            else:
                plans.append((replay.store_global, (rec.globals_dict, rec.name, out.materialize(rec.value))))
        elif isinstance(rec, fx.CellStore):
            cell = out.new_temp()
            rec.cell.cell_source().emit(out)
            out.instr("STORE_FAST", cell.name)
            if rec.value is None:
                plans.append((replay.clear_cell, (cell,)))
            else:
                plans.append((replay.set_cell, (cell, out.materialize(rec.value))))
        else:  # pragma: no cover
            raise AssertionError(rec)
    for fn, operands in plans:
        out.call_helper(fn, *operands)
    return pre


def _keys_operand(out: Emitter, keys) -> Any:
    """The keys of a dict or set written back: a constant, or (objects
    among them, values/containers/keys.py) a tuple rebuilt into a temporary."""
    from ..values.containers.keys import emit_key, has_value_keys
    if not has_value_keys(keys):
        return frozenset(keys) if isinstance(keys, set) else tuple(keys)
    for k in keys:
        emit_key(out, k)
    out.instr("BUILD_TUPLE", len(keys))
    t = out.new_temp()
    out.instr("STORE_FAST", t.name)
    return t


def _materialize_source(out: Emitter, value: Value) -> _Temp:
    t = out.new_temp()
    value.source.emit(out)
    out.instr("STORE_FAST", t.name)
    return t


def emit_grad_mode(ctx, out: Emitter) -> None:
    """Leave the global grad mode as the traced code left it (backends such
    as aot_autograd do not replay ``_set_grad_enabled`` as a global effect)."""
    if ctx.grad_enabled != ctx.initial_grad_enabled:
        out.call_helper(torch._C._set_grad_enabled, ctx.grad_enabled)


def emit_return(ctx, out: Emitter, result: Value) -> None:
    (ret,) = emit_side_effects(ctx, out, [result])
    emit_grad_mode(ctx, out)
    out.instr("LOAD_FAST", ret.name)
    out.instr("RETURN_VALUE")


def push_stack(out: Emitter, temps: list) -> None:
    """Rebuild part of a traced frame's real stack (already in the running
    version's layout: its NULLs stay where they were)."""
    for t in temps:
        if t is NULL:
            out.native("PUSH_NULL")
        else:
            out.instr("LOAD_FAST", t.name)
