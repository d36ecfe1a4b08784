"""Real models (torchvision, transformers, timm) at tiny sizes, random weights.

The suite runs against each pinned library set (``./dev models --libs
current|old|all``, libsets.py); expectations that hold on one set only name
it.

For each model of zoo.BUILDERS:

* ``test_eval``  -- eval-mode forward, compiled by armature with the eager and
  aot_eager backends (fullgraph=True where torch.compile manages fullgraph and
  armature is not known to need more graphs),
  matches eager; a second call (cache hit) matches too.
* ``test_train`` -- the same in train mode (forward only): outputs match, and
  so do the buffers the forward mutates (BatchNorm running statistics).
* ``test_graph_count`` -- armature captures at least one graph, runs nothing
  as plain-Python fallback, and uses no more graphs than torch.compile on the
  same model (``torch._dynamo.explain`` is the oracle, in eval and train
  mode); where torch.compile has graph breaks, TORCH_BREAKS below must say so,
  and only there (so the hard-coded table cannot drift from the oracle).
  The counts (graphs and breaks of both) are printed at the end of the run.
* LLaMA, Qwen2 and Mistral also decode with a KV cache (``test_kv_cache``): a
  prefill call with ``use_cache=True`` and a one-token step fed the returned
  cache.
* T5 generates (``test_t5_generate``): ``model.generate`` (greedy, 5 new
  tokens, KV cache) with ``model.forward`` compiled; tokens and scores match
  eager, and the graphs compiled over the whole generation (recompiles
  included) are no more than torch.compile's.
* Stochastic depth (timm DropPath, torchvision StochasticDepth) is random in
  train mode: both runs are seeded alike (``run_seeded``), and
  ``test_stochastic_depth_is_random`` checks the randomness is really there.
* Inductor runs on two models only (``test_inductor``), to keep CI short.

What armature cannot match yet is xfail(strict=True) with the cause, on the
library sets where it happens, so the suite stays green and flags the day a
fix makes one pass.
"""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("timm")

import armature  # noqa: E402
import libsets  # noqa: E402
from helpers import CountingBackend  # noqa: E402  (tests/helpers.py)

from zoo import BUILDERS  # noqa: E402

#: the library set of this run: "current", "old" or "unpinned"
LIBS = libsets.current()

BACKENDS = ("eager", "aot_eager")
INDUCTOR_MODELS = ("resnet18", "vit")

#: KV-cache decoding (prefill + one step) of these decoder-only models
KV_CACHE = {"llama_kv_cache": "llama", "qwen2_kv_cache": "qwen2", "mistral_kv_cache": "mistral"}

#: (model, mode, library set) where torch.compile (backend="eager") itself has
#: graph breaks; measured, and re-checked both ways by test_graph_count.  BART's,
#: Whisper's, TrOCR's and XGLM's are transformers 4.57's LayerDrop: ``if
#: torch.rand([]) < self.layerdrop`` in train mode (data-dependent; 5.x no
#: longer draws it when layerdrop is 0).  GPT-2 given labels:
#: ``logger.warning_once`` (an lru_cache'd Logger method) about
#: ``loss_type=None``, where torch.compile breaks on the logging call and
#: armature replays the cached call after its one graph.
TORCH_BREAKS = {
    ("bart", "train", "old"),
    ("whisper", "train", "old"),
    ("trocr", "train", "old"),
    ("xglm", "train", "old"),
    ("gpt2_loss", "eval", "old"), ("gpt2_loss", "train", "old"),
    ("gpt2_loss", "eval", "current"), ("gpt2_loss", "train", "current"),
}

#: models torch.compile breaks on where armature makes one graph: compiled
#: with fullgraph=True all the same
FULLGRAPH_ANYWAY = {"gpt2_loss"}


def fullgraph(name: str, mode: str) -> bool:
    """fullgraph=True wherever torch.compile has no graph break and armature
    is not known to need more graphs (its graph-count test an xfail here)."""
    if (name, mode, LIBS) in TORCH_BREAKS and name not in FULLGRAPH_ANYWAY:
        return False
    return known(name, "graph_count") is None

# ---------------------------------------------------------------------------
# known armature failures (strict xfail: a fix that makes one pass fails CI
# until the mark is removed, so this table stays true)
# ---------------------------------------------------------------------------


class KnownFailure(Exception):
    """A failure whose message names one of the causes its xfail mark expects."""


