"""The setup panel offers the DFlash drafter, with the drafter folder in the draft-model field, and its pre-flight."""

from specscope.gui.inspector import DEMO
from specscope.gui.preflight_line import preflight_config


def test_setup_panel_offers_dflash_with_its_folder(window):
    s = window.setup
    s.set_model(DEMO)
    s.set_drafter("dflash")
    assert s.drafter.currentData() == "dflash"
    assert s._drafter_form.isRowVisible(s.draft_row)
    s.draft_model.setText("/some/dflash-drafter")
    cfg = s.config()
    assert cfg.drafter == "dflash" and cfg.draft_model == "/some/dflash-drafter"
    cfg.validate()
    s.set_drafter("ngram")
    assert not s._drafter_form.isRowVisible(s.draft_row) and s.config().draft_model is None


def test_setup_panel_offers_dflash2_as_dflash_with_a_dflash2_folder(window, tmp_path, monkeypatch):
    from specscope.engine_adapter.model import shipped as dm
    from specscope.errors import SpecscopeError
    from specscope.profiler.cli.main import main

    assert main(["demo-model", str(tmp_path / "d2"), "--dflash2", "--random", "--block-size", "4"]) == 0
    s = window.setup
    s.set_model(DEMO)
    s.set_drafter("dflash2")
    assert s.drafter.currentData() == "dflash2" and s._drafter_form.isRowVisible(s.draft_row)
    assert s._drafter_form.labelForField(s.draft_row).text() == "DFlash2 folder"
    monkeypatch.setattr(dm, "trained_demo_path", lambda kind="hybrid": tmp_path / "d2" if kind == "dflash2" else None)
    cfg = s.config()  # the demo's own DFlash2 drafter where none is given; the run records dflash
    assert (cfg.drafter, cfg.draft_model) == ("dflash", str(tmp_path / "d2"))
    assert preflight_config(DEMO, "dflash2", None).drafter == "dflash"
    monkeypatch.setattr(dm, "trained_demo_path", lambda kind="hybrid": None)
    try:
        s.config()
    except SpecscopeError as exc:
        assert "ships no trained DFlash2" in str(exc)
    else:
        raise AssertionError("a missing DFlash2 demo drafter was not refused")
    assert preflight_config(DEMO, "dflash2", None).drafter == "auto"  # the pre-flight still checks the machine


def test_preflight_names_the_dflash_drafter():
    cfg = preflight_config("/m", "dflash", "/d")
    assert (cfg.model, cfg.drafter, cfg.draft_model) == ("/m", "dflash", "/d")


def test_an_opened_session_sets_the_protocol_so_run_repeats_it(window):
    """Opening a session sets its drafter, k, tokens, cases, warm-ups, repeats, discarded cases and sampling in the
    setup: Run then measures the same thing again (it had kept 128 tokens and all cases beside a 3 × 64 session)."""
    import json
    from pathlib import Path

    d = json.loads((Path(__file__).parent / "fixtures" / "session_dflash_quick.json").read_text())
    s = window.setup
    s.max_tokens.setValue(128)
    s.cases.setValue(0)
    s.repeats.setValue(4)
    s.greedy.setChecked(False)
    s.show_session(d)
    cfg = s.config()
    want = d["config"]
    assert (cfg.max_tokens, cfg.cases, cfg.repeats, cfg.warmup) == (want["max_tokens"], want["cases"], want["repeats"],
                                                                    want["warmup"])
    assert cfg.drafter == "dflash" and cfg.num_draft_tokens == want["num_draft_tokens"] and cfg.temp == 0.0
    sampled = {**d, "config": {**want, "temp": 0.7, "top_p": 0.9, "cases": None}}
    s.show_session(sampled)
    cfg = s.config()
    assert cfg.temp == 0.7 and cfg.top_p == 0.9 and cfg.cases is None
