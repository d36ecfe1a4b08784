"""Separately compiled instances share compiled code (driver/shared_code.py).

``armature.compile(m1)`` and ``armature.compile(m2)`` for two modules of one
class, and ``armature.compile(fn)`` twice, use one cache per code and
settings, as torch.compile keeps its entries on the code object: the
per-block recipe (``layers[i] = armature.compile(layers[i])``) traces and
compiles a block once.  Two or more live instances compile with their
parameters and buffers as graph inputs, guarded by type and metadata, so
one entry serves every instance that passes its guards; instances that
differ (a size, a hook, the training flag, a buffer's dtype, a
requires_grad flag) get entries of their own, and every result stays
eager's.  Differential: each compiled instance against an eager copy,
outputs, gradients, buffers."""
from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import armature
from helpers import CountingBackend, armature_only, assert_equal

pytestmark = armature_only


class Block(nn.Module):
    """LayerNorm-Linear-GELU-Linear, a residual, a BatchNorm (the training
    flag changes what it computes and writes) and a buffer."""

    def __init__(self, d=8, hidden=16):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)
        self.bn = nn.BatchNorm1d(d)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, d))

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.ln(x))))
        return self.bn(x + h) * self.scale


def _blocks(n, **kw):
    torch.manual_seed(0)
    return [Block(**kw) for _ in range(n)]


def _x(seed=1, d=8, grad=False):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, d, generator=g).requires_grad_(grad)


def _compile_each(blocks, backend, **kw):
    return [armature.compile(b, backend=backend, **kw) for b in blocks]


def _check_step(compiled, eager, x, grad=True):
    """One call (and a backward) on both sides: outputs, the input's
    gradient, the parameters' gradients, the buffers."""
    xc = x.detach().clone().requires_grad_(grad)
    xe = x.detach().clone().requires_grad_(grad)
    out_c, out_e = compiled(xc), eager(xe)
    assert_equal(out_e, out_c)
    if grad:
        out_c.square().sum().backward()
        out_e.square().sum().backward()
        assert_equal(xe.grad, xc.grad)
        for (name, pe), pc in zip(eager.named_parameters(), compiled.parameters()):
            assert_equal(pe.grad, pc.grad, f"{name}.grad")
    for (name, be), bc in zip(eager.named_buffers(), compiled.buffers()):
        assert_equal(be, bc, name)


def _placeholders_and_attrs(gm):
    ops = [n.op for n in gm.graph.nodes]
    return ops.count("placeholder"), ops.count("get_attr")


# --- sharing --------------------------------------------------------------

def test_identical_blocks_share_one_graph():
    blocks = _blocks(6)
    eager = copy.deepcopy(blocks)
    counter = CountingBackend()
    compiled = _compile_each(blocks, counter)
    for c, e in zip(compiled, eager):
        _check_step(c, e, _x(), grad=False)
    assert counter.frame_count == 1
    placeholders, attrs = _placeholders_and_attrs(counter.graphs[0])
    assert attrs == 0 and placeholders == 1 + 8 + 4   # x, 8 parameters, 4 buffers (BatchNorm: 3)
    entries = armature.cache_entries(compiled[0])
    assert len(entries) == 1 and all(armature.cache_entries(c) == entries for c in compiled)


def test_per_block_recipe_training_matches_eager_and_torch_compile():
    """The stack, every block compiled on its own: the first block's input
    does not require grad, the others' do (torch.compile: 2 graphs)."""
    def stack(blocks, x):
        for b in blocks:
            x = b(x)
        return x

    blocks = _blocks(8)
    eager = copy.deepcopy(blocks)
    oracle = copy.deepcopy(blocks)
    counter = CountingBackend()
    compiled = _compile_each(blocks, counter)
    opt_c = torch.optim.SGD([p for b in compiled for p in b.parameters()], lr=0.1)
    opt_e = torch.optim.SGD([p for b in eager for p in b.parameters()], lr=0.1)
    for step in range(3):
        x = _x(seed=step)
        yc, ye = stack(compiled, x), stack(eager, x)
        assert_equal(ye, yc)
        yc.square().mean().backward()
        ye.square().mean().backward()
        for be, bc in zip(eager, compiled):
            for pe, pc in zip(be.parameters(), bc.parameters()):
                assert_equal(pe.grad, pc.grad)
            for ue, uc in zip(be.buffers(), bc.buffers()):
                assert_equal(ue, uc)
        opt_c.step()
        opt_e.step()
        opt_c.zero_grad()
        opt_e.zero_grad()
    torch_counter = CountingBackend()
    torch_blocks = [torch.compile(b, backend=torch_counter) for b in oracle]
    stack(torch_blocks, _x()).sum().backward()
    assert counter.frame_count == torch_counter.frame_count == 2


