"""torch.compile as a decorator on a module method and on a function (with
arguments: the bare form is tested in test_patch.py, without paying for
inductor twice), plus torch._dynamo.disable and graph_break."""
import torch
import torch._dynamo
import torch.nn as nn

torch.manual_seed(1)


@torch._dynamo.disable
def log_shape(t):
    return tuple(t.shape)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    @torch.compile(backend="eager", mode="max-autotune-no-cudagraphs")
    def forward(self, x):
        y = self.lin(x).tanh()
        shape = log_shape(y)             # a disabled helper: runs as Python
        torch._dynamo.graph_break()
        return y * 2, shape


@torch.compile(dynamic=True, backend="eager")
def add_one(x):
    return x + 1


b = Block()
out, shape = b(torch.randn(2, 6))
print(shape, [round(v, 4) for v in out.sum(-1).tolist()])
print(add_one(torch.zeros(3)).tolist())
