"""Differential test corpus: armature.compile vs eager (see tests/helpers.py)."""
