"""The setup panel's pre-flight line (gui.preflight_line): the pre-flight measured in the worker for the picked model,
one line before Run, every check in the tooltip, and the box that lets a run go past a failed one."""

from __future__ import annotations

from specscope.engine_adapter import preflight as pf
from specscope.gui.inspector import DEMO
from specscope.gui.preflight_line import details, preflight_config, summary_line

# An Apple M1 with Low Power Mode on: readings recorded on real Macs (sources in tests/engine_adapter/test_preflight.py)
MAC_LPM = {"system": "Darwin", "mlx_device": "Device(gpu, 0)", "versions": {"mlx": "0.30.4", "mlx-lm": "0.32.2"},
           "device_info": {"architecture": "applegpu_g13g", "device_name": "Apple M1",
                           "max_recommended_working_set_size": 11453251584},
           "outputs": {"pmset -g": " lowpowermode         1\n"}, "files": {}}


def test_the_config_names_the_pick():
    assert preflight_config(DEMO).demo and preflight_config(DEMO).model is None
    cfg = preflight_config("/m", "draft", "/d")
    assert (cfg.model, cfg.demo, cfg.drafter, cfg.draft_model) == ("/m", False, "draft", "/d")
    assert preflight_config(None).model is None and not preflight_config(None).demo


def test_the_line_names_what_fails_and_the_tooltip_says_the_fix():
    rep = pf.evaluate(MAC_LPM)
    line = summary_line(rep)
    assert line.startswith("Pre-flight: ✗ a run stops here unless you tick the box below: Low Power Mode fail")
    assert "fix: turn it off" in details(rep)
    calm = pf.evaluate({**MAC_LPM, "outputs": {"pmset -g": " lowpowermode         0\n"}})
    assert "✗" not in summary_line(calm) and "not checked" in summary_line(calm)


def test_the_panel_checks_the_picked_model_and_the_box_insists(qtbot, settings, monkeypatch):
    from specscope.gui.setup_panel import SetupPanel

    monkeypatch.delenv("SPECSCOPE_PREFLIGHT_READINGS", raising=False)  # this machine, in the line's own process
    panel = SetupPanel(settings)
    qtbot.addWidget(panel)
    line = panel.preflight
    line.check(*panel.preflight_args())  # the real command, on this machine
    qtbot.waitUntil(lambda: line.report is not None, timeout=120000)
    assert line.label.text().startswith("Pre-flight: ") and line.report["checks"]
    assert panel.config().ignore_preflight is False
    line.show_report(pf.evaluate(MAC_LPM))
    assert "✗" in line.label.text() and "Low Power Mode" in line.label.toolTip()
    line.insist.setChecked(True)
    assert panel.config().ignore_preflight is True
    line.shutdown()
