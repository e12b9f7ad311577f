"""The setup panel offers the DFlash drafter, with the drafter folder in the draft-model field, and its pre-flight."""

from specscope.gui.inspector import DEMO
from specscope.gui.preflight_line import preflight_command


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


def test_preflight_names_the_dflash_drafter():
    assert preflight_command("/m", "dflash", "/d")[3:] == ["preflight", "--model", "/m", "--drafter", "dflash",
                                                           "--draft-model", "/d", "--json"]