def test_in_place_update_is_seen_by_that_instance_only():
    a, b = _blocks(2)
    ea, eb = copy.deepcopy(a), copy.deepcopy(b)
    counter = CountingBackend()
    ca, cb = _compile_each([a, b], counter)
    x = _x()
    _check_step(ca, ea, x)
    _check_step(cb, eb, x)
    for m in (a, ea):   # an optimizer step on one instance
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        opt.step()
        opt.zero_grad()
    for m in (b, eb):
        m.zero_grad()
    b_before = [p.detach().clone() for p in b.parameters()]
    _check_step(ca, ea, x)
    _check_step(cb, eb, x)
    assert_equal(b_before, [p.detach() for p in b.parameters()])   # b did not move
    assert counter.frame_count == 1


def test_a_replaced_parameter_object_is_read_from_its_instance():
    a, b = _blocks(2)
    ea, eb = copy.deepcopy(a), copy.deepcopy(b)
    counter = CountingBackend()
    ca, cb = _compile_each([a, b], counter)
    x = _x()
    _check_step(ca, ea, x, grad=False)
    _check_step(cb, eb, x, grad=False)
    for m in (a, ea):
        m.fc1.weight = nn.Parameter(torch.full_like(m.fc1.weight, 0.25))
    _check_step(ca, ea, x, grad=False)
    _check_step(cb, eb, x, grad=False)
    assert counter.frame_count == 1


@pytest.mark.parametrize("variant", ["hidden", "hook", "eval", "buffer_dtype", "frozen", "bias_off"])
def test_an_instance_that_differs_gets_its_own_entry(variant):
    """Shared instances and one that differs in one thing, interleaved:
    every call eager's answer; the odd one compiles once more, the others
    keep sharing."""
    blocks = _blocks(3)
    torch.manual_seed(1)
    odd = Block(hidden=24) if variant == "hidden" else Block()
    if variant == "hook":
        odd.register_forward_hook(lambda mod, args, out: out * 2 + 1)
    elif variant == "eval":
        odd.eval()
    elif variant == "buffer_dtype":
        odd.scale = odd.scale.double()
    elif variant == "frozen":
        odd.fc1.weight.requires_grad_(False)
    elif variant == "bias_off":
        odd.fc2 = nn.Linear(16, 8, bias=False)
    everything = blocks + [odd]
    eager = copy.deepcopy(everything)
    counter = CountingBackend()
    compiled = _compile_each(everything, counter)
    order = [0, 3, 1, 3, 2, 0]
    for step, i in enumerate(order):
        _check_step(compiled[i], eager[i], _x(seed=step))
        for m in (compiled[i], eager[i]):
            m.zero_grad()
    assert counter.frame_count == 2
    entries = armature.cache_entries(compiled[0])
    assert len(entries) == 2
    if variant == "frozen":
        assert odd.fc1.weight.grad is None


def test_instances_differing_in_an_attribute_the_code_reads():
    class Scaled(nn.Module):
        def __init__(self, k, use_relu):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.k, self.use_relu = k, use_relu

        def forward(self, x):
            y = self.lin(x) * self.k
            return torch.relu(y) if self.use_relu else y

    torch.manual_seed(0)
    mods = [Scaled(2.0, True), Scaled(3.0, True), Scaled(2.0, False)]
    eager = copy.deepcopy(mods)
    compiled = _compile_each(mods, "eager")
    x = torch.randn(3, 4)
    for _ in range(2):
        for c, e in zip(compiled, eager):
            assert_equal(e(x), c(x))


