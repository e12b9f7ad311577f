"""The content table's renderers (one per format, picked by the extension) and ``specscope content``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from specscope.profiler.analysis.by_content import content_table
from specscope.profiler.cli.main import main
from specscope.profiler.renderers.content import RENDERERS, content_to_file
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


@pytest.fixture(scope="module")
def table():
    s = Session.load(FIXTURE)
    return content_table([s, s], ["mtp-a", "mtp-b"])


@pytest.mark.parametrize("ext", sorted(RENDERERS))
def test_every_format_holds_every_class_and_drafter(table, ext, tmp_path):
    out = tmp_path / f"by-content{ext}"
    content_to_file(table, out)
    text = out.read_text(encoding="utf-8")
    for name in ("mtp-a", "mtp-b"):
        assert name in text
    for cls in ("code", "en", "zh"):
        assert cls in text
    row = table["rows"][0]
    if ext == ".json":
        assert json.loads(text)["rows"][0]["tokens_per_round"] == pytest.approx(row["tokens_per_round"])
    elif ext == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == 6 and float(rows[0]["tokens_per_round"]) == pytest.approx(row["tokens_per_round"])
        assert len(rows[0]["p_ci95"].split()) == 2  # an interval as two numbers
    else:
        assert f"{row['tokens_per_round']:.2f}" in text and f"{row['predicted_speedup']:.3f}×" in text
        assert "<script" not in text


def test_the_command_prints_writes_and_refuses(tmp_path, capsys):
    assert main(["content", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("by content — demo-hybrid-v3, greedy") and "no two classes differ" in out
    assert main(["content", str(FIXTURE), "-o", str(tmp_path / "t.html")]) == 0 and (tmp_path / "t.html").exists()
    assert main(["content", str(FIXTURE), "-o", str(tmp_path / "t.pdf")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err and not (tmp_path / "t.pdf").exists()
    other = json.loads(FIXTURE.read_text(encoding="utf-8"))
    other["model"]["name"] = "another"
    (tmp_path / "other.json").write_text(json.dumps(other), encoding="utf-8")
    assert main(["content", str(FIXTURE), str(tmp_path / "other.json")]) == 2
    assert "one target" in capsys.readouterr().err
    assert main(["content", str(tmp_path / "missing.json")]) == 2
