"""Real-model suite: needs the [models] extra (torchvision, transformers,
timm), which `./dev models` installs in .venv-models.  `./dev test` does not
collect this directory; under a venv without the extra the test modules skip
themselves (pytest.importorskip).

Nothing here may reach the network: models are built from configs with
random weights, and the hub is switched off before transformers is imported.

The suite runs against two library sets (`./dev models --libs current|old|all`,
libsets.py); torchvision is imported here, through libsets.import_torchvision,
before any test module imports it: in the old set its compiled ops do not load
and its pure-Python model code is imported without
torchvision._meta_registrations.
"""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, os.path.dirname(__file__))
import libsets  # noqa: E402

libsets.import_torchvision()


def pytest_report_header(config):
    return f"library set: {libsets.describe()}"


def pytest_terminal_summary(terminalreporter):
    try:
        from zoo import GRAPH_COUNTS
    except ImportError:
        return
    if not GRAPH_COUNTS:
        return
    tr = terminalreporter
    tr.section(f"graphs and breaks, armature / torch.compile ({libsets.describe()})")
    tr.write_line("| model | mode | graphs arm / tc | breaks arm / tc | armature's first break where it makes more graphs |")
    tr.write_line("| --- | --- | --- | --- | --- |")
    for name, modes in sorted(GRAPH_COUNTS.items()):
        for mode, c in modes.items():
            tr.write_line(f"| {name} | {mode} | {c.graphs} / {c.torch_graphs} | {c.breaks} / {c.torch_breaks} | "
                          f"{c.reason.replace('|', '/')} |")
