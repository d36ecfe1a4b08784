"""State shared by every frame of one trace: the graph, guards, the value
cache (one Value per real object) and global modes such as grad mode."""
from __future__ import annotations

import contextlib
import threading
import types
from typing import Any

import torch

from ..config import Config
from ..guards.ambient_autocast import ambient_autocast_guard
from ..guards.guard import Guard, Kind


class GuardSet:
    def __init__(self):
        self._by_key: dict[tuple, Guard] = {}
        #: sources whose tensor guards are not installed (the parameters of
        #: FSDP-managed modules under config.skip_fsdp_guards)
        self.unguarded_tensors: set = set()

    def add(self, guard: Guard) -> None:
        if guard.kind is Kind.TENSOR_MATCH and guard.source in self.unguarded_tensors:
            return
        if _made_in_frame(guard.source):
            # a module the transformed function builds itself
            # (values/nn/fresh_modules.py): true by construction, and out of
            # the guard function's reach
            return
        if guard.kind is Kind.SAME_OBJECT and _made_in_frame(guard.expected):
            return
        if guard.kind is Kind.DISTINCT and any(_made_in_frame(s) for s in guard.expected):
            kept = [s for s in guard.expected if not _made_in_frame(s)]
            if len(kept) < 2:
                return
            guard = Guard(Kind.DISTINCT, None, kept)
        self._by_key.setdefault(guard.key(), guard)

    def __iter__(self):
        return iter(self._by_key.values())

    def __len__(self):
        return len(self._by_key)

    def as_list(self) -> list[Guard]:
        return list(self._by_key.values())


def _made_in_frame(source) -> bool:
    return source is not None and hasattr(source, "root") and getattr(source.root(), "made_in_frame", False)


def torch_function_mode_guard(depth: int) -> Guard:
    """The number of active ``TorchFunctionMode``s (``with mode:``, also
    ``with torch.device(...)``).  The modes themselves are modelled
    (values/tensors/torch_function.py): each is guarded by type, and by what the
    traced ``__torch_function__`` reads of it."""
    g = Guard(Kind.GLOBAL_STATE, None, text=f"___tf_mode_depth() == {depth}",
              consts={"___tf_mode_depth": torch._C._len_torch_function_stack},
              label=f"{depth} torch function modes are active")
    g.modes_active = depth > 0
    return g


_AMBIENT = threading.local()


@contextlib.contextmanager
def compiling_state():
    """The global state a compile (trace and backend) runs in.

    Inference mode is off while compiling, as under torch.compile: fake
    tensors made from inference tensors are ordinary tensors
    (``disable_inference_mode_for_fake_prop``), and a call made under
    ``torch.inference_mode()`` is traced (and its graph compiled) with grad
    off instead, which is what inference mode means for autograd.  The
    compiled code runs under the caller's real inference mode, which the
    entry guards (``ambient_modes`` is what the trace sees).  Saved-tensor
    hooks are deferred (values/tensors/saved_tensor_hooks.py)."""
    from torch._subclasses.meta_utils import disable_inference_mode_for_fake_prop
    from ..values.tensors import saved_tensor_hooks
    inference = torch.is_inference_mode_enabled()
    outer = getattr(_AMBIENT, "state", None)
    _AMBIENT.state = (inference, torch.is_grad_enabled())
    try:
        # (the caller's TorchFunctionModes are modelled by the trace: running
        # fake ops must not call them for real)
        # (saved-tensor hooks are not called on the tensors a compile makes)
        with disable_inference_mode_for_fake_prop(), torch._C.DisableTorchFunction(), saved_tensor_hooks.deferred():
            if inference:
                with torch.inference_mode(False), torch.no_grad():
                    yield
            else:
                yield
    finally:
        _AMBIENT.state = outer


def ambient_modes() -> tuple[bool, bool]:
    """(inference mode, grad mode) of the call being compiled."""
    v = getattr(_AMBIENT, "state", None)
    return (torch.is_inference_mode_enabled(), torch.is_grad_enabled()) if v is None else v


