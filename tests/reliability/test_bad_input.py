"""Bad input that earlier suites do not cover: every case ends in one clear line on stderr, exit code 2,
no traceback, and nothing half-written.

Already covered elsewhere (not repeated here):
  tests/engine_adapter/model/test_checkpoint_errors.py  missing path, not a dir, no/malformed config, unknown
      model_type, remote code, no/pickle/truncated/non-safetensors weights, wrong shapes, no tokenizer,
      HF cache entry, vocabulary mismatch (API level), oversize model
  tests/engine_adapter/drafters/test_mtp.py               no mtp weights (API level), --mtp-weights shape mismatch
  tests/profiler/cli/test_cli.py                      k out of range, --max-tokens 0, missing model, existing
      output refused, suite not UTF-8, empty prompt
  tests/profiler/session/test_session.py                  truncated session, newer schema, nonsense values, zero cases
"""

from __future__ import annotations

import json
import shutil

import pytest

from specscope.profiler.cli.main import main
from specscope.profiler.session.session import Session

from .helpers import FIXTURE, assert_clear_failure, specscope

pytestmark = pytest.mark.timeout(120)


# -- context window ---------------------------------------------------------------------------------

def test_max_tokens_beyond_context_window(small_context_model, tmp_path):
    out = tmp_path / "s.json"
    r = specscope("run", "--model", small_context_model, "--drafter", "ngram", "--cases", "1", "--max-tokens", "100",
                  "--warmup", "0", "--no-breakdown", "-o", out)
    assert_clear_failure(r, "exceeds the context window (64)", "--max-tokens 100")
    # the session file says what happened (failed, with the message), and loads
    s = Session.load(out)
    assert s.status == "failed" and "context window" in s.data["errors"][-1]


def test_prompt_longer_than_context_window(small_context_model, tmp_path):
    suite = tmp_path / "long.json"
    suite.write_text(json.dumps({"cases": [{"id": "short", "prompt": "hi"},
                                           {"id": "too-long", "prompt": "word " * 400}]}), encoding="utf-8")
    r = specscope("run", "--model", small_context_model, "--drafter", "ngram", "--suite", suite, "--max-tokens", "4",
                  "--warmup", "0", "--no-breakdown")
    assert_clear_failure(r, "case too-long", "exceeds the context window (64)")