def test_an_instance_compiled_later():
    """The first instance ran alone (parameters as attributes); another
    compiled afterwards shares the generic entry, and both stay right."""
    a, b, c = _blocks(3)
    ea, eb, ec = copy.deepcopy([a, b, c])
    counter = CountingBackend()
    ca = armature.compile(a, backend=counter)
    x = _x()
    _check_step(ca, ea, x, grad=False)
    placeholders, attrs = _placeholders_and_attrs(counter.graphs[0])
    assert placeholders == 1 and attrs > 0     # alone: the default, parameters as attributes
    cb, cc = _compile_each([b, c], counter)
    _check_step(cb, eb, x, grad=False)
    _check_step(cc, ec, x, grad=False)
    assert counter.frame_count == 2
    for m in (a, ea):
        with torch.no_grad():
            m.fc2.bias.add_(1.0)
    _check_step(ca, ea, x, grad=False)
    for m in (a, ea):   # a's identity guard fails: it moves to the shared entry
        m.fc2.weight = nn.Parameter(m.fc2.weight.detach() * 2)
    _check_step(ca, ea, x, grad=False)
    _check_step(cb, eb, x, grad=False)
    assert counter.frame_count == 2


def test_a_lone_instance_keeps_attributes_even_compiled_twice():
    (a,) = _blocks(1)
    counter = CountingBackend()
    c1 = armature.compile(a, backend=counter)
    c2 = armature.compile(a, backend=counter)
    x = _x()
    assert_equal(c1(x), c2(x))
    assert counter.frame_count == 1
    placeholders, attrs = _placeholders_and_attrs(counter.graphs[0])
    assert placeholders == 1 and attrs > 0


def test_gradients_through_a_backward_graph_aot_eager():
    blocks = _blocks(3)
    eager = copy.deepcopy(blocks)
    compiled = _compile_each(blocks, "aot_eager")
    for step in range(2):
        for c, e in zip(compiled, eager):
            _check_step(c, e, _x(seed=step, grad=True))
            c.zero_grad()
            e.zero_grad()
    assert len(armature.cache_entries(compiled[0])) == 1


def test_compiled_bound_methods_share():
    blocks = _blocks(4)
    eager = copy.deepcopy(blocks)
    counter = CountingBackend()
    forwards = [armature.compile(b.forward, backend=counter) for b in blocks]
    x = _x()
    for f, e in zip(forwards, eager):
        assert_equal(e(x), f(x))
    assert counter.frame_count == 1


# --- functions ------------------------------------------------------------

def _fn(x, y):
    return torch.sin(x) * y + 1


def test_one_function_compiled_twice_shares():
    counter = CountingBackend()
    f1 = armature.compile(_fn, backend=counter)
    f2 = armature.compile(_fn, backend=counter)
    x, y = torch.randn(3), torch.randn(3)
    assert_equal(_fn(x, y), f1(x, y))
    assert_equal(_fn(x, y), f2(x, y))
    assert counter.frame_count == 1
    assert armature.cache_entries(f1) == armature.cache_entries(f2)


def _closures():
    torch.manual_seed(0)
    made = []
    for k, t, mod, op in ((2, torch.ones(3), nn.Linear(3, 3), torch.sin),
                          (3, torch.zeros(3), nn.Linear(3, 3), torch.cos),
                          (2, torch.ones(3), nn.Linear(3, 3, bias=False), torch.sin)):
        def f(x, k=k, t=t, mod=mod):   # (defaults captured too)
            return op(mod(x)) * k + t
        made.append(f)

        def g(x):
            return op(mod(x)) * k + t
        made.append(g)
    return made


