"""The drop-in runner: ``python -m armature run script.py [args]`` runs a
script written for ``torch.compile`` with armature (runner/patch.py routes
the calls), then prints a summary and optionally writes the HTML report."""
