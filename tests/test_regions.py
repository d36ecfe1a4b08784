"""Repeated blocks compiled once (graph/regions.py): which calls become one
``invoke_subgraph`` subgraph, and that compiled results (outputs, gradients,
side effects) equal eager's whether or not they do."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import armature
from helpers import USING_TORCH

pytestmark = [pytest.mark.armature_only, pytest.mark.skipif(USING_TORCH, reason="armature's regions")]

INVOKE = torch.ops.higher_order.invoke_subgraph


class Block(nn.Module):
    def __init__(self, d=8, flag=True):
        super().__init__()
        self.flag = flag
        self.ln = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        h = F.gelu(self.fc1(self.ln(x)))
        if self.flag:
            h = h * 2
        return x + self.fc2(h).tanh()


class Stack(nn.Module):
    def __init__(self, n=4, d=8, block=Block):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(block(d) for _ in range(n))
        self.head = nn.Linear(d, d)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def _outer_nodes(compiled):
    return [n for e in armature.cache_entries(compiled) if e.graph_module is not None
            for n in e.graph_module.graph.nodes]


def calls(compiled) -> int:
    """invoke_subgraph calls in the compiled entries' graphs."""
    return sum(1 for n in _outer_nodes(compiled) if n.target is INVOKE)


def subgraphs(compiled) -> int:
    return sum(1 for e in armature.cache_entries(compiled) if e.graph_module is not None
               for name, _ in e.graph_module.named_children() if name.startswith("repeated_subgraph"))


