"""What a user can do about a graph break or a fallback: one table.

Every reason armature gives for splitting a frame (a graph break) or for
running a frame as Python (a fallback) is matched here against an ordered
table of patterns; the first rule that matches gives the hint.  The raise
site's own ``hint=`` is used only when no rule matches, and a generic hint
when neither exists, so every reason has one.  ``explain()``, the
``graph_breaks``/``fallbacks`` logs, the runner's summary and the HTML
report all call :func:`hint_for`, so a user reads the same advice
everywhere.  Adding a rule here improves all four.

A hint says which rewrite, API call or config option avoids the break, and
whether it is a known limitation of armature (``limitation``: the code is
fine, armature does not model it yet) rather than something every
compiler must break on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    #: short label used to group reasons in the summary and report
    category: str
    #: what to do about it, in one or two sentences
    text: str
    #: a known limitation of armature (torch.compile may well capture it)
    limitation: bool = False

    def __str__(self) -> str:
        tail = " (a known limitation of armature)" if self.limitation else ""
        return f"{self.text}{tail}"


def _rule(pattern: str, category: str, text: str, limitation: bool = False):
    return re.compile(pattern, re.IGNORECASE | re.DOTALL), Hint(category, text, limitation)


#: (pattern, hint), first match wins: specific rules before general ones.
RULES = (
    _rule(r"internal error", "armature bug",
          "this is a bug in armature, not in your code: the frame runs as Python. Please report it with "
          "the output of ARMATURE_LOGS=fallbacks", limitation=True),
    # --- asked for by the user -----------------------------------------------
    _rule(r"graph_break\(\) was called", "requested",
          "the code calls graph_break() (armature.graph_break, or the torch compiler helper of that name); remove the "
          "call to keep one graph"),
    _rule(r"marked armature\.disable|armature\.disable\(", "requested",
          "the callee is disabled (armature.disable / torch.compiler.disable) and runs as Python between "
          "two graphs; remove the decorator, or trace it anyway inside `with armature.dont_skip_tracing():`"),
    _rule(r"marked armature\.disallow_in_graph", "requested",
          "the callee is marked disallow_in_graph; undo it with armature.disallow_in_graph(fn, False)"),
    _rule(r"marked armature\.allow_in_graph, but is called with", "requested",
          "an allow_in_graph function takes tensors, numbers and constants only; pass those, or remove "
          "the mark so the call is traced"),
    # --- data-dependent: every compiler breaks here ---------------------------
    _rule(r"Tensor\.item\(\)|int\(\) of a tensor|float\(\) of a tensor|__int__\(\)|__float__\(\)|item\(\) of",
          "data-dependent",
          "reading a Python number out of a tensor needs its data; keep it a tensor (x.sum() instead of "
          "x.sum().item()), or set armature.config.capture_scalar_outputs = True (on with fullgraph=True) "
          "to keep it in the graph as a symbol"),
    _rule(r"truth value of a tensor|bool\(\) of a tensor|data-dependent control flow", "data-dependent",
          "a Python `if`/`while`/`and` on a tensor's value needs its data: the branch is evaluated for real "
          "and only the side taken is compiled. Use torch.where(cond, a, b) or torch.cond to keep both "
          "sides in one graph, or branch outside the compiled function"),
    _rule(r"data-dependent size or scalar|depends on tensor data|depends on its data|"
          r"using a tensor as an index", "data-dependent",
          "an output size or value depends on tensor data; set armature.config."
          "capture_dynamic_output_shape_ops = True (nonzero, masks) or capture_scalar_outputs = True, and "
          "tell armature facts with torch._check(...), e.g. torch._check(n >= 0)"),
    _rule(r"tolist\(\)", "data-dependent",
          "tolist() reads tensor data; keep the values in a tensor, or call tolist() outside the compiled "
          "function"),
    _rule(r"numpy|__array__", "leaves torch",
          "numpy code is not traced; keep the computation in torch ops inside the compiled function, or "
          "convert outside it"),
    # --- effects the graph cannot hold ----------------------------------------
    _rule(r"print\(\) writes output", "I/O",
          "print() runs as Python between two graphs; print outside the compiled function, print less "
          "often, or log tensors after the call returns"),
    _rule(r"logging|Logger\.", "I/O",
          "logging runs as Python between graphs; log outside the compiled function or guard the call "
          "with `if not torch.compiler.is_compiling():`"),
    _rule(r"Tensor\.backward\(\)|registering hooks|retain_grad|requires_grad_|autograd metadata",
          "autograd",
          "autograd calls (backward(), hooks, requires_grad_) run outside the graph; call them after the "
          "compiled forward returns"),
    _rule(r"changes global RNG state|rng_state|set_default_dtype|set_default_device|set_default_tensor_type|"
          r"may change global state", "global state",
          "calls that change torch's global state run as Python; make them once, outside the compiled "
          "function"),
    _rule(r"data_ptr|storage access|real state of an intermediate tensor", "memory",
          "real storage and pointers do not exist while tracing; read them outside the compiled function"),
    # --- armature not modelling something (yet) -------------------------------
    _rule(r"TorchFunctionMode|torch function mode|_push_on_torch_function_stack", "torch function modes",
          "enter and leave a torch function mode on the same side of the compiled call (both inside the "
          "compiled function, or `with mode:` around the call)"),
    _rule(r"tensor subclass", "tensor subclasses",
          "a subclass with __torch_dispatch__ is traced only as a traceable wrapper (it defines "
          "__tensor_flatten__/__tensor_unflatten__) and must be constructible in Python; otherwise pass plain "
          "tensors (t.as_subclass(torch.Tensor))", limitation=True),
    _rule(r"a C function armature does not know|implemented in C|the C (__call__|__getattribute__|"
          r"__setattr__|__delattr__|descriptor)", "C code",
          "armature does not run unknown C functions while tracing; if the call is pure, compute it "
          "before the compiled function and pass the result in, or wrap the caller in "
          "armature.allow_in_graph if it only takes and returns tensors", limitation=True),
    _rule(r"generator is still running|generator\.send|is a generator or coroutine|coroutine function",
          "generators",
          "generators that outlive the frame and coroutines are not compiled; consume the generator "
          "inside the compiled function (list(...)) or compile the function that consumes it",
          limitation=True),
    _rule(r"the bytecode instruction", "bytecode",
          "this bytecode instruction is not modelled yet; rewriting the statement (e.g. a class statement "
          "or `import` moved to module level) avoids it", limitation=True),
    _rule(r"importing .*not imported yet", "imports",
          "import the module at module level, so that importing has no side effects inside the compiled "
          "function"),
    _rule(r"inlining .* exceeds the depth limit", "recursion",
          "recursion deeper than armature.config.inline_depth_limit is not inlined; raise the limit or "
          "rewrite the recursion as a loop"),
    _rule(r"inference_mode|inference tensor", "inference mode",
          "enter torch.inference_mode() around the call of the compiled function rather than inside it, "
          "and keep graph breaks out of such blocks"),
    _rule(r"autograd\.Function|ctx\.|\.apply\(\)|\.backward returns|forward or backward", "autograd.Function",
          "the custom autograd.Function is called natively; pass tensors and constants to apply(), keep "
          "forward/backward free of side effects and outside reads", limitation=True),
    _rule(r"hooks? on|backward hooks|forward pre-hook", "module hooks",
          "backward hooks inside compiled code are not supported yet; register them on the compiled "
          "module's output after the call, or remove them while compiling", limitation=True),
    _rule(r"config\.patch", "config.patch",
          "patch armature.config around the call of the compiled function, and keep graph breaks out of "
          "a patched region"),
    _rule(r"set_stance", "stances",
          "call set_stance outside the compiled function (around the call)"),
    _rule(r"torch\.jit\.ScriptModule|TorchScript", "TorchScript",
          "TorchScript modules run as they are; call them outside the compiled function, or compile the "
          "Python module they were scripted from"),
    _rule(r"_set_grad_enabled\(\) called directly", "grad mode",
          "use `with torch.no_grad():` / `torch.set_grad_enabled(mode)` instead of calling "
          "torch._C._set_grad_enabled directly"),
    _rule(r"has hooks installed|(?-i:Lazy[A-Z]\w*)", "lazy modules",
          "run the model once eagerly before compiling it, so lazy modules create their parameters and "
          "remove their initialisation hooks"),
    _rule(r"__dict__", "instance dicts",
          "this use of an instance __dict__ (pop/clear, a dict shared by two objects, replacing it) is not "
          "modelled yet; read and write attributes with getattr/setattr/delattr instead", limitation=True),
    _rule(r"storing attribute|mutating|writing|assigning|deleting|custom __setattr__", "mutation",
          "this kind of mutation of outside state is not replayed yet; do it outside the compiled "
          "function, or return the new value and assign it after the call", limitation=True),
    _rule(r"lru_cache", "functools.lru_cache",
          "a cached call reads and fills its cache; call the undecorated function (fn.__wrapped__) inside "
          "compiled code", limitation=True),
    _rule(r"iterating <lazy|made outside the frame|next\(\) on <|iterating <\w+ object", "iterators",
          "an iterator made outside the compiled code (or carried across a graph break) is consumed "
          "natively; iterate over the container itself inside the compiled function, or move the graph "
          "break out of the loop", limitation=True),
    _rule(r"operator mod on Constant\(|formatting .* into a string|str\.format", "string formatting",
          "formatting strings from values not known while tracing (logging format strings, %-formatting "
          "of objects) runs as Python; format and log outside the compiled function"),
    _rule(r"_getframe|currentframe|looks at the frame", "frame introspection",
          "code that inspects its own frame (sys._getframe, inspect.currentframe, logging's caller lookup) "
          "runs as Python; log or inspect outside the compiled function"),
    _rule(r"creating the module .* after random numbers were drawn", "modules made in the frame",
          "its constructor draws random weights; built before the graph, as armature builds such modules, "
          "they would come from other random numbers than eager's, so the constructor runs natively at a "
          "graph break; build the module before drawing random numbers in the compiled function (or outside "
          "it) to keep one graph"),
    _rule(r"creating the module .*(in its constructor|its constructor|after the frame changed state|not an immutable "
          r"constant|__init__)", "modules made in the frame",
          "a user module made in the frame stays in the graph when its __init__ only builds the module "
          "(members, buffers, parameters) from constants and modules made in the frame; this one does more, so "
          "the constructor runs natively at a graph break; create the module outside the compiled function "
          "and pass it in, or move that out of its __init__, to keep one graph"),
    _rule(r"creating an instance of|creating the module|creating \w+, (which|a namedtuple)|TypeError constructing",
          "objects",
          "constructing this class inside compiled code is not modelled yet; create the object outside "
          "and pass it in", limitation=True),
    _rule(r"not known while tracing|not constants|not a constant", "values not known",
          "the call needs a value armature only knows at run time (tensor data, an object it cannot "
          "inspect); compute it before the compiled function and pass it in as an argument",
          limitation=True),
    _rule(r"raising <|(^|: )[A-Z]\w*(Error|Exception)\b|StopIteration|a bare raise", "exceptions",
          "the program raises an exception here, and armature raises it natively, as eager does; if this "
          "is the normal path (a try/except used for control flow), test the condition first (e.g. "
          "`if key in d:`) so the traced path does not raise"),
    # --- fallbacks: the whole frame ran as Python -----------------------------
    _rule(r"recompile limit", "recompile limit",
          "a value changes on every call; make it a tensor, mark it dynamic (armature.mark_dynamic, "
          "ARMATURE_DYNAMIC_SOURCES), or raise armature.config.recompile_limit"),
    _rule(r"written for CPython", "Python version",
          "armature traces only the CPython versions it is tested on (named in the reason); run under one of them to compile", limitation=True),
    _rule(r"not identifiers", "names",
          "rename the parameter so it is a plain identifier"),
    _rule(r"cannot be split there", "break placement",
          "the break falls where a frame cannot be split (e.g. inside a with-block armature cannot "
          "rebuild); move the construct that breaks out of that block, or into a helper function",
          limitation=True),
    _rule(r"backend .* failed", "backend",
          "the backend failed on the captured graph; try backend='aot_eager' or 'eager' to tell a "
          "backend problem from a capture problem"),
)

#: the hint of a reason no rule (and no raise site) covers
DEFAULT = Hint("not modelled", "armature does not model this construct yet, so the code around it runs as "
               "Python between two graphs; move it out of the compiled function (compute it before the "
               "call) or into a helper marked armature.disable; fullgraph=True turns it into an error "
               "naming the line", limitation=True)


def hint_for(reason: str, site_hint: str | None = None) -> Hint:
    """The hint for one break or fallback reason (the first matching rule;
    else the raise site's own hint; else :data:`DEFAULT`)."""
    first = reason.splitlines()[0] if reason else ""
    for pattern, hint in RULES:
        if pattern.search(first):
            return hint
    if site_hint:
        return Hint("not modelled", site_hint, limitation=True)
    return DEFAULT