#: The blockers transformers models meet, in the order their code meets them
#: (found by fixing each in a scratch copy of armature to reach the next; see
#: tests/models/README.md for minimal repros).  A model's test is a known
#: failure while it stops at any of them, so fixing one keeps CI green while
#: the model moves on to the next; a failure that names none of them (a wrong
#: result, a crash, a new construct) fails for real.
HF_BLOCKERS = (
    "local variable 'args'",            # fullgraph=False: a functools.wraps wrapper compiled as a
                                        # root binds the wrapped signature: UnboundLocalError
    "the C __getattribute__ of",        # an instance of a dict subclass (_CanRecordRegistry)
    "custom __getattribute__ of",       # PretrainedConfig.__getattribute__; func.__code__.co_varnames;
                                        # a dict subclass (_CanRecordRegistry)
    "JUMP_BACKWARD: KeyError",          # a jump to an EXTENDED_ARG (long loop body)
    "call to dict.get",                 # super().get() in a dict subclass
    "descriptor '__class__'",           # module.__class__
    "IMPORT_NAME",                      # `import torch` inside a function
    "`in` on <",                        # `in` on an object with __contains__ (a MutableMapping)
    "attribute '__func__' of <bound method",  # inspect.signature(bound method) (BERT)
    "metaclass ABCMeta",                # instantiating an abc.ABC subclass (DynamicCache layers)
    "AttributeError reading",           # getattr(None, name, default) (LLaMA masks)
    "creating an instance of finfo",    # torch.finfo(dtype) (T5)
    "which defines __new__",            # ModelOutput (an OrderedDict dataclass with __new__)
    "attribute '__class__' of no_grad",  # @torch.no_grad() used as a decorator (LLaMA rotary)
    "a dict with non-string/int keys",  # os.environ.get (LLaMA sdpa)
)

@dataclasses.dataclass(frozen=True)
class Known:
    reason: str
    #: substrings one of which the failure's message holds
    causes: tuple[str, ...]
    #: the library sets it applies to
    libs: tuple[str, ...] = ("current", "old")


#: (model, test kind) -> Known failure.  A strict xfail on the library sets it
#: names; elsewhere the test must pass.
XFAIL: dict[tuple[str, str], Known] = {
}


def known(name: str, kind: str) -> Known | None:
    k = XFAIL.get((name, kind))
    return k if k is not None and LIBS in k.libs else None


def _params(kind: str, names, backends=(None,)):
    out = []
    for name in names:
        for backend in backends:
            marks = []
            k = known(name, kind)
            if k:
                marks.append(pytest.mark.xfail(strict=True, reason=k.reason, raises=KnownFailure))
            if backend == "aot_eager":
                marks.append(pytest.mark.aot_eager)
            if backend == "inductor":
                marks.append(pytest.mark.inductor)
            ident = name if backend is None else f"{name}-{backend}"
            values = (name,) if backend is None else (name, backend)
            out.append(pytest.param(*values, marks=marks, id=ident))
    return out


_KIND_OF_TEST = {"test_eval": "eval", "test_train": "train", "test_graph_count": "graph_count",
                 "test_kv_cache": "eval", "test_kv_cache_graph_count": "graph_count",
                 "test_t5_generate": "eval", "test_t5_generate_graph_count": "graph_count",
                 "test_inductor": "inductor"}


@pytest.fixture
def known_failure(request):
    """Turn a failure that matches the test's xfail cause into KnownFailure."""
    name = request.node.callspec.params["name"]
    kind = _KIND_OF_TEST[request.node.originalname]
    k = known(name, kind)

    class _Ctx:
        def __enter__(self):
            return self

        def __exit__(self, tp, exc, tb):
            if exc is None or k is None or not isinstance(exc, Exception):
                return False
            if any(cause in str(exc) for cause in k.causes):
                raise KnownFailure(f"{k.reason}\n{type(exc).__name__}: {str(exc)[:2000]}") from exc
            return False
    return _Ctx()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_BUILT: dict[str, object] = {}


def build(name: str, train: bool = False):
    """A fresh copy of the model (built once per session, seed 0) and its inputs."""
    case = _BUILT.get(name)
    if case is None:
        case = _BUILT[name] = BUILDERS[name]()
    model = copy.deepcopy(case.model)
    if train:
        model.train()
        _zero_dropout(model)
    else:
        model.eval()
    args, kwargs = case.make_inputs()
    return model, args, kwargs


