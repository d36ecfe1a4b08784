"""Module-level tensors and numbers read through relative imports
(tests/python_semantics/test_relative_imports.py)."""
import torch

WEIGHT = torch.arange(3.0)
BIAS = torch.ones(3, requires_grad=True)
OFFSET = 2