# -- suites -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "content, message",
    [
        ('{"cases": [{"prompt": "a"}', "is not valid JSON"),               # truncated / malformed
        ("", "is not valid JSON"),                                          # empty file
        ('{"name": "no cases here"}', "has no cases"),                      # missing "cases"
        ('{"cases": []}', "has no cases"),                                  # zero cases
        ('{"cases": [{"id": "a", "category": "en"}]}', 'case 1 has no "prompt" string'),  # missing field
        ('{"cases": [{"prompt": 42}]}', 'case 1 has no "prompt" string'),   # wrong type
        ('{"cases": [17]}', "case 1 is not an object"),
        ('{"cases": [{"id": "x", "prompt": "a"}, {"id": "x", "prompt": "b"}]}', "duplicate case id 'x'"),
        ("[1, 2", "is not valid JSON"),
    ],
)
def test_bad_suite_files(tmp_path, capsys, content, message):
    suite = tmp_path / "suite.json"
    suite.write_text(content, encoding="utf-8")
    # fails fast in the CLI, before a worker or model is started
    assert main(["run", "--demo", "--suite", str(suite)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error: suite ") and message in err and "Traceback" not in err


def test_suite_missing_or_a_folder(tmp_path, capsys):
    assert main(["run", "--demo", "--suite", str(tmp_path / "nope.json")]) == 2
    assert "cannot read suite" in capsys.readouterr().err
    assert main(["run", "--demo", "--suite", str(tmp_path)]) == 2
    assert "cannot read suite" in capsys.readouterr().err


# -- drafting -------------------------------------------------------------------------------------------

def test_mtp_drafter_on_a_model_without_mtp_via_cli(demo_draft_dir):
    r = specscope("run", "--model", demo_draft_dir, "--drafter", "mtp", "--cases", "1", "--max-tokens", "4")
    assert_clear_failure(r, "no mtp weights", "--mtp-weights")


def test_draft_model_with_another_vocabulary_via_cli(demo_draft_dir, tmp_path):
    other = tmp_path / "other-vocab"
    shutil.copytree(demo_draft_dir, other)
    tok = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[300:302]
    vocab[a], vocab[b] = vocab[b], vocab[a]  # same size, different mapping
    (other / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    r = specscope("run", "--model", demo_draft_dir, "--drafter", "draft", "--draft-model", other,
                  "--cases", "1", "--max-tokens", "4")
    assert_clear_failure(r, "has a different vocabulary")


def test_draft_drafter_without_a_draft_model(demo_draft_dir, capsys):
    assert main(["run", "--model", str(demo_draft_dir), "--drafter", "draft"]) == 2
    assert "--drafter draft needs --draft-model" in capsys.readouterr().err


# -- sessions ----------------------------------------------------------------------------------------------

def _fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _report(tmp_path, d, capsys, ext=".html") -> tuple[int, str]:
    src = tmp_path / "s.json"
    src.write_text(json.dumps(d) if not isinstance(d, str) else d, encoding="utf-8")
    out = tmp_path / f"out{ext}"
    rc = main(["report", str(src), "-o", str(out)])
    assert not out.exists(), "a refused session must not produce a report"
    return rc, capsys.readouterr().err


def test_older_schema_is_refused_clearly(tmp_path, capsys):
    d = _fixture()
    d["schema_version"] = 0
    rc, err = _report(tmp_path, d, capsys)
    assert rc == 2 and "schema 0 is too old" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(schema_version="1"), "no schema version"),
        (lambda d: d.update(schema_version=99), "newer specscope"),
        (lambda d: d.pop("schema"), "not a specscope session"),
        (lambda d: d.update(cases="lots"), "missing its cases"),
        (lambda d: d["cases"][0]["plain"].update(step_ms=[1.0, -5.0]), "step times"),
        (lambda d: d["cases"][0]["plain"].update(step_ms=["fast"]), "step times"),
        (lambda d: d["cases"][0]["plain"].update(tokens=[1, "two"]), "token ids"),
        (lambda d: d["cases"][0]["spec"]["rounds"][0].update(accepted=99), "a round accepts 99"),
        (lambda d: next(r for r in d["cases"][0]["spec"]["rounds"]  # an instrumented round (the ledger pass) times its verify
                        if r.get("kind", "instrumented") == "instrumented").update(verify_ms=None), "verify_ms"),
        (lambda d: d["cases"][0]["components"].update(verify_ms=[1.0, "x"]), "components"),
        (lambda d: d["cases"][0].pop("plain"), "malformed case"),
        (lambda d: d["cases"].append("not a case"), "malformed case"),
    ],
)
def test_hand_edited_nonsense_through_report(tmp_path, capsys, edit, message):
    d = _fixture()
    edit(d)
    rc, err = _report(tmp_path, d, capsys, ext=".csv")
    assert rc == 2 and err.startswith("specscope: error: ") and message in err and "Traceback" not in err


@pytest.mark.parametrize("text, message", [("[]", "not a specscope session"), ("null", "not a specscope session"),
                                           ('{"schema": "specscope.session"', "not a complete session file")])
def test_not_a_session_through_report(tmp_path, capsys, text, message):
    rc, err = _report(tmp_path, text, capsys)
    assert rc == 2 and message in err and "Traceback" not in err


def test_session_not_utf8_through_report(tmp_path, capsys):
    src = tmp_path / "s.json"
    src.write_bytes(b"\xff\xfe{}")
    assert main(["report", str(src), "-o", str(tmp_path / "o.html")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