def _zero_dropout(model: torch.nn.Module) -> None:
    # train mode compares outputs: dropout would make them random (and the
    # aot_eager decomposition draws different random numbers from eager's
    # kernel).  Configs already set p=0 where they can; this catches the rest
    # (torchvision's mobilenet classifier, timm heads).
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.p = 0.0


def tensors_of(obj) -> list[torch.Tensor]:
    """Flatten a model output (tensor, tuple, ModelOutput, Cache) into tensors."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if obj is None or isinstance(obj, (int, float, bool, str)):
        return []
    if hasattr(obj, "to_tuple"):  # transformers ModelOutput
        return tensors_of(obj.to_tuple())
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in tensors_of(item)]
    if isinstance(obj, dict):
        return [t for k in sorted(obj) for t in tensors_of(obj[k])]
    if hasattr(obj, "self_attention_cache"):  # transformers EncoderDecoderCache (T5 with use_cache)
        return tensors_of([obj.self_attention_cache, obj.cross_attention_cache])
    layers = getattr(obj, "layers", None)  # transformers Cache
    if layers is not None:
        return [t for layer in layers for t in tensors_of([getattr(layer, "keys", None),
                                                            getattr(layer, "values", None)])]
    raise TypeError(f"cannot compare a {type(obj).__name__} output")


def assert_same(actual, expected, rtol=1e-4, atol=1e-4, what="output"):
    a, e = tensors_of(actual), tensors_of(expected)
    assert len(a) == len(e), f"{what}: {len(a)} tensors, eager has {len(e)}"
    assert len(e) > 0, f"{what}: nothing to compare"
    for i, (x, y) in enumerate(zip(a, e)):
        torch.testing.assert_close(x, y, rtol=rtol, atol=atol, msg=lambda m: f"{what}[{i}]: {m}")


def run_seeded(fn, args, kwargs):
    torch.manual_seed(0)
    return fn(*args, **kwargs)


def check_compiled_matches_eager(name: str, backend: str, train: bool, rtol=1e-4, atol=1e-4):
    eager_model, args, kwargs = build(name, train)
    model = copy.deepcopy(eager_model)
    counter = CountingBackend(backend)
    compiled = armature.compile(model, backend=counter, fullgraph=fullgraph(name, "train" if train else "eval"))
    for call in range(2):  # the second call runs the cached entries
        expected = run_seeded(eager_model, args, kwargs)
        actual = run_seeded(compiled, args, kwargs)
        assert_same(actual, expected, rtol, atol, what=f"call {call}")
        if call == 0:
            graphs = counter.frame_count
    assert counter.frame_count == graphs, \
        f"the second call, with the same inputs, compiled {counter.frame_count - graphs} more graph(s) (recompiles)"
    # buffers the forward mutated (BatchNorm running stats in train mode)
    for (k, b_eager), (_, b_comp) in zip(eager_model.named_buffers(), model.named_buffers()):
        torch.testing.assert_close(b_comp, b_eager, rtol=rtol, atol=atol, msg=lambda m: f"buffer {k}: {m}")


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,backend", _params("eval", BUILDERS, BACKENDS))
def test_eval(name, backend, known_failure):
    with known_failure:
        check_compiled_matches_eager(name, backend, train=False)


@pytest.mark.parametrize("name,backend", _params("train", BUILDERS, BACKENDS))
def test_train(name, backend, known_failure):
    with known_failure:
        check_compiled_matches_eager(name, backend, train=True)


def _torch_explain(fn, args, kwargs):
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(fn)(*args, **kwargs)
    finally:
        torch._dynamo.reset()


from zoo import GRAPH_COUNTS, Counts  # noqa: E402  (printed at the end of the run by conftest.py)


def _first_reason(ours, causes=()) -> str:
    """armature's first break reason (the first naming a known cause, if any)."""
    reasons = [str(r).splitlines()[0] for r in ours.break_reasons]
    reasons += [f"ran as Python: {str(f).splitlines()[0]}" for f in ours.fallbacks]
    for r in reasons:
        if any(c in r for c in causes):
            return r
    return reasons[0] if reasons else ""


