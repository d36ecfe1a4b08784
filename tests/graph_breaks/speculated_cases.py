"""Functions for tests/graph_breaks/test_speculated_checks.py, in a module
pytest does not rewrite (its assert rewriting turns an ``assert`` into
other code, with addresses in the message)."""
from __future__ import annotations

import torch


def normal_log_prob(mu, sigma, x):
    d = torch.distributions.Normal(mu, sigma)
    return d.log_prob(x), d.entropy()


def categorical_log_prob(logits, idx):
    return torch.distributions.Categorical(logits=logits).log_prob(idx)


def asserts_on_tensor(x, y):
    z = x * 2
    assert (z > -100).all(), "too small"
    return z + y


def raises_on_nan(x, y):
    loss = (x * y).sum()
    if torch.isnan(loss):
        raise FloatingPointError(f"loss is nan for shape {tuple(x.shape)}")
    return loss * 2



LOG = []
STATE = {"n": 0}


def effects_before_check(x):
    LOG.append("before")
    STATE["n"] += 1
    y = x.sin()
    if not torch._is_all_true(y < 0.99):
        raise ValueError("too big")
    LOG.append("after")
    return y


def break_then_check(x):
    LOG.append("first")
    y = x + 1
    print(end="")   # a graph break: the check is in the resume function
    LOG.append("second")
    if (y > 10).any():
        raise ValueError(f"too big: {y.max().item():.1f}")
    return y * 2


def caught_by_the_frame(x):
    try:
        assert (x > 0).all(), "not positive"
        out = x.log()
    except AssertionError as e:
        LOG.append(str(e))
        out = x.abs().log()
    return out
