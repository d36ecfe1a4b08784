"""How libraries ask whether a model is compiled (accelerate's
``is_compiled_module`` / ``has_compiled_regions`` / ``extract_model_from_parallel``,
transformers' Trainer): ``isinstance(m, torch._dynamo.eval_frame.OptimizedModule)``,
then ``m._orig_mod``, and the compiled wrapper given its module back.  The
helpers below have the shape of accelerate's (not installed here)."""
import torch
import torch._dynamo
from torch._dynamo.eval_frame import OptimizedModule as ImportedEarly


def is_compiled_module(module):
    if not hasattr(torch, "_dynamo"):
        return False
    return isinstance(module, torch._dynamo.eval_frame.OptimizedModule)


def has_compiled_regions(module):
    if not module._modules:
        return False
    return any(isinstance(sub, torch._dynamo.eval_frame.OptimizedModule) for sub in module.modules())


def extract_model_from_parallel(model, keep_torch_compile=True):
    options = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    compiled = is_compiled_module(model)
    if compiled:
        compiled_model = model
        model = model._orig_mod
    while isinstance(model, options):
        model = model.module
    if compiled and keep_torch_compile:
        compiled_model._orig_mod = model
        model = compiled_model
    return model


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)

    def forward(self, x):
        y = self.norm(self.lin(x))
        if torch.compiler.is_compiling():
            y = y + 1
        return y


torch.manual_seed(0)
net = Net()
x = torch.randn(2, 4)
compiled = torch.compile(net, backend="eager")

print("compiled:", is_compiled_module(compiled), "plain:", is_compiled_module(net))
print("torch._dynamo.OptimizedModule:", isinstance(compiled, torch._dynamo.OptimizedModule))
print("imported before compiling:", isinstance(compiled, ImportedEarly))
print("subclass:", issubclass(type(compiled), torch._dynamo.eval_frame.OptimizedModule),
      issubclass(Net, torch._dynamo.eval_frame.OptimizedModule))
print("regions:", has_compiled_regions(compiled), has_compiled_regions(net))
print("orig is net:", compiled._orig_mod is net)
print("out:", [round(v, 4) for v in compiled(x)[0].tolist()])
print("is_compiling outside:", torch.compiler.is_compiling())

unwrapped = extract_model_from_parallel(compiled, keep_torch_compile=False)
print("unwrapped is net:", unwrapped is net)
rewrapped = extract_model_from_parallel(compiled)
print("rewrapped is compiled:", rewrapped is compiled, "orig still net:", compiled._orig_mod is net)
print("state_dict of the original:", sorted(compiled._orig_mod.state_dict()))
print("net's own modules:", [name for name, _ in net.named_modules()])
print("out again:", [round(v, 4) for v in rewrapped(x)[0].tolist()])

# another module given to the wrapper (what extract_model_from_parallel does
# after unwrapping a DataParallel): the wrapper now runs that module
other = Net()
compiled._orig_mod = other
print("swapped orig:", compiled._orig_mod is other)
print("out of other:", [round(v, 4) for v in compiled(x)[0].tolist()])
print("eager other:", [round(v, 4) for v in (other(x) + 1)[0].tolist()])