def _check_graph_count(name, mode, fn_eager, fn_armature, args, kwargs):
    """armature: >= 1 graph, no fallback, no more graphs than torch.compile.
    The counts are recorded (GRAPH_COUNTS) before they are checked."""
    reference = _torch_explain(fn_eager, args, kwargs)
    if LIBS != "unpinned":
        torch_breaks = (name, mode, LIBS) in TORCH_BREAKS
        assert torch_breaks == (reference.graph_break_count > 0), \
            f"torch.compile has {reference.graph_break_count} graph break(s) on {name} ({mode}, {LIBS} " \
            f"libraries): {'remove it from' if torch_breaks else 'add it to'} TORCH_BREAKS"
    armature.reset()
    ours = armature.explain(fn_armature)(*args, **kwargs)
    GRAPH_COUNTS.setdefault(name, {})[mode] = Counts(
        ours.graph_count, reference.graph_count, ours.graph_break_count, reference.graph_break_count,
        _first_reason(ours, k.causes if (k := known(name, "graph_count")) else ())
        if ours.graph_count > reference.graph_count or ours.fallbacks else "")
    detail = f"armature:\n{ours}\n\ntorch.compile: {reference.graph_count} graph(s), breaks: " \
             f"{[str(r.reason) for r in reference.break_reasons]}"
    assert not ours.fallbacks, f"{name} ran as plain Python: {ours.fallbacks}\n{detail}"
    assert ours.graph_count >= 1, f"{name}: armature captured no graph\n{detail}"
    assert ours.graph_count <= reference.graph_count, \
        f"{name}: armature {ours.graph_count} graphs > torch.compile {reference.graph_count}\n{detail}"


@pytest.mark.parametrize("name", _params("graph_count", BUILDERS))
def test_graph_count(name, known_failure):
    failures = []
    for train in (False, True):  # both modes are counted (and printed) before a failure is raised
        model, args, kwargs = build(name, train)
        try:
            _check_graph_count(name, "train" if train else "eval", copy.deepcopy(model), model, args, kwargs)
        except AssertionError as e:
            failures.append(e)
    with known_failure:
        if failures:
            raise failures[0]


# --- decoder-only models with a KV cache --------------------------------------


def _decode(model, prompt, step):
    """Prefill with use_cache=True, then one decode step fed the cache."""
    first = model(prompt, use_cache=True)
    second = model(step, past_key_values=first.past_key_values, use_cache=True)
    return first.logits, second.logits, second.past_key_values


def _decode_inputs():
    g = torch.Generator().manual_seed(3)
    return torch.randint(0, 128, (2, 8), generator=g), torch.randint(0, 128, (2, 1), generator=g)


@pytest.mark.parametrize("name,backend", _params("eval", KV_CACHE, BACKENDS))
def test_kv_cache(name, backend, known_failure):
    eager_model, _, _ = build(KV_CACHE[name])
    model = copy.deepcopy(eager_model)
    compiled = armature.compile(model, backend=backend, fullgraph=fullgraph(name, "decode"))
    prompt, step = _decode_inputs()
    with known_failure:
        for call in range(2):  # the second round runs cached entries
            expected = _decode(eager_model, prompt, step)
            actual = _decode(compiled, prompt, step)
            assert_same(actual, expected, what=f"round {call}")


@pytest.mark.parametrize("name", _params("graph_count", KV_CACHE))
def test_kv_cache_graph_count(name, known_failure):
    model, _, _ = build(KV_CACHE[name])
    prompt, step = _decode_inputs()

    def decode(prompt, step):
        return _decode(model, prompt, step)
    with known_failure:
        _check_graph_count(name, "decode", decode, decode, (prompt, step), {})


# --- T5 generates ---------------------------------------------------------------

GENERATE = {"max_new_tokens": 5, "min_new_tokens": 5, "do_sample": False,
            "output_scores": True, "return_dict_in_generate": True}


