"""nn.Module support: the compiled-module wrapper, modules inside traced code,
built-in torch.nn layers, parameters as attributes vs inputs, monkeypatching
and robustness against unusual modules (see tests/helpers.py)."""