def test_functions_of_one_code_with_other_closures_and_defaults():
    fns = _closures()
    compiled = [armature.compile(f, backend="eager") for f in fns]
    x = torch.randn(2, 3)
    for _ in range(2):
        for f, c in zip(fns, compiled):
            assert_equal(f(x), c(x))


# --- what is never shared -------------------------------------------------

def _cache(compiled):
    if isinstance(compiled, armature.api.CompiledModule):
        return compiled._compiled_call()._cache
    return compiled._cache


@pytest.mark.parametrize("other", [
    dict(backend="aot_eager"),
    dict(backend="eager", fullgraph=True),
    dict(backend="eager", dynamic=True),
    dict(backend="eager", dynamic=False),
])
def test_other_settings_other_cache(other):
    a, b = _blocks(2)
    ca = armature.compile(a, backend="eager")
    cb = armature.compile(b, **other)
    assert _cache(ca) is not _cache(cb)
    fa = armature.compile(_fn, backend="eager")
    fb = armature.compile(_fn, **other)
    assert _cache(fa) is not _cache(fb)


def test_inductor_modes_and_options_other_cache():
    a, b, c, d, e = _blocks(5)
    compiled = [armature.compile(a, backend="inductor"),   # (kept alive: a cache lives as long as its users)
                armature.compile(b, backend="inductor", mode="max-autotune-no-cudagraphs"),
                armature.compile(c, backend="inductor", options={"max_autotune": True}),
                armature.compile(d, backend="inductor", options={"max_autotune": False})]
    caches = [_cache(m) for m in compiled]
    assert len({id(c) for c in caches}) == 4
    assert _cache(armature.compile(e, backend="inductor", options={"max_autotune": True})) is caches[2]


def test_a_backend_never_serves_another():
    c1, c2 = CountingBackend(), CountingBackend()
    a, b = _blocks(2)
    ca, cb = armature.compile(a, backend=c1), armature.compile(b, backend=c2)
    x = _x()
    ca(x)
    cb(x)
    assert c1.frame_count == c2.frame_count == 1
    f1, f2 = armature.compile(_fn, backend=c1), armature.compile(_fn, backend=c2)
    f1(x, x)
    f2(x, x)
    assert c1.frame_count == c2.frame_count == 2


def test_other_options_other_cache():
    a, b = _blocks(2)
    ca = armature.compile(a, backend="eager")
    with armature.config.patch(regions="off"):
        cb = armature.compile(b, backend="eager")
    assert _cache(ca) is not _cache(cb)


# --- the recompile limit counts per code -----------------------------------

