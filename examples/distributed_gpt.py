"""Train a small GPT-2-like model for a few steps under DDP or FSDP2 with
armature, next to the same model in eager mode, and print both losses.

    torchrun --nproc-per-node 2 examples/distributed_gpt.py            # DDP
    torchrun --nproc-per-node 2 examples/distributed_gpt.py --fsdp2    # FSDP2

Runs on CPU with gloo (any number of processes).  armature compiles the
model's math; DDP's and FSDP's hooks and collectives run as they do eagerly
(DDP's graph is split at its gradient buckets: armature.config.optimize_ddp).
"""
from __future__ import annotations

import argparse
import copy

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import armature


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=96, d=128, heads=4, depth=2, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def wrap(model: nn.Module, fsdp2: bool) -> nn.Module:
    if fsdp2:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        for blk in model.blocks:
            fully_shard(blk, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, bucket_cap_mb=1)


def train(model: nn.Module, steps: int) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        g = torch.Generator().manual_seed(10 * step + dist.get_rank())   # each rank its own data
        seq = torch.randint(0, 96, (4, 17), generator=g)
        opt.zero_grad()
        logits = model(seq[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 96), seq[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp2", action="store_true", help="shard with FSDP2 instead of DDP")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--backend", default="aot_eager", help="armature backend (inductor needs a C++ compiler)")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    base = GPT()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return armature.backends.lookup_backend(args.backend)(gm, example_inputs)

    eager = train(wrap(copy.deepcopy(base), args.fsdp2), args.steps)
    compiled = train(armature.compile(wrap(copy.deepcopy(base), args.fsdp2), backend=counting), args.steps)
    rank = dist.get_rank()
    print(f"rank {rank}: {'FSDP2' if args.fsdp2 else 'DDP'} eager    losses {[round(x, 5) for x in eager]}")
    print(f"rank {rank}: {'FSDP2' if args.fsdp2 else 'DDP'} armature losses {[round(x, 5) for x in compiled]}"
          f" ({len(graphs)} graphs)")
    same = all(abs(a - b) <= 1e-5 * max(1.0, abs(a)) for a, b in zip(eager, compiled))
    print(f"rank {rank}: {'same losses' if same else 'LOSSES DIFFER'}")
    dist.barrier()   # (no rank tears gloo down while another still talks to it: an abort at exit otherwise, rarely)
    dist.destroy_process_group()
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
