"""Every report format over one session fixture, plus the `specscope report` CLI."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
from pathlib import Path

import pytest

from specscope.profiler.cli import main as cli
from specscope.profiler.renderers import formats, render_to_file, renderer_for
from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import session_case_stats, summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"
XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]


@pytest.fixture(scope="module")
def session():
    return Session.load(FIXTURE)


@pytest.fixture(scope="module")
def hostile():
    """The fixture with script/markup in every prompt, output, id, content class and model field, and home paths."""
    s = Session.load(FIXTURE)
    d = copy.deepcopy(s.data)
    for i, c in enumerate(d["cases"]):
        c["prompt"] = f"{XSS[0]} prompt {i} {XSS[1]}"
        c["plain_text"] = f"plain {XSS[0]} & {XSS[1]}"
        c["spec_text"] = f"spec {XSS[1]} \"quoted\" {XSS[0]}"
        c["content_class"] = c["content_class"] + "<b>x</b>"
    d["model"]["name"] = f"evil {XSS[0]}"
    d["model"]["path"] = "/home/alice/models/evil"
    d["config"]["model_path"] = "/Users/bob/models/evil"
    d["errors"] = [f"boom {XSS[1]} at /home/alice/x"]
    return Session.from_dict(d)


@pytest.fixture(scope="module")
def html_text(session):
    from specscope.gui.reports import html

    return html.render(session)


EXTS = [".html", ".pdf", ".csv", ".json", ".trace.json"]


# What a PDF writer stamps with the time of writing: info and XMP dates, the XMP document uuid, the trailer /ID.
PDF_VOLATILE = re.compile(rb"D:\d{14}Z?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d)?|uuid:[0-9a-fA-F-]{36}"
                          rb"|/ID \[[^\]]*\]")


@pytest.mark.parametrize("ext", EXTS)
def test_every_format_renders_and_writes(session, tmp_path, ext, monkeypatch):
    import datetime

    from specscope.gui.reports import html as html_report

    class Clock(datetime.datetime):  # one minute for both renders: the footer's stamp, not the document, may differ
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 12, 2, 12, 0)

    monkeypatch.setattr(html_report._dt, "datetime", Clock)
    out = renderer_for(f"x{ext}").render(session)
    assert out and len(out) > 200
    path = tmp_path / f"report{ext}"
    render_to_file(session, path)
    data = path.read_bytes()
    expected = out.encode("utf-8") if isinstance(out, str) else out
    if ext == ".pdf":  # the same document; only the time stamps and ids of the writing differ
        assert data.startswith(b"%PDF-") and PDF_VOLATILE.sub(b"", data) == PDF_VOLATILE.sub(b"", expected)
    else:  # text formats are deterministic: the file is exactly what the renderer returned
        assert data == expected
    assert not list(tmp_path.glob(".*.tmp")), "atomic write left a temporary file"


def test_every_registered_format_is_tested():
    assert set(formats()) <= set(EXTS) | {".htm"}


# -- HTML --------------------------------------------------------------------------

def test_html_is_self_contained(html_text):
    assert html_text.startswith("<!DOCTYPE html>")
    for m in re.finditer(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", html_text, re.I):
        assert not m.group(1).lower().startswith(("http", "//", "file:")), m.group(0)[:80]
        assert m.group(1).startswith("data:") or m.group(1).startswith("#"), m.group(0)[:80]
    assert "<script" not in html_text.lower()
    assert "http://" not in html_text and "https://" not in html_text
    assert "@import" not in html_text and "url(" not in html_text
    assert "<link" not in html_text.lower()


def test_html_has_every_section(session, html_text):
    s = summarize(session)
    for needle in ["Environment and configuration", "Summary", "The division", "Where verify time goes",
                   "Sum of blocks", "Whole graph", "Inter-block overhead", "Barrier distortion",
                   "Acceptance", "Per case", "three questions", "Outputs: plain vs speculative",
                   "T_decode", "T_verify", "T_draft", "Break-even", "Predicted speedup", "Measured speedup",
                   "synthetic demo model", "timings real, text/acceptance not meaningful", s["regime"]]:
        assert needle.lower() in html_text.lower(), needle
    from specscope.profiler.analysis.verdict import audit_answers, verdict
    import html as _h

    assert _h.escape(verdict(s)) in html_text
    for q, _a in audit_answers(s):
        assert _h.escape(q) in html_text
    # all five charts embedded, and the clock probe's when the session has readings
    assert html_text.count("data:image/png;base64,") == 5 + bool(session.data.get("probe"))
    for c in session.cases:
        assert _h.escape(c["id"]) in html_text


def test_html_escapes_prompt_and_model_text(hostile):
    from specscope.gui.reports import html

    out = html.render(hostile)
    assert "<script>" not in out and "<img src=x" not in out and "<b>x</b>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", out)  # base64 can spell anything
    assert "alice" not in text and "bob" not in text and "/home/" not in text and "/Users/" not in text
    assert "~/models/evil" in text


def test_html_formula_writes_the_whole_judged_round(session, html_text):
    """The formula line holds the judged model's whole denominator (it once printed "E·T_decode / =", cut at the
    bracket), and its terms add up to the figure printed."""
    import re

    s = summarize(session)
    m = re.search(r'<p class="formula">predicted speedup = (.*?) = ([0-9.]+) × ([0-9.]+) / \(([^)]*)\) = ([0-9.]+)×',
                  html_text)
    assert m, "no formula line"
    assert m.group(1).startswith("E·T_decode / (T_verify + T_draft")
    terms = [float(x) for x in m.group(4).split(" + ")]
    assert float(m.group(5)) == pytest.approx(float(m.group(2)) * float(m.group(3)) / sum(terms), abs=2e-3)
    assert float(m.group(5)) == pytest.approx(s["predicted_speedup"], abs=6e-4)


def test_html_survives_a_broken_chart(session, monkeypatch):
    import specscope.gui.charts.export as export
    from specscope.gui.reports import html

    def boom(name, *a, **k):
        if name == "division":
            raise RuntimeError("no chart today")
        return real(name, *a, **k)

    real = export.chart_image
    monkeypatch.setattr(export, "chart_image", boom)
    out = html.render(session)
    assert "chart unavailable" in out and "no chart today" in out
    assert out.count("data:image/png;base64,") == 4 + bool(session.data.get("probe"))


def test_oracle_session_is_labelled_what_if(session):
    from specscope.gui.reports import html

    d = copy.deepcopy(session.data)
    d["config"]["drafter"] = {"name": "oracle", "kind": "oracle", "what_if": True}
    out = html.build(Session.from_dict(d), charts={}, target="screen")
    assert "What-if run (oracle drafter)" in out and "WHAT-IF" in out


def test_html_renders_an_empty_session():
    from specscope.gui.reports import html

    out = html.build(Session(), charts={}, target="screen")
    assert "No verdict yet" in out


# -- PDF ---------------------------------------------------------------------------

def test_pdf_is_a_multipage_pdf(session):
    from specscope.gui.reports import pdf

    out = pdf.render(session)
    assert out.startswith(b"%PDF")
    assert out.rstrip().endswith(b"%%EOF")
    pages = len(re.findall(rb"/Type\s*/Page(?![s\w])", out))
    assert pages > 1


# -- JSON --------------------------------------------------------------------------

def test_json_round_trip_is_exact(session):
    from specscope.profiler.renderers import json_renderer

    text = json_renderer.render(session)
    d = json.loads(text)
    assert d["schema"] == "specscope.session" and isinstance(d["schema_version"], int)
    assert Session.from_dict(d) == session


def test_json_round_trip_through_a_file(session, tmp_path):
    p = tmp_path / "s.json"
    render_to_file(session, p)
    assert Session.load(p) == session


# -- trace ---------------------------------------------------------------------------

def test_trace_is_trace_event_json(session):
    from specscope.profiler.renderers import trace

    doc = json.loads(trace.render(session))
    assert doc["displayTimeUnit"] == "ms"
    evs = doc["traceEvents"]
    assert evs
    for e in evs:
        for key in ("name", "ph", "ts", "pid", "tid"):
            assert key in e, (key, e)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert e["ph"] in ("X", "M")
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    names = {e["name"] for e in evs}
    for n in ("prefill", "decode step", "draft", "verify", "rollback", "process_name", "thread_name", "MoE", "Linear attention"):
        assert n in names or any(x.startswith(n + " (") for x in names), n
    # one process per case, and cases laid out one after another
    starts = {}
    for e in evs:
        if e["ph"] == "X":
            lo, hi = starts.get(e["pid"], (float("inf"), 0))
            starts[e["pid"]] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
    spans = [starts[p] for p in sorted(starts)]
    assert len(spans) == len(session.cases)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    # children nest inside their round
    rounds = [e for e in evs if e["ph"] == "X" and e["name"] == "round"]
    verifies = [e for e in evs if e["ph"] == "X" and e["name"] == "verify"]
    assert len(rounds) == len(verifies) == sum(len(c["spec"]["rounds"]) for c in session.cases)
    for r, v in zip(rounds, verifies):
        assert r["ts"] <= v["ts"] and v["ts"] + v["dur"] <= r["ts"] + r["dur"] + 1e-3


# -- CSV -----------------------------------------------------------------------------

def test_csv_one_row_per_case(session):
    from specscope.profiler.renderers import csv_renderer

    rows = list(csv.DictReader(io.StringIO(csv_renderer.render(session))))
    assert len(rows) == len(session.cases)
    assert [r["id"] for r in rows] == [c["id"] for c in session.cases]
    for col in ("content_class", "prompt_tokens", "plain_tok_s", "spec_tok_s", "p", "p_ci95_low", "p_ci95_high",
                "tokens_per_round", "t_verify_ms", "t_draft_ms", "predicted_speedup", "measured_speedup",
                "prediction_error", "match_rate", "first_divergence"):
        assert col in rows[0], col
    st = session_case_stats(session, session.cases[0])
    assert float(rows[0]["plain_tok_s"]) == pytest.approx(st["plain_tok_s"], rel=1e-3)


def test_csv_neutralises_formula_prompts(session):
    from specscope.profiler.renderers import csv_renderer

    d = copy.deepcopy(session.data)
    d["cases"][0]["prompt"] = "=HYPERLINK(1)"
    rows = list(csv.DictReader(io.StringIO(csv_renderer.render(Session.from_dict(d)))))
    assert rows[0]["prompt"].startswith("'=")


# -- CLI -----------------------------------------------------------------------------

def test_cli_report_writes_html(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli.main(["report", str(FIXTURE), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_report_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "r.csv"
    out.write_text("keep me")
    rc = cli.main(["report", str(FIXTURE), "-o", str(out)])
    assert rc != 0
    err = capsys.readouterr().err
    assert "exists" in err.lower() and "--force" in err
    assert out.read_text() == "keep me"
    assert cli.main(["report", str(FIXTURE), "-o", str(out), "--force"]) == 0
    assert out.read_text().startswith("id,")


def test_cli_report_unknown_extension(tmp_path, capsys):
    rc = cli.main(["report", str(FIXTURE), "-o", str(tmp_path / "r.docx")])
    assert rc != 0
    assert "format" in capsys.readouterr().err.lower()
    assert not (tmp_path / "r.docx").exists()


# Loaded into a subprocess (sitecustomize): PySide6 and shiboken6 cannot be imported, as if not installed.
NO_QT = r'''
import sys


class _NoQt:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("PySide6", "shiboken6"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoQt())
'''


def test_cli_pdf_report_without_qt_is_a_clear_error(tmp_path):
    """No working Qt: `report -o r.pdf` says what is missing (exit 2, no traceback, no file); the core's
    own formats still work."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_QT)
    env = {**os.environ, "PYTHONPATH": str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def report(name):
        return subprocess.run([sys.executable, "-m", "specscope", "report", str(FIXTURE), "-o", name], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)

    r = report("r.pdf")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("specscope: error: ") and "Traceback" not in r.stderr, r.stderr
    assert "needs PySide6, which is not installed" in r.stderr, r.stderr
    assert not (tmp_path / "r.pdf").exists() and not list(tmp_path.glob(".*.tmp"))
    r = report("r.csv")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.csv").read_text(encoding="utf-8").startswith("id,")
    # HTML still renders (its text needs no Qt) but says which charts it had to leave out
    r = report("r.html")
    assert r.returncode == 0, r.stderr
    assert "specscope: warning: chart throughput left out" in r.stderr and "PySide6" in r.stderr, r.stderr
    assert "chart unavailable" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_csv_writes_the_verify_cost_and_tune_tables_beside_the_report(session, tmp_path):
    from specscope.profiler.renderers import render_to_file

    render_to_file(session, tmp_path / "plain.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.csv"]  # nothing measured: no side tables
    d = session.to_dict()
    d["roofline"] = {"curve": [{"positions": n, "whole_ms": 10.0 * n, "by_block": {
        "moe": {"ms": 6.0 * n, "floor_ms": 1.0, "efficiency": 1.0 / (6.0 * n), "weight_bytes": 100, "other_bytes": 0,
                "flops": 50.0, "bound": "bandwidth", "distinct_experts": 3.0}}} for n in (1, 2)]}
    d["tune"] = {"recommendation": {"drafter": "mtp", "k": 2},
                 "rows": [{"drafter": "mtp", "k": k, "predicted_speedup": 0.5, "predicted_ci95": [0.4, 0.6],
                           "measured_speedup": 0.55, "prediction_error": -0.09} for k in (1, 2)]}
    render_to_file(Session.from_dict(d), tmp_path / "r.csv")
    cost = list(csv.DictReader(io.StringIO((tmp_path / "r.verify_cost.csv").read_text())))
    assert [(r["positions"], r["block"], r["floor_ms"]) for r in cost] == [("1", "moe", "1.0000"), ("2", "moe", "1.0000")]
    tune = list(csv.DictReader(io.StringIO((tmp_path / "r.tune.csv").read_text())))
    assert [r["recommended"] for r in tune] == ["false", "true"] and tune[0]["predicted_ci95_low"] == "0.4000"


# -- a context sweep (issue 26): the Long context section, its charts and its side table ---------------------------

def _sweep(contexts=(0, 1024)) -> Session:
    """A sweep session folded from its events, each point holding the fixture's cases (no model run)."""
    base = migrate_names(json.loads(FIXTURE.read_text(encoding="utf-8")))  # the fixture keeps the old names
    top = Session()
    top.apply({"event": "run_started", "config": {**base["config"], "sweep": list(contexts)},
               "environment": base["environment"], "model": base["model"], "cases": []})
    top.apply({"event": "sweep_started", "contexts": list(contexts), "order": [*contexts, *reversed(contexts)],
               "passes": 2, "kind": "mixed"})
    for n in contexts:
        if n:
            top.apply({"event": "context", "context": n, "tokens": n, "prefill_ms": 40.0 * n, "prefill_tok_s": 25.0,
                       "kv_bytes": 1000 * n})
    for p in top.data["sweep"]["points"]:
        p["session"]["cases"] = copy.deepcopy(base["cases"])
        p["complete"], p["visits"] = True, 2
    top.data["status"] = "complete"
    return Session.from_dict(top.to_dict())


@pytest.fixture(scope="module")
def sweep_session():
    return _sweep()


@pytest.mark.parametrize("ext", EXTS)
def test_a_sweep_session_renders_in_every_format_with_its_context_section(sweep_session, tmp_path, ext):
    path = tmp_path / f"r{ext}"
    render_to_file(sweep_session, path)
    data = path.read_bytes()
    assert len(data) > 200 and not list(tmp_path.glob(".*.tmp"))
    if ext == ".html":
        text = data.decode("utf-8")
        assert "<h2" in text and "Long context</h2>" in text and "Speed and cost per context" in text
        for key in ("speedup", "verify", "split", "acceptance"):  # the Context page's four charts, drawn
            assert f'alt="context_{key}" src="data:image/png;base64,' in text, key
        assert "the verdict is per context" in text and "No verdict yet" not in text
        assert "context sweep: 2 contexts × " in text and "1k" in text
        assert "Per case</h2>" not in text  # a sweep's top level has no cases of its own: no empty run sections
    elif ext == ".pdf":
        from specscope.gui.reports import html

        assert data.startswith(b"%PDF-")
        doc = html.build(sweep_session, {}, target="print")  # the text the PDF lays out
        assert "Long context</h2>" in doc and "Acceptance and speedup per context" in doc
    elif ext == ".csv":
        side = list(csv.DictReader(io.StringIO((tmp_path / "r.context.csv").read_text(encoding="utf-8"))))
        assert [r["context"] for r in side] == ["0", "1024"]
        assert side[1]["prefill_ms"] == "40960.0000" and side[0]["prefill_ms"] == ""
        for col in ("plain_tok_s", "spec_tok_s", "t_decode_ms", "verify_over_decode", "t_draft_ms",
                    "full_attention_share_decode", "full_attention_share_verify", "kv_bytes_per_step", "p",
                    "p_ci95_low", "tokens_per_round", "predicted_speedup", "measured_speedup",
                    "break_even_multiple"):
            assert side[1][col] != "", col
        # 3 cases of 24 tokens: too few rounds for the speedup's interval (blocks of rounds), and the cell says so by
        # being empty, as the figure is None
        from specscope.profiler.analysis.sweep import sweep_figures

        iv = sweep_figures(sweep_session)[1].get("measured_speedup_ci95")
        assert (side[1]["measured_speedup_ci95_high"] == "") == (iv is None)
    elif ext == ".json":
        assert Session.load(path) == sweep_session
    else:  # the trace: one process per context and case
        names = [e["args"]["name"] for e in json.loads(data)["traceEvents"] if e["name"] == "process_name"]
        assert len(names) == 2 * len(sweep_session.data["sweep"]["points"][0]["session"]["cases"])
        assert names[-1].startswith("context 1k · case ")


def test_a_session_without_a_sweep_has_no_context_section(session, html_text, tmp_path):
    from specscope.profiler.renderers import csv_renderer

    assert "Long context" not in html_text and "context_speedup" not in html_text
    assert "context" not in csv_renderer.extra_tables(session)


def test_the_context_table_marks_a_negative_draft_time_as_noise(sweep_session, monkeypatch):
    """T_draft in a round is a round less the verify before it: below zero it is shown as measured, marked noise."""
    from specscope.gui.reports import html_context
    from specscope.profiler.analysis.sweep import sweep_figures

    rows = sweep_figures(sweep_session)
    rows[1] = {**rows[1], "t_draft_ms": -76.1, "t_draft_ms_ci95": [-140.3, -11.8]}
    monkeypatch.setattr(html_context, "sweep_figures", lambda s: rows)
    out = html_context.context_section(sweep_session, {}, "screen")
    assert "below noise*" in out and "-76.1" not in out and "measurement noise" in out and "−140.3 to −11.8" in out


def _with_preflight(session, ignored: bool):
    """The fixture session with a pre-flight from readings recorded on Macs (Low Power Mode on: the pmset line from a
    public repository's notes, see tests/engine_adapter/test_preflight.py) and a path under a home folder."""
    from specscope.engine_adapter import preflight

    readings = {"system": "Darwin", "mlx_device": "Device(gpu, 0)", "versions": {"mlx": "0.30.4", "mlx-lm": "0.32.2"},
                "device_info": {"architecture": "applegpu_g13g", "device_name": "Apple M1",
                                "max_recommended_working_set_size": 11453251584, "memory_size": 17179869184},
                "outputs": {"pmset -g": " lowpowermode         1\n"}, "files": {}}
    parts = [{"part": "target", "dtype": "bfloat16", "path": "/home/alice/models/<b>x</b>", "how": "as loaded"}]
    d = copy.deepcopy(session.data)
    d["preflight"] = {**preflight.evaluate(readings, parts, 2 * 2**30), "ignored": ignored}
    return Session.from_dict(d)


def test_html_and_csv_show_the_preflight(session, tmp_path):
    from specscope.gui.reports import html

    s = _with_preflight(session, ignored=True)
    out = html.render(s)
    assert "Pre-flight: the machine before the run" in out
    assert "went on anyway (--ignore-preflight)" in out
    assert '<span class="bad">fail</span>' in out and "Low Power Mode" in out and "Low Power Mode: Never" in out
    assert '<span class="warn">warn</span>' in out and "mlx_lm.convert" in out  # bfloat16 on an M1
    assert '<span class="muted">not checked</span>' in out
    assert "&lt;b&gt;x&lt;/b&gt;" in out and "/home/alice" not in out
    assert out.index("Pre-flight: the machine") < out.index("<h2>Summary")
    render_to_file(s, str(tmp_path / "r.csv"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.preflight.csv").read_text())))
    assert {r["check"]: r["status"] for r in rows}["Low Power Mode"] == "fail"
    assert "/home/alice" not in (tmp_path / "r.preflight.csv").read_text()
    # a session from before the pre-flight says so, and writes no pre-flight table
    assert "No pre-flight in this session" in html.render(session)


def test_pdf_carries_the_preflight(session, tmp_path):
    render_to_file(_with_preflight(session, ignored=False), str(tmp_path / "r.pdf"))
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


def test_a_charts_reason_travels_with_its_report_not_through_the_module(session, monkeypatch, tmp_path):
    """Why a chart was left out is held by the charts it belongs to (``Charts.left_out``): a report drawn later in
    the same process neither loses it nor inherits it. It used to sit in a module-level dict that every report
    shared, read back after the fact."""
    import specscope.gui.charts.export as export
    from specscope.gui.reports import html
    from specscope.profiler.renderers import render_to_file

    real = export.chart_image

    def boom(name, *a, **k):
        if name == "division":
            raise RuntimeError("no chart today")
        return real(name, *a, **k)

    monkeypatch.setattr(export, "chart_image", boom)
    broken = html.collect_charts(session)
    monkeypatch.setattr(export, "chart_image", real)
    drawn = html.collect_charts(session)
    assert "no chart today" in html.build(session, broken)  # still known after another report was drawn
    assert "chart unavailable" not in html.build(session, drawn)
    assert render_to_file(session, tmp_path / "r.html") == []
    monkeypatch.setattr(export, "chart_image", boom)
    assert render_to_file(session, tmp_path / "r2.html") == ["chart division left out: RuntimeError: no chart today"]