def test_recompile_limit_counts_per_code_and_says_so():
    torch.manual_seed(0)
    blocks = [Block(hidden=h) for h in (8, 12, 16, 20)]
    eager = copy.deepcopy(blocks)
    counter = CountingBackend()
    with armature.config.patch(recompile_limit=2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = _compile_each(blocks, counter)
        for c, e in zip(compiled, eager):
            _check_step(c, e, _x(), grad=False)
    messages = [str(w.message) for w in caught if "recompile limit" in str(w.message)]
    assert len(messages) == 1, messages
    assert "Block.forward" in messages[0] and "test_shared_code.py" in messages[0]
    assert "per code" in messages[0]
    assert counter.frame_count == 2


# --- regions and per-block compile together ---------------------------------

class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class Plain(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


def test_regions_over_compiled_blocks_compile_the_block_once():
    """Blocks compiled one by one, then the whole model: the model's graph
    holds the blocks (one subgraph for all of them), the blocks' own
    caches compile nothing."""
    def calls(gm):
        return [n.args[1] for n in gm.graph.nodes if n.op == "call_function" and "invoke_subgraph" in str(n.target)]

    torch.manual_seed(0)
    plain = [Plain() for _ in range(4)]
    eager = Stack(copy.deepcopy(plain))
    uncompiled = CountingBackend()   # the same model, blocks not compiled on their own
    with armature.config.patch(regions="always"):
        armature.compile(Stack(copy.deepcopy(plain)), backend=uncompiled)(_x())
    model = Stack([armature.compile(b, backend="eager") for b in plain])
    counter = CountingBackend()
    with armature.config.patch(regions="always"):
        cm = armature.compile(model, backend=counter)
        x = _x()
        assert_equal(eager(x), cm(x))
    assert counter.frame_count == 1
    merged = calls(counter.graphs[0])
    assert len(merged) >= 3 and len(set(merged)) == 1
    assert merged == calls(uncompiled.graphs[0])
    assert all(not armature.cache_entries(b) for b in model.blocks)


# --- the recipe on a transformer stack ------------------------------------

class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class LM(nn.Module):
    def __init__(self, vocab=50, d=32, depth=4, ctx=12):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.layers = nn.ModuleList(TransformerBlock(d) for _ in range(depth))
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _lm_per_block(compile_block):
    torch.manual_seed(0)
    m = LM()
    for i, layer in enumerate(m.layers):
        m.layers[i] = compile_block(layer)
    return m


def _tokens(step):
    return torch.randint(0, 50, (2, 13), generator=torch.Generator().manual_seed(step))


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_transformer_stack_compiled_per_block(training):
    eager = _lm_per_block(lambda b: b)
    counter = CountingBackend()
    model = _lm_per_block(lambda b: armature.compile(b, backend=counter))
    torch_counter = CountingBackend()
    oracle = _lm_per_block(lambda b: torch.compile(b, backend=torch_counter))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model, oracle)]
    for step in range(3):
        seq = _tokens(step)
        losses = []
        for m, opt in zip((eager, model, oracle), opts):
            with torch.set_grad_enabled(training):
                logits = m(seq[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, 50), seq[:, 1:].reshape(-1))
            if training:
                loss.backward()
            losses.append((logits.detach(), loss.detach(), [p.grad for p in m.parameters()]))
            if training:
                opt.step()
                opt.zero_grad()
        assert_equal(losses[0][:2], losses[1][:2])
        if training:
            assert_equal(losses[0][2], losses[1][2])
    assert counter.frame_count <= torch_counter.frame_count, (counter.frame_count, torch_counter.frame_count)
    assert counter.frame_count == 1
    for pe, pc in zip(eager.parameters(), model.parameters()):
        assert_equal(pe, pc)


def test_modules_compiled_twice_and_compiled_members():
    """A compiled module compiled again, and blocks that hold a compiled
    submodule: the wrappers are guarded by their class (never by comparing
    a class with an instance), each class keeps its own code."""
    torch.manual_seed(0)
    lin, conv = nn.Linear(3, 3), nn.Conv1d(3, 3, 1)
    twice = [armature.compile(armature.compile(m, backend="eager"), backend="eager") for m in (lin, conv)]
    x2, x3 = torch.randn(2, 3), torch.randn(2, 3, 4)
    for _ in range(2):
        assert_equal(lin(x2), twice[0](x2))
        assert_equal(conv(x3), twice[1](x3))
    assert _cache(twice[0]) is not _cache(twice[1])

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = armature.compile(nn.Linear(4, 4), backend="eager")

        def forward(self, x):
            return torch.relu(self.inner(x)) + 1

    holders = [Holder() for _ in range(3)]
    eager = [copy.deepcopy(h) for h in holders]
    counter = CountingBackend()
    compiled = _compile_each(holders, counter)
    x = torch.randn(2, 4)
    for _ in range(2):
        for c, e in zip(compiled, eager):
            assert_equal(e(x), c(x))
    assert counter.frame_count == 1


def test_a_copy_of_a_compiled_block_shares_too():
    """deepcopy (an EMA copy of a model of compiled blocks) works as it did,
    and the copy joins the code's cache."""
    blocks = _blocks(2)
    counter = CountingBackend()
    compiled = _compile_each(blocks, counter)
    twin = copy.deepcopy(compiled[0])
    x = _x()
    eager = copy.deepcopy(blocks[0])
    _check_step(twin, eager, x, grad=False)
    _check_step(compiled[0], copy.deepcopy(blocks[0]), x, grad=False)
    assert counter.frame_count == 1