class _CountingBackend:
    """The eager backend, counting the graphs a compiler hands it (recompiles
    included)."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def _t5_prompt():
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 128, (2, 8), generator=g)


@pytest.mark.parametrize("name,backend", _params("eval", ["t5_generate"], BACKENDS))
def test_t5_generate(name, backend, known_failure):
    eager_model, _, _ = build("t5_lm")
    expected = eager_model.generate(_t5_prompt(), **GENERATE)
    assert len(set(expected.sequences.flatten().tolist())) > 2, "degenerate generation: nothing to compare"
    model = copy.deepcopy(eager_model)
    # how generate meets a compiler: it calls the module, which calls forward
    model.forward = armature.compile(model.forward, backend=backend)
    with known_failure:
        for call in range(2):  # the second generation runs cached entries
            actual = model.generate(_t5_prompt(), **GENERATE)
            assert torch.equal(actual.sequences, expected.sequences), \
                f"generation {call}: {actual.sequences.tolist()} != eager {expected.sequences.tolist()}"
            assert_same(actual.scores, expected.scores, what=f"generation {call} scores")


@pytest.mark.parametrize("name", _params("graph_count", ["t5_generate"]))
def test_t5_generate_graph_count(name, known_failure):
    from torch._dynamo.utils import counters as dynamo_counters
    eager_model, _, _ = build("t5_lm")
    counts = {}
    for compiler in ("torch", "armature"):
        torch._dynamo.reset()
        dynamo_counters.clear()
        armature.reset()
        model, counter = copy.deepcopy(eager_model), _CountingBackend()
        compile_ = torch.compile if compiler == "torch" else armature.compile
        model.forward = compile_(model.forward, backend=counter)
        model.generate(_t5_prompt(), **GENERATE)
        counts[compiler] = counter.graphs
        if compiler == "torch":
            torch_breaks = sum(dynamo_counters["graph_break"].values())
    torch._dynamo.reset()
    entries = armature.cache_entries(model.forward)
    ours, reference = counts["armature"], counts["torch"]
    GRAPH_COUNTS[name] = {"generate": Counts(
        ours, reference, sum(e.graph_break is not None for e in entries), torch_breaks,
        f"{len(entries)} cache entries (reasons: ARMATURE_LOGS=recompiles)" if ours > reference else "")}
    with known_failure:
        assert not any(e.is_fallback for e in entries), f"{name} ran as plain Python"
        assert ours <= reference, \
            f"{name}: armature {ours} graphs > torch.compile {reference} over the generation " \
            f"({len(entries)} cache entries)"


# --- stochastic depth is random in train mode -------------------------------------


@pytest.mark.parametrize("name", ["timm_vit_drop_path", "swin_t"])
def test_stochastic_depth_is_random(name):
    """The train-mode comparisons of these models seed both runs alike: make
    sure there is randomness to get wrong (different seeds, different
    outputs; the same seed, the same output)."""
    model, args, kwargs = build(name, train=True)
    outs = [run_seeded_with(model, args, kwargs, seed) for seed in (0, 1, 2, 3)]
    assert any(not torch.equal(outs[0], o) for o in outs[1:]), f"{name}: stochastic depth draws nothing"
    torch.testing.assert_close(run_seeded_with(model, args, kwargs, 0), outs[0], rtol=0, atol=0)


def run_seeded_with(fn, args, kwargs, seed):
    torch.manual_seed(seed)
    return fn(*args, **kwargs)


# --- inductor on two models ---------------------------------------------------


@pytest.mark.parametrize("name,backend", _params("inductor", INDUCTOR_MODELS, ("inductor",)))
def test_inductor(name, backend, known_failure):
    with known_failure:
        check_compiled_matches_eager(name, backend, train=False, rtol=1e-3, atol=1e-3)


# --- logger.warning_once: logged as often as in eager -----------------------------


def test_warning_once_logged_as_in_eager():
    """GPT-2 given labels warns once about ``loss_type=None`` through
    ``logger.warning_once`` (lru_cache'd): armature replays the cached call
    after its one graph (fullgraph=True), so the warning is logged exactly as
    often, with the same caller, as in eager."""
    import logging as std_logging

    from transformers.utils import logging as hf_logging
    cached = std_logging.Logger.warning_once
    seen = []

    class Tap(std_logging.Handler):
        def emit(self, record):
            seen.append((record.getMessage(), record.funcName, record.pathname))

    root = hf_logging.get_logger("transformers")
    tap, level = Tap(), root.level
    root.addHandler(tap)
    root.setLevel(std_logging.WARNING)
    try:
        eager_model, args, kwargs = build("gpt2_loss")
        cached.cache_clear()
        seen.clear()   # (building the model may warn about its config)
        expected = [run_seeded(eager_model, args, kwargs) for _ in range(3)]
        eager_seen = list(seen)
        assert any("loss_type" in m for m, _, _ in eager_seen), eager_seen
        seen.clear()
        cached.cache_clear()
        counter = CountingBackend("eager")
        compiled = armature.compile(copy.deepcopy(eager_model), backend=counter, fullgraph=True)
        actual = [run_seeded(compiled, args, kwargs) for _ in range(3)]
        assert seen == eager_seen
        assert counter.frame_count == 1
        for a, e in zip(actual, expected):
            assert_same(a, e)
    finally:
        root.removeHandler(tap)
        root.setLevel(level)
        cached.cache_clear()
