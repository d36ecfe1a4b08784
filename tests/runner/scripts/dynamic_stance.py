"""torch._dynamo.mark_dynamic, torch.compiler.set_stance and
torch.compiler.is_compiling in a script written for torch.compile."""
import torch
import torch._dynamo


def norm_rows(x, eps):
    scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if torch.compiler.is_compiling():
        scale = scale * 1.0
    return x * scale


f = torch.compile(norm_rows, backend="eager")
for n in (4, 6, 9):
    x = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3)
    torch._dynamo.mark_dynamic(x, 0)
    print(n, [round(v, 4) for v in f(x, 1e-5).sum(-1).tolist()])

with torch.compiler.set_stance("force_eager"):
    print("eager", round(f(torch.ones(2, 3), 1e-5).sum().item(), 4))

try:
    with torch.compiler.set_stance("fail_on_recompile"):
        f(torch.ones(5, 7), 1e-5)
    print("no recompile needed")
except Exception as e:
    print("recompile refused:", isinstance(e, RuntimeError))

torch._dynamo.reset()
print("after reset", round(f(torch.ones(3, 3), 1e-5).sum().item(), 4))
print("outside", torch.compiler.is_compiling())
