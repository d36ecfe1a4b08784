"""The HTML run report of a real model stays small: GPT-2 (the zoo's config)
over three sequence lengths, compiled with a recompile, in one report."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

import armature  # noqa: E402
from armature.diagnostics import record, report  # noqa: E402

from zoo import VOCAB, hf_gpt2  # noqa: E402


def test_gpt2_report_is_small_and_names_the_model(tmp_path):
    record.clear()
    rec = record.start()
    try:
        case = hf_gpt2()
        model = case.model.eval()
        compiled = armature.compile(model, backend="eager")
        with torch.no_grad():
            for n in (8, 12, 16):
                ids = torch.randint(0, VOCAB, (2, n), generator=torch.Generator().manual_seed(n))
                torch.testing.assert_close(compiled(ids).logits, model(ids).logits)
        path = report.write(str(tmp_path / "gpt2.html"), rec)
    finally:
        record.clear()
    text = open(path, encoding="utf-8").read()
    assert len(text.encode()) < 2_000_000
    assert "compiled module GPT2LMHeadModel" in text
    assert "size()[1] == 8 failed: got 12" in text     # the recompile, with the guard that failed
    assert "modeling_gpt2.py" in text                   # lines captured in the model's own code