class TraceContext:
    def __init__(self, fn: types.FunctionType, config: Config, fullgraph: bool = False):
        from ..graph.output_graph import OutputGraph
        self.fn = fn
        self.config = config
        self.fullgraph = fullgraph
        #: config.module_parameters forced for this function (driver/native_frames.py)
        self.module_parameters_override: str | None = None
        #: config.patch regions entered by the trace: what leaving them restores
        self._config_patches: list[dict] = []
        from ..names import generated_prefix
        self.graph = OutputGraph(scalar_outputs=self.capture_scalars,
                                 dynamic_output_shapes=self.capture_dynamic_output_shapes,
                                 name_prefix=generated_prefix(fn.__code__))
        self.guards = GuardSet()
        #: the file of every code object traced or inlined (the persistent
        #: cache's key covers them: driver/persistent_cache.py); file names,
        #: not the code objects, whose hash walks their bytecode on every frame
        self.traced_files: set = set()
        #: code objects traced whose file is not a file (``<string>``: a dataclass's
        #: generated ``__init__``, code made by exec): the cache stores an entry
        #: only when each is the code of a function its guards name (checked by
        #: code hash on load: driver/persist_codec.py)
        self.unfiled_code: list = []
        from ..effects import SideEffects
        self.effects = SideEffects()
        self.value_cache: dict[int, tuple[Any, Any]] = {}
        #: id(real instance dict) -> the ObjectValue it belongs to, so that
        #: the same dict reached another way is that object's __dict__
        self.instance_dict_owners: dict = {}
        #: sources whose Python numbers stay symbolic (automatic dynamic)
        self.dynamic_sources = frozenset()
        from ..graph.dynamic import DynamicPolicy
        #: what may be dynamic in this trace (graph/dynamic.py decides)
        self.policy = DynamicPolicy()
        #: inference mode as the traced code sees it (``torch.inference_mode``
        #: blocks); the real mode stays off while tracing (compiling_state)
        self.initial_inference_enabled, self.initial_grad_enabled = ambient_modes()
        self.inference_enabled = self.initial_inference_enabled
        #: where the regions a graph break cannot split were entered, oldest
        #: first: a TorchFunctionMode the trace pushed, an inference_mode
        #: block that switched the mode.  Each is a one-item list holding the
        #: root frame's (instruction index, from_callee); a break met inside
        #: moves to the oldest (Frame._annotate)
        self.unsplittable: list = []
        #: branches assumed to avoid a side that only raises (trace/speculation.py);
        #: ``speculate`` is switched off when the frame is traced again without them
        self.speculate = True
        self.assumptions: list = []
        self.grad_enabled = self.initial_grad_enabled
        #: the grad mode the graph runs under at this point: grad_enabled,
        #: except that inside inference mode autograd records nothing (under
        #: a call's own inference mode that needs no node in the graph)
        self.graph_grad_enabled = self.grad_enabled and not self.inference_enabled
        self._real_grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(self.graph_grad_enabled)
        self.graph.inference_mode = self.inference_enabled
        #: the trace entered inference mode itself: some tensors of the graph
        #: are inference tensors only in eager (values/tensors/inference.py)
        self.inference_regions = False
        self.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"___is_grad_enabled() is {self.grad_enabled}",
                              consts={"___is_grad_enabled": torch.is_grad_enabled},
                              label=f"grad mode is {'enabled' if self.grad_enabled else 'disabled'}"))
        on = self.inference_enabled
        self.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"___is_inference_mode_enabled() is {on}",
                              consts={"___is_inference_mode_enabled": torch.is_inference_mode_enabled},
                              label=f"inference mode is {'enabled' if on else 'disabled'}"))
        from ..values.tensors.torch_function import state as torch_function_state
        self.guards.add(torch_function_mode_guard(torch_function_state(self).entry_depth))
        self.guards.add(ambient_autocast_guard())
        dd = torch.get_default_dtype()
        self.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___default_dtype() is ___dd",
                              consts={"___default_dtype": torch.get_default_dtype, "___dd": dd},
                              label=f"default dtype is {str(dd).replace('torch.', '')}"))

    def sandbox(self) -> "TraceContext":
        """A context for tracing code speculatively (the forward and
        backward of a custom autograd.Function): its own graph (sharing the
        fake mode and ShapeEnv, so the trace's fake tensors can be used),
        guards, side-effect log and value cache; nothing it does reaches
        this trace unless the caller copies it (its guards)."""
        from ..effects import SideEffects
        sub = object.__new__(TraceContext)
        sub.__dict__.update(self.__dict__)
        sub.graph = self.graph.sandbox()
        sub.guards = GuardSet()
        sub.effects = SideEffects()
        sub.value_cache = {}
        sub.instance_dict_owners = {}
        sub.inference_regions = False
        return sub

    def make_frame(self, fn, bound: dict, parent):
        """A frame that runs the function Value ``fn`` with the arguments
        ``bound`` (name -> Value), a child of ``parent``, in this context (a
        sandbox's own, for speculative code).  Values start frames through
        the context they are handed: the tracer sits above them."""
        from .inline import make_frame
        return make_frame(self, fn, bound, parent)

    def set_grad_enabled(self, mode: bool) -> None:
        """Switch grad mode for the rest of the trace and record the switch
        in the graph, as Dynamo does."""
        self.grad_enabled = mode
        self._sync_graph_grad()

    def enter_unsplittable(self, origin: tuple[int, bool]) -> list:
        """Open a region a break cannot split; the token closes it."""
        token = [origin]
        self.unsplittable.append(token)
        return token

    def leave_unsplittable(self, token: list) -> None:
        for i in range(len(self.unsplittable) - 1, -1, -1):
            if self.unsplittable[i] is token:
                del self.unsplittable[i]
                return

    def set_inference_mode(self, mode: bool, grad: bool) -> None:
        """Enter or leave ``torch.inference_mode`` in the trace (``grad`` is
        the grad mode that comes with it: entering ``inference_mode(m)``
        sets grad mode to ``not m``; leaving restores the previous one).
        The graph runs the region with grad off, like ``no_grad``: tensors
        made there are marked inference tensors (``values/tensors/inference.py``)
        and those that leave the graph become inference tensors at run time.
        Only a call made under inference mode runs under the real one."""
        self.inference_enabled = mode
        self.graph.inference_mode = mode
        if mode and not self.initial_inference_enabled:
            self.inference_regions = True
        self.set_grad_enabled(grad)

    def _sync_graph_grad(self) -> None:
        effective = self.grad_enabled and not self.inference_enabled
        if effective == self.graph_grad_enabled:
            return
        self.graph_grad_enabled = effective
        torch._C._set_grad_enabled(effective)
        g = self.graph
        g.graph.create_node("call_function", torch._C._set_grad_enabled, (effective,), {})
        g.op_count += 1
        g.switch_count += 1

    # --- options (read live, so a config.patch region in the code applies) --
    @property
    def capture_scalars(self) -> bool:
        """data-dependent scalars stay in the graph (unbacked symbols)"""
        return self.config.capture_scalar_outputs or self.fullgraph

    @property
    def capture_dynamic_output_shapes(self) -> bool:
        return self.config.capture_dynamic_output_shape_ops or self.fullgraph

    def patch_config(self, changes: dict) -> dict:
        """Enter a ``config.patch`` region of the traced code: the options
        hold for the rest of the trace until ``unpatch_config``."""
        saved = {k: getattr(self.config, k) for k in changes}
        for k, v in changes.items():
            setattr(self.config, k, v)
        self._config_patches.append(saved)
        self._sync_shape_env()
        return saved

    def unpatch_config(self, saved: dict) -> None:
        for k, v in saved.items():
            setattr(self.config, k, v)
        if self._config_patches and self._config_patches[-1] is saved:
            self._config_patches.pop()
        self._sync_shape_env()

    def _sync_shape_env(self) -> None:
        import dataclasses
        env = self.graph.shape_env
        if (env.allow_scalar_outputs, env.allow_dynamic_output_shape_ops) != \
                (self.capture_scalars, self.capture_dynamic_output_shapes):
            # (the settings are part of fake-tensor cache keys: replaced whole)
            env.settings = dataclasses.replace(env.settings, allow_scalar_outputs=self.capture_scalars,
                                               allow_dynamic_output_shape_ops=self.capture_dynamic_output_shapes)

    def restore_global_state(self) -> None:
        torch._C._set_grad_enabled(self._real_grad)
        while self._config_patches:   # a trace that stopped inside a config.patch region
            self.unpatch_config(self._config_patches[-1])

    def guard_global_hooks(self, only=None) -> None:
        m = torch.nn.modules.module
        names = only or ("_global_forward_hooks", "_global_forward_pre_hooks",
                         "_global_backward_hooks", "_global_backward_pre_hooks")
        for name in names:
            self.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"not ___{name}",
                                  consts={f"___{name}": getattr(m, name)},
                                  label=f"no {name.strip('_').replace('_', ' ')} are registered"))

    def add_alias_guards(self) -> None:
        """If the graph mutates its inputs, distinct tensor inputs must stay
        distinct objects (an aliased call would mutate what another input
        reads); one guard checks them all.  Likewise for Python containers
        and objects from outside the frame: if the frame mutates one, the
        outside ones it saw as distinct must stay distinct (writes to one
        Value are not seen through another)."""
        from ..guards.guard import Guard, Kind
        from ..values.functions.closure_aliasing import add_cell_alias_guards
        from ..values.tensors.symbolic import ScalarTensorSource
        add_cell_alias_guards(self)
        # (tensors made afresh per call, e.g. over an ndarray input, are never
        # the same object; values/numpy guards ndarrays' memory instead)
        inputs = [gi for gi in self.graph.tensor_inputs() if not isinstance(gi.source, ScalarTensorSource)
                  and not getattr(gi.source, "fresh_per_call", False)]
        if self.graph.mutates and len(inputs) >= 2:
            self.guards.add(Guard(Kind.DISTINCT, None, [gi.source for gi in inputs]))
        mutated = self.effects.mutated_values()
        if not mutated:
            return
        from ..values.containers.containers import DictValue, ListValue, SetValue
        from ..values.objects.objects import ObjectValue
        from ..values.nn.modules import ModuleValue
        kinds = (ListValue, DictValue, SetValue, ObjectValue)
        seen = [v for _, v in self.value_cache.values()
                if isinstance(v, kinds) and not isinstance(v, ModuleValue) and v.source is not None]
        touched_types = {v.python_type() for v in mutated}
        group = [v for v in seen if v.python_type() in touched_types]
        if len(group) >= 2 and any(v in mutated for v in group):
            self.guards.add(Guard(Kind.DISTINCT, None, [v.source for v in group]))
