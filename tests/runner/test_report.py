"""The HTML run report, checked structurally (parsed HTML) and, where
Chromium is installed, rendered by a real browser."""
from __future__ import annotations

import html.parser
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

import armature
from armature.diagnostics import hints, record, report, summary
from machine import generous


class Page(html.parser.HTMLParser):
    """Element tree light: every element as (tag, attrs, text inside it)."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[dict] = []
        self._open: list[dict] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(el)
        if tag not in ("meta", "link", "br", "rect", "input", "img"):
            self._open.append(el)

    def handle_endtag(self, tag):
        while self._open:
            el = self._open.pop()
            if el["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data

    def find(self, tag=None, cls=None, id=None):
        out = []
        for el in self.elements:
            if tag and el["tag"] != tag:
                continue
            if cls and cls not in el["attrs"].get("class", "").split():
                continue
            if id and el["attrs"].get("id") != id:
                continue
            out.append(el)
        return out


def step(x, n):
    y = torch.relu(x) * 2
    print("partial", n)                  # a graph break
    z = y.sum(dim=0) + n
    return z


@pytest.fixture
def recorded():
    record.clear()
    rec = record.start()
    try:
        yield rec
    finally:
        record.clear()


def test_report_sections_shading_guards_and_recompiles(recorded, capsys):
    f = armature.compile(step, backend="eager")
    f(torch.randn(3, 4), 1)
    f(torch.randn(5, 4), 1)              # a recompile: the batch size changed
    page = Page(report.render(recorded))
    assert [s["attrs"]["id"] for s in page.find("section")] == ["overview", "breaks", "timeline", "fn0"]
    overview = page.find("table", cls="functions")[0]["text"]
    assert "step" in overview and "test_report.py" in overview
    rows = page.find("tr", cls="code-row")
    first = step.__code__.co_firstlineno
    by_line = {int(re.match(r"\d+", r["text"]).group()): r for r in rows}   # (the line-number cell first)
    assert set(by_line) == set(range(first, first + 5))
    # the lines with ops are shaded with a graph's colour; the def line is not
    captured = {n for n, r in by_line.items() if "captured" in r["attrs"]["class"]}
    assert captured == {first + 1, first + 3}
    # the print line is the break: marked, ran as Python, with reason and hint
    brk = by_line[first + 2]
    assert "brk" in brk["attrs"]["class"] and "py" in brk["attrs"]["class"]
    notes = [n["text"] for n in page.find("tr", cls="note")]
    assert any("print() writes output" in n and "Hint: print() runs as Python" in n for n in notes)
    # each cache entry: guards and FX code
    entries = page.find("details", cls="entry")
    assert len(entries) == len(armature.cache_entries(f)) + 2   # + the two resume functions' entries
    guards = " ".join(g["text"] for g in page.find("div", cls="guards"))
    assert "x: Tensor float32" in guards
    fx = " ".join(g["text"] for g in page.find("div", cls="fx"))
    assert "def forward" in fx and "relu" in fx
    # the recompile: the guard that failed, with what it saw
    recompiles = page.find("table", cls="recompiles")[0]["text"]
    assert "x.size()[0] == 3 failed: got 5" in recompiles
    # the timeline has one bar pair per compile
    assert len(page.find("rect")) == 2 * len(recorded.all_entries())
    # no network, no external assets
    text = report.render(recorded)
    assert "http://" not in text and "https://" not in text and "<link" not in text and " src=" not in text


def test_summary_and_explain_share_the_hint(recorded):
    f = armature.compile(step, backend="eager")
    f(torch.randn(3, 4), 1)
    text = summary.text(recorded)
    hint = str(hints.hint_for("print() writes output"))
    assert hint in text
    assert hint in str(armature.explain(step)(torch.randn(3, 4), 1))


def test_every_reason_has_a_hint():
    assert hints.hint_for("something nobody has seen before") is hints.DEFAULT
    assert hints.hint_for("x", site_hint="do y").text == "do y"
    for reason, category in [("Tensor.item() reads a value out of the tensor", "data-dependent"),
                             ("the truth value of a tensor depends on its data (data-dependent control flow)",
                              "data-dependent"),
                             ("helper() could not be inlined: print() writes output", "I/O"),
                             ("call to time.time, a C function armature does not know", "C code"),
                             ("internal error: KeyError while compiling f: 3", "armature bug"),
                             ("f was called with a TorchFunctionMode active; ...", "torch function modes"),
                             ("armature.graph_break() was called", "requested"),
                             ("iterating <lazy ___stack0>", "iterators"),
                             ("g() could not be inlined: ValueError: bottom reached", "exceptions"),
                             ("str() with arguments that are not known while tracing", "values not known"),
                             ("LazyLinear has hooks installed", "lazy modules"),
                             ("hit the recompile limit (8); last reason: n == 3", "recompile limit")]:
        assert hints.hint_for(reason).category == category, reason
    for _, h in hints.RULES:
        assert h.text and h.category


def test_report_writes_at_exit_and_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError):
        armature.report(3)
    out = tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-c",
                           "import torch, armature, sys\n"
                           f"armature.report({str(out)!r})\n"
                           "f = armature.compile(lambda x: x + 1, backend='eager')\n"
                           "f(torch.ones(2))\n"],
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(
                              os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src"),
                              os.environ.get("PYTHONPATH")]))),
                          capture_output=True, text=True, timeout=generous(300))
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and "report written to" in proc.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install -y chromium); "
                                             "the browser rendering check needs it")
def test_demo_model_report_renders_in_chromium(recorded, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "demo"))
    try:
        from model import GPTConfig, make_model
    finally:
        sys.path.pop(0)
    model, idx = make_model(GPTConfig())
    with torch.no_grad():
        armature.compile(model, backend="eager")(idx)
    path = report.write(str(tmp_path / "demo.html"), recorded)
    png = tmp_path / "demo.png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1200,1600", f"--screenshot={png}", f"file://{path}"],
                          capture_output=True, text=True, timeout=generous(120))
    assert png.exists(), proc.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 30_000        # a rendered page, not a blank one (a blank 1200x1600 PNG is ~10 KB)
