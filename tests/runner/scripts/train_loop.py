"""A small training loop written for torch.compile: a graph break in the
forward (a print of a Python number) and a recompile (the last batch is
smaller).  Run as it is, and under `python -m armature run`."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 1)
        self.steps = 0

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.training and self.steps % 4 == 0:
            print("hidden mean", round(h.mean().item(), 4))   # a graph break
        return self.fc2(h).squeeze(-1)


model = Net()
compiled = torch.compile(model, backend=sys.argv[1] if len(sys.argv) > 1 else "aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.randn(40, 8)
target = data.sum(dim=1)
for epoch in range(2):
    for start in range(0, 40, 12):        # batches of 12, 12, 12 and 4: a recompile
        x, y = data[start:start + 12], target[start:start + 12]
        loss = ((compiled(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.steps += 1
        print(f"epoch {epoch} batch {start // 12} size {x.shape[0]} loss {loss.item():.4f}")
model.eval()
with torch.no_grad():
    print("eval", [round(v, 4) for v in compiled(data[:3]).tolist()])