def check_training(model, *inputs, backend="aot_eager", **kw):
    """Outputs and every parameter's gradient equal eager's."""
    cm = armature.compile(model, backend=backend, **kw)
    out = cm(*inputs)
    out.sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ref = model(*inputs)
    ref.sum().backward()
    torch.testing.assert_close(out, ref)
    for g, p in zip(got, model.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    model.zero_grad()
    return cm


def check_inference(model, *inputs, backend="aot_eager", **kw):
    cm = armature.compile(model, backend=backend, **kw)
    with torch.no_grad():
        torch.testing.assert_close(cm(*inputs), model(*inputs))
    return cm


def test_identical_blocks_become_one_subgraph():
    cm = check_inference(Stack(4), torch.randn(2, 3, 8))
    assert calls(cm) == 4 and subgraphs(cm) == 1


def test_training_gradients_equal_eager():
    # block 0's input does not require grad, the others' do: two signatures
    cm = check_training(Stack(4), torch.randn(2, 3, 8))
    assert calls(cm) == 3 and subgraphs(cm) == 1


def test_other_branch_not_merged():
    m = Stack(5)
    m.blocks[2].flag = False
    cm = check_inference(m, torch.randn(2, 3, 8))
    assert calls(cm) == 4 and subgraphs(cm) == 1


def test_two_shapes_of_block_two_subgraphs():
    m = Stack(6)
    for b in m.blocks[3:]:
        b.flag = False
    cm = check_inference(m, torch.randn(2, 3, 8))
    assert calls(cm) == 6 and subgraphs(cm) == 2


def test_other_dtype_not_merged():
    class CastBlock(Block):
        def forward(self, x):
            return super().forward(x.to(self.fc1.weight.dtype)).float()

    m = Stack(4, block=CastBlock)
    m.blocks[1].double()
    cm = check_inference(m, torch.randn(2, 3, 8))
    assert subgraphs(cm) == 1 and calls(cm) == 3


def test_hook_on_one_instance_not_merged():
    m = Stack(4)
    m.blocks[1].register_forward_hook(lambda mod, args, out: out * 0.5)
    cm = check_inference(m, torch.randn(2, 3, 8))
    assert calls(cm) == 3


def test_python_side_effect_inside_not_merged():
    seen = []

    class Logging(Block):
        def forward(self, x):
            seen.append(type(self).__name__)
            return super().forward(x)

    m = Stack(3, block=Logging)
    x = torch.randn(2, 3, 8)
    cm = armature.compile(m, backend="aot_eager")
    with torch.no_grad():
        out = cm(x)
        n = len(seen)
        torch.testing.assert_close(out, m(x))
    assert n == 3 and len(seen) == 6
    assert calls(cm) == 0


def test_module_attribute_write_not_merged():
    class Counting(Block):
        def forward(self, x):
            self.count = getattr(self, "count", 0) + 1
            return super().forward(x)

    m = Stack(3, block=Counting)
    cm = check_inference(m, torch.randn(2, 3, 8))
    assert [b.count for b in m.blocks] == [2, 2, 2]
    assert calls(cm) == 0


def test_inplace_on_own_tensors_merged():
    """Writes in place to tensors the block made (torchvision's
    ``out += identity``, ``ReLU(inplace=True)``) stay inside the subgraph."""
    class InPlace(Block):
        def forward(self, x):
            y = super().forward(x)
            y.mul_(2)
            y += x
            F.relu(y, True)
            if not torch.is_grad_enabled():   # (relu's backward reads its result)
                F.hardtanh(y, inplace=True)
                y[0] = 0.5
            return y

    cm = check_inference(Stack(3, block=InPlace), torch.randn(2, 3, 8))
    assert calls(cm) == 3 and subgraphs(cm) == 1
    armature.reset()
    cm = check_training(Stack(3, block=InPlace), torch.randn(2, 3, 8))
    assert calls(cm) == 2


@pytest.mark.parametrize("write", ["method", "relu_flag", "relu_positional", "view", "setitem", "same_tensor"])
def test_inplace_on_an_operand_not_merged(write):
    """A block that writes (a view of) its input in place stays inlined;
    eager's values and the input's new contents are reproduced."""
    class Writes(Block):
        def forward(self, x):
            if write == "method":
                x.mul_(0.5)
            elif write == "relu_flag":
                F.relu(x, inplace=True)
            elif write == "relu_positional":
                F.leaky_relu(x, 0.1, True)
            elif write == "view":
                x.view(-1)[:4].add_(1)
            elif write == "setitem":
                x[0] = 0.0
            else:
                x.contiguous().sub_(1)   # (x itself: it is contiguous)
            return super().forward(x).clone()

    m = Stack(3, block=Writes)
    x = torch.randn(2, 3, 8)
    x1, x2 = x.clone(), x.clone()
    cm = armature.compile(m, backend="aot_eager")
    with torch.no_grad():
        out = cm(x1)
        torch.testing.assert_close(out, m(x2))
    torch.testing.assert_close(x1, x2)
    assert calls(cm) == 0


def test_random_ops_not_merged():
    class Drop(Block):
        def forward(self, x):
            return F.dropout(super().forward(x), 0.5, training=True)

    m = Stack(3, block=Drop)
    cm = armature.compile(m, backend="aot_eager")
    with torch.no_grad():
        cm(torch.randn(2, 3, 8))
    assert calls(cm) == 0


def test_output_aliasing_operand_not_merged():
    class Alias(Block):
        def forward(self, x):
            return super().forward(x), x.view(-1)

    class Pairs(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Alias() for _ in range(3))

        def forward(self, x):
            flat = []
            for b in self.blocks:
                x, f = b(x)
                flat.append(f)
            return x, torch.cat(flat)

    m = Pairs()
    cm = armature.compile(m, backend="aot_eager")
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 0


def test_same_instance_called_repeatedly_merged():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            for _ in range(3):
                x = self.block(x)
            return x

    cm = check_training(Shared(), torch.randn(2, 3, 8, requires_grad=True))
    assert calls(cm) == 3


def test_inner_blocks_merged_when_outer_differ():
    class Outer(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale
            self.inner = Block()

        def forward(self, x):
            return self.inner(x) * self.scale

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.outers = nn.ModuleList(Outer(s) for s in (1.0, 2.0, 3.0))

        def forward(self, x):
            for o in self.outers:
                x = o(x)
            return x

    cm = check_inference(M(), torch.randn(2, 3, 8))
    assert calls(cm) == 3


def test_dynamic_shapes_one_entry():
    m = Stack(4)
    cm = armature.compile(m, backend="aot_eager", dynamic=True)
    with torch.no_grad():
        for t in (3, 5, 7):
            x = torch.randn(2, t, 8)
            torch.testing.assert_close(cm(x), m(x))
    assert len(armature.cache_entries(cm)) == 1
    assert calls(cm) == 4


def test_dynamic_shapes_training():
    m = Stack(3)
    cm = armature.compile(m, backend="aot_eager", dynamic=True)
    for t in (3, 6):
        x = torch.randn(2, t, 8)
        out = cm(x)
        out.sum().backward()
        got = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        ref = m(x)
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        for g, p in zip(got, m.parameters()):
            torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
        m.zero_grad()
    assert calls(cm) == 2


def test_guards_as_inlined_change_recompiles():
    m = Stack(4)
    x = torch.randn(2, 3, 8)
    cm = check_inference(m, x)
    m.blocks[2].flag = False
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert len(armature.cache_entries(cm)) == 2


def test_config_off():
    with armature.config.patch(regions="off"):
        cm = check_inference(Stack(4), torch.randn(2, 3, 8))
    assert calls(cm) == 0


def test_config_rejects_unknown_value():
    with pytest.raises(ValueError):
        armature.config.patch(regions="sometimes")


def test_eager_backend_inlines_by_default():
    cm = check_inference(Stack(4), torch.randn(2, 3, 8), backend="eager")
    assert calls(cm) == 0


def test_callable_backend_sees_regions_only_when_asked():
    from armature.backends import lookup_backend
    aot = lookup_backend("aot_eager")
    seen = []

    def recording(gm, example_inputs):
        seen.append(sum(1 for n in gm.graph.nodes if n.target is INVOKE))
        return aot(gm, example_inputs)

    check_inference(Stack(4), torch.randn(2, 3, 8), backend=recording)
    armature.reset()
    with armature.config.patch(regions="always"):
        check_inference(Stack(4), torch.randn(2, 3, 8), backend=recording)
    assert seen == [0, 4]


def _weights(n=3, d=4):
    torch.manual_seed(1)
    return [torch.randn(d, d) for _ in range(n)]


def test_compile_region_function_merged_at_any_size():
    @armature.compile_region
    def layer(x, w):
        return torch.relu(x @ w)

    def f(x, ws):
        for w in ws:
            x = layer(x, w)
        return x

    ws = _weights()
    x = torch.randn(2, 4)
    cf = armature.compile(f, backend="aot_eager")
    torch.testing.assert_close(cf(x, ws), f(x, ws))
    assert calls(cf) == 3
    assert layer(x, ws[0]).shape == (2, 4)   # (eager calls are the function itself)


def test_torch_nested_compile_region_honoured():
    mark = getattr(torch.compiler, "nested_compile_region", None)
    if mark is None:
        pytest.skip("torch without nested_compile_region")

    @mark
    def layer(x, w):
        return torch.relu(x @ w) + 1

    def f(x, ws):
        for w in ws:
            x = layer(x, w)
        return x

    ws = _weights()
    x = torch.randn(2, 4)
    cf = armature.compile(f, backend="aot_eager")
    torch.testing.assert_close(cf(x, ws), f(x, ws))
    assert calls(cf) == 3


def test_nested_compile_region_with_eager_backend_runs():
    """The eager backend inlines marked functions (no invoke_subgraph), and
    the marked function is traced, not called as torch's placeholder."""
    mark = getattr(torch.compiler, "nested_compile_region", None)
    if mark is None:
        pytest.skip("torch without nested_compile_region")

    @mark
    def layer(x, w):
        return torch.relu(x @ w) + 1

    def f(x, ws):
        return layer(layer(x, ws[0]), ws[1])

    ws = _weights(2)
    x = torch.randn(2, 4)
    cf = armature.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(cf(x, ws), f(x, ws))


@pytest.mark.inductor
def test_inductor_training_gradients_equal_eager():
    """A Linear after the last block: torch 2.13's inductor reuses a buffer
    the backward still reads unless buffer reuse is off (regions.backend_for)."""
    cm = check_training(Stack(4), torch.randn(2, 5, 8), backend="inductor")
    assert calls(cm) == 3


@pytest.mark.inductor
def test_inductor_dynamic_inference():
    m = Stack(4)
    cm = armature.compile(m, backend="inductor", dynamic=True)
    with torch.no_grad():
        for t in (3, 6):
            x = torch.randn(2, t, 8)
            torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-5)
    assert calls(cm) == 4


def test_backend_failing_on_regions_gets_the_inlined_graph():
    from armature.backends import lookup_backend
    aot = lookup_backend("aot_eager")
    seen = []

    def picky(gm, example_inputs):
        n = sum(1 for node in gm.graph.nodes if node.target is INVOKE)
        seen.append(n)
        if n:
            raise RuntimeError("no invoke_subgraph here")
        return aot(gm, example_inputs)

    with armature.config.patch(regions="always"):
        cm = check_inference(Stack(4), torch.randn(2, 3, 8), backend=picky)
    assert seen == [4, 0] and calls(cm) == 0


def test_error_in_merge_costs_only_the_regions(monkeypatch):
    import armature.graph.regions as regions

    def broken(*a, **k):
        raise KeyError("a bug of ours")

    monkeypatch.setattr(regions, "_subgraph", broken)
    monkeypatch.setenv("ARMATURE_STRICT_INTERNAL_ERRORS", "0")
    cm = check_inference(Stack(4), torch.randn(2, 3, 8))
    entries = armature.cache_entries(cm)
    assert len(entries) == 1 and entries[0].graph_module is not None and calls(cm) == 0


def test_nested_compile_region_on_a_module_forward():
    mark = getattr(torch.compiler, "nested_compile_region", None)
    if mark is None:
        pytest.skip("torch without nested_compile_region")

    class Marked(Block):
        forward = mark(Block.forward)

    cm = check_training(Stack(3, block=Marked), torch.randn(2, 3, 8))
    assert calls(cm) == 2 and subgraphs(cm) == 1


def test_buffer_reuse_off_only_where_a_backward_exists():
    from armature.backends import lookup_backend
    import armature.graph.regions as regions
    inductor = lookup_backend("inductor")
    m = Stack(3)
    x = torch.randn(2, 3, 8)
    for grad, expected in ((True, {"allow_buffer_reuse": False}), (False, None)):
        armature.reset()
        cm = armature.compile(m, backend="aot_eager")
        with torch.set_grad_enabled(grad):
            cm(x)
        gm = armature.cache_entries(cm)[0].graph_module
        assert calls(cm) >= 2
        assert regions.backend_for(inductor, gm).kwargs.get("options") == expected


class ConvBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class ConvStack(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.Sequential(*(ConvBlock() for _ in range(3)))

    def forward(self, x):
        return self.blocks(x).mean((2, 3))


def hoisted(compiled) -> int:
    """Channels-last weight copies made in the outer graph (region_layouts.py)."""
    return sum(1 for n in _outer_nodes(compiled)
               if n.target is torch.Tensor.contiguous and n.kwargs.get("memory_format") is torch.channels_last
               and n.args[0].op == "get_attr")


def layout_copies(compiled) -> tuple:
    """``(into, back)``: the outer graph's channels-last copies of
    activations going into a merged block, and its copies of a merged
    block's channels-last result back into the traced strides."""
    into = sum(1 for n in _outer_nodes(compiled)
               if n.target is torch.Tensor.contiguous and n.kwargs.get("memory_format") is torch.channels_last
               and n.args[0].op != "get_attr")
    back = sum(1 for n in _outer_nodes(compiled) if n.target is torch.clone)
    return into, back


class TorchvisionStyleBlock(nn.Module):
    """``out += identity`` after the convolutions: the block's output takes
    the layout of its convolution's result."""

    def __init__(self, c=4):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        out += x
        return F.relu(out)


class FeatureStack(nn.Module):
    """Returns every block's output: their strides are the user's to see."""

    def __init__(self, block=TorchvisionStyleBlock, c=4, n=3):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(block(c) for _ in range(n))

    def forward(self, x):
        feats = []
        for b in self.blocks:
            x = b(x)
            feats.append(x)
        return feats


@pytest.mark.inductor
def test_convolution_blocks_merge_on_cpu_with_channels_last_weights():
    """On CPU inductor always runs convolutions channels-last: merged
    blocks get their weights converted in the outer graph (one copy per
    weight per call, as inlined), results equal eager's."""
    x = torch.randn(2, 4, 6, 6)
    cm = check_inference(ConvStack().eval(), x, backend="inductor")
    assert calls(cm) == 3 and hoisted(cm) == 6


@pytest.mark.inductor
def test_merged_convolution_blocks_pass_activations_channels_last():
    """Between two merged convolution blocks the activation stays
    channels-last (what the convolutions make and want): the outer graph
    converts it once, into the first block, and copies it back into the
    traced strides only where later code reads it (the mean)."""
    x = torch.randn(2, 4, 6, 6)
    cm = check_inference(ConvStack().eval(), x, backend="inductor")
    assert calls(cm) == 3 and layout_copies(cm) == (1, 1)
    cm = armature.compile(FeatureStack(ConvBlock).eval(), backend="inductor")
    with torch.no_grad():
        cm(x)
    assert calls(cm) == 3 and layout_copies(cm) == (3, 3)   # (every block's output is returned: copies stay)


class WrittenBetweenBlocks(nn.Module):
    """Writes each block's result in place (itself or through a view)
    before the next block reads it."""

    def __init__(self, how):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(ConvBlock() for _ in range(3))
        self.how = how

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
            if self.how == "inplace":
                x.mul_(0.5)
            else:
                x[:, 1] += 1.0
        return x


@pytest.mark.inductor
@pytest.mark.parametrize("how", ["inplace", "view"])
def test_a_block_result_written_in_place_reaches_the_next_block_written(how):
    """The channels-last result and its copy in the traced strides are two
    buffers: when code between two blocks writes the copy, the next block
    must read the written copy, not the block's result."""
    x = torch.randn(2, 4, 6, 6)
    cm = check_inference(WrittenBetweenBlocks(how).eval(), x, backend="inductor")
    assert calls(cm) == 3 and layout_copies(cm) == (3, 3)


@pytest.mark.inductor
@pytest.mark.parametrize("block", [TorchvisionStyleBlock, ConvBlock])
def test_merged_convolution_blocks_keep_every_output_stride(block):
    """A convolution given a channels-last weight returns a channels-last
    result; the merged block copies its outputs back into the strides
    eager gives them, so every block's output the user sees has eager's
    strides (and the blocks after it see what they saw when traced)."""
    m = FeatureStack(block).eval()
    x = torch.randn(2, 4, 6, 6)
    cm = armature.compile(m, backend="inductor")
    with torch.no_grad():
        got, ref = cm(x), m(x)
    assert calls(cm) == 3 and hoisted(cm) == 6 and layout_copies(cm) == (3, 3)
    for g, r in zip(got, ref):
        torch.testing.assert_close(g, r)
        assert g.stride() == r.stride()


@pytest.mark.inductor
def test_merged_convolution_blocks_train_like_eager():
    """The weight copies are differentiable: every parameter's gradient
    equals eager's (batch norm in eval mode: in training mode a block
    updates its running statistics in place, and such a call stays inlined)."""
    m = ConvStack().eval()
    cm = check_training(m, torch.randn(2, 4, 6, 6), backend="inductor")
    assert calls(cm) == 2 and hoisted(cm) == 4   # (block 0's input does not require grad: not like the others)


@pytest.mark.inductor
def test_merged_convolution_blocks_with_a_dynamic_batch():
    m = ConvStack().eval()
    cm = armature.compile(m, backend="inductor", dynamic=True)
    with torch.no_grad():
        for b in (2, 3, 5):
            x = torch.randn(b, 4, 6, 6)
            torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 3 and hoisted(cm) == 6


@pytest.mark.inductor
def test_convolution_blocks_with_large_weights_stay_inlined(caplog):
    """Blocks whose weights exceed region_layouts.MAX_WEIGHT_BYTES measured
    slower merged (torchvision's ResNet, 256-512 channels): under "auto"
    they stay inlined and the log says why; regions="always" merges them."""
    from armature.graph import region_layouts
    c = 1 + int((region_layouts.MAX_WEIGHT_BYTES / 36) ** 0.5)   # (c * c * 9 float32 > the limit)
    m = FeatureStack(ConvBlock, c=c, n=2).eval()
    x = torch.randn(1, c, 3, 3)
    with caplog.at_level("DEBUG", logger="armature.regions"):
        cm = armature.compile(m, backend="inductor")
        with torch.no_grad():
            torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 0
    assert any("a convolution" in r.getMessage() and "layout_optimization" in r.getMessage()
               for r in caplog.records)
    armature.reset()
    with armature.config.patch(regions="always"):
        cm = armature.compile(m, backend="inductor")
        with torch.no_grad():
            torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 2 and hoisted(cm) == 0


class Conv1dBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(c, c, 3, padding=1), nn.Conv1d(c, c, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.conv2(F.relu(self.conv1(x)) * 2))


@pytest.mark.inductor
def test_other_convolutions_stay_inlined_under_inductors_layout_optimization():
    """Only 2-d convolutions get their weights converted; a block with
    another convolution stays inlined under "auto" with inductor's layout
    optimization on, and merges with it off."""
    m = FeatureStack(Conv1dBlock, n=3).eval()
    x = torch.randn(2, 4, 8)
    cm = armature.compile(m, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 0
    armature.reset()
    cm = armature.compile(m, backend="inductor", options={"layout_optimization": False})
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert calls(cm) == 3 and hoisted(cm) == 0


@pytest.mark.inductor
def test_convolution_blocks_stay_inlined_where_inductor_picks_layouts_per_graph(monkeypatch, caplog):
    """Where inductor decides convolution layouts per graph (a device
    without oneDNN, e.g. CUDA: simulated here), the layout inside a merged
    block is not the frontend's to predict, so under "auto" the blocks stay
    inlined and the log says why; with force_layout_optimization inductor
    runs every convolution channels-last, so they merge again."""
    from armature.graph import region_layouts
    monkeypatch.setattr(region_layouts, "_onednn_device", lambda device: False)
    x = torch.randn(2, 4, 6, 6)
    with caplog.at_level("DEBUG", logger="armature.regions"):
        cm = check_inference(ConvStack().eval(), x, backend="inductor")
    assert calls(cm) == 0
    assert any("a convolution" in r.getMessage() and "per graph" in r.getMessage() for r in caplog.records)
    armature.reset()
    cm = check_inference(ConvStack().eval(), x, backend="inductor", options={"force_layout_optimization": True})
    assert calls(cm) == 3 and hoisted(cm) == 6


def test_convolution_blocks_merge_where_no_layout_is_chosen():
    """aot_eager chooses no layouts: the blocks merge; so they do under
    regions="always" whatever the backend does."""
    x = torch.randn(2, 4, 6, 6)
    cm = check_inference(ConvStack().eval(), x)
    assert calls(cm) == 3
    armature.reset()
    with armature.config.patch(regions="always"):
        cm = check_inference(ConvStack().eval(), x, backend="eager")
    assert calls(cm) == 3


def test_marked_function_with_a_convolution_is_merged():
    """A function the user marked is merged whatever it runs."""
    @armature.compile_region
    def layer(x, w):
        return torch.relu(F.conv2d(x, w, padding=1))

    def f(x, ws):
        for w in ws:
            x = layer(x, w)
        return x

    torch.manual_seed(2)
    ws = [torch.randn(4, 4, 3, 3) for _ in range(3)]
    x = torch.randn(1, 4, 5, 5)
    cf = armature.compile(f, backend="aot_eager")
    torch.testing.assert_close(cf(x, ws), f(x, ws))
    assert calls(cf) == 3
