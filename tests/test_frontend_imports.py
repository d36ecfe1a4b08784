"""armature's frontend is built from scratch: outside src/armature/backends/
(which may call into torch's compiler stacks) it must not use TorchDynamo.

(a) statically: no ``torch._dynamo`` and no ``torch.compile(`` in the code of
    the frontend modules (comments and docstrings may mention them).  The
    drop-in runner lives in its own package, ``src/armature_runner``: its
    ``patch.py`` makes an unmodified ``torch.compile`` script run with
    armature by *replacing* attributes of ``torch`` / ``torch._dynamo`` /
    ``torch.compiler`` (and restoring them); it calls nothing of Dynamo,
    and armature reaches it only from ``armature.patch_torch_compile()`` and
    ``python -m armature`` (``import armature`` does not, checked below);
(b) at run time, in a fresh interpreter.  The obvious check, "torch._dynamo
    is not in sys.modules after compiling and running a function", is not
    meaningful with this torch: ``import torch`` does not load Dynamo, but
    torch's own fake-tensor machinery does (FakeTensorMode / ShapeEnv import
    ``torch.fx.experimental.validator``, which imports ``torch._dynamo.exc``
    and ``torch._dynamo.utils``), and any tracer that runs ops on fake
    tensors must use it.  So we check what armature controls:
    * ``import armature`` does not load torch._dynamo;
    * every ``torch._dynamo*`` import during compile + run is made by a file
      of torch itself, never by an armature frontend file;
    * Dynamo compiled nothing (its frame counters stay empty and its
      eval-frame callback is never installed while the compiled call runs).
"""

import io
import json
import os
import subprocess
import sys
import textwrap
import tokenize

import pytest
from machine import generous

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
PKG = os.path.join(SRC, "armature")
BACKENDS = os.path.join(PKG, "backends")
FORBIDDEN = ("torch._dynamo", "torch.compile(")
#: the runner's patching module (see the module docstring), outside the frontend
RUNNER_PATCH = os.path.join(SRC, "armature_runner", "patch.py")


def code_without_comments_and_docstrings(source: str) -> str:
    """The source with comments and bare string statements (docstrings)
    removed; every other string literal is kept (``import_module("torch._dynamo")``
    must still be caught)."""
    out = []
    prev_significant = tokenize.NEWLINE
    pending_string = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            continue
        if pending_string is not None:
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                pending_string = None  # a bare string statement: drop it
            else:
                out.append(pending_string.string)
                pending_string = None
        if tok.type == tokenize.STRING and prev_significant in (
                tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            pending_string = tok
        elif tok.type not in (tokenize.NL,):
            out.append(tok.string)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev_significant = tok.type
    return " ".join(out).replace(" . ", ".").replace(" (", "(")


def frontend_files():
    for dirpath, _, names in os.walk(PKG):
        if os.path.commonpath([dirpath, BACKENDS]) == BACKENDS:
            continue
        for name in names:
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def test_scanner_ignores_comments_and_docstrings_only():
    clean = '"""Unlike torch._dynamo, and torch.compile(fn)."""\nx = 1  # not torch._dynamo\n'
    assert not any(p in code_without_comments_and_docstrings(clean) for p in FORBIDDEN)
    for dirty in ("import torch._dynamo\n", "from torch._dynamo import utils\n",
                  "f = torch.compile(g)\n", "m = importlib.import_module('torch._dynamo')\n",
                  "def f():\n    '''doc'''\n    return torch . _dynamo . reset()\n"):
        text = code_without_comments_and_docstrings(dirty)
        assert any(p in text for p in FORBIDDEN), dirty


def test_only_the_runner_package_touches_dynamo():
    with open(RUNNER_PATCH, encoding="utf-8") as fh:
        code = code_without_comments_and_docstrings(fh.read())
    assert "torch._dynamo" in code   # else the runner could live in the frontend package
    importers = []
    for path in frontend_files():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if "armature_runner" in code_without_comments_and_docstrings(text):
            importers.append(os.path.relpath(path, ROOT))
    # only the public wrapper in __init__ (called, never at import) and `python -m armature` reach it
    assert sorted(importers) == ["src/armature/__init__.py", "src/armature/__main__.py"]


def test_frontend_source_does_not_reference_dynamo():
    files = list(frontend_files())
    assert len(files) > 10  # the walk found the package
    offenders = []
    for path in files:
        with open(path, encoding="utf-8") as fh:
            code = code_without_comments_and_docstrings(fh.read())
        offenders += [f"{os.path.relpath(path, ROOT)}: {p}" for p in FORBIDDEN if p in code]
    assert offenders == []


_CHILD = textwrap.dedent(r"""
    import importlib.abc, json, os, sys

    importers = []  # (module, file that imported it)

    class Spy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "torch._dynamo" or name.startswith("torch._dynamo."):
                f = sys._getframe(1)
                while f is not None and f.f_code.co_filename.startswith("<frozen"):
                    f = f.f_back
                importers.append((name, f.f_code.co_filename if f else "?"))
            return None

    sys.meta_path.insert(0, Spy())
    import torch
    after_torch = "torch._dynamo" in sys.modules
    import armature
    after_armature = "torch._dynamo" in sys.modules

    callbacks = []  # Dynamo's eval-frame callback, seen while compiling and running

    def backend(gm, example_inputs):
        callbacks.append(repr(torch._C._dynamo.eval_frame.get_eval_frame_callback()))

        def run(*args):
            callbacks.append(repr(torch._C._dynamo.eval_frame.get_eval_frame_callback()))
            return gm.forward(*args)
        return run

    def f(x, y):
        return torch.relu(x) @ y + 1

    cf = armature.compile(f, backend=backend, fullgraph=True)
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    for _ in range(2):
        assert torch.equal(cf(x, y), f(x, y))

    from torch._dynamo.utils import counters
    print(json.dumps({
        "after_torch": after_torch,
        "after_armature": after_armature,
        "after_run": "torch._dynamo" in sys.modules,
        "importers": importers,
        "dynamo_counters": {k: dict(v) for k, v in counters.items() if v},
        "callbacks": callbacks,
    }))
""")


@pytest.fixture(scope="module")
def child_report():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    env.pop("ARMATURE_LOGS", None)
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                          timeout=generous(300), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_armature_does_not_load_dynamo(child_report):
    assert child_report["after_torch"] is False  # else this check would say nothing
    assert child_report["after_armature"] is False


def test_dynamo_is_only_imported_by_torch_itself(child_report):
    frontend = [(mod, path) for mod, path in child_report["importers"]
                if os.path.abspath(path).startswith(PKG + os.sep)
                and not os.path.abspath(path).startswith(BACKENDS + os.sep)]
    assert frontend == []


def test_dynamo_compiled_nothing(child_report):
    assert child_report["dynamo_counters"] == {}
    assert child_report["callbacks"] == ["None"] * 3  # compile, call, call


def test_import_armature_does_not_load_sympy():
    """symbolic_shapes (and with it sympy) is a quarter of ``import armature``;
    a process that only runs entries loaded from disk (the warm start) never
    needs it, so the tracer imports it when it first traces."""
    code = ("import sys, torch\nbefore = 'sympy' in sys.modules\nimport armature\n"
            "print(before, 'sympy' in sys.modules, 'torch.fx.experimental.symbolic_shapes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=generous(120),
                         env=dict(os.environ, PYTHONPATH=SRC))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]
