"""Progress on the terminal: by default when stderr is a terminal, with the time left; nothing on stderr when
it is not, unless --progress asks; --quiet silences it."""

from __future__ import annotations

import argparse
import io
import re

from specscope.profiler.cli.progress import Bar, PhaseProgress, Progress, progress_wanted

ETA = re.compile(r"\[\d\d:\d\d<(\d\d:\d\d|\?)\]")  # tqdm's [elapsed<remaining]


class Tty(io.StringIO):
    def isatty(self):
        return True

    def fileno(self):  # a pty that reports no size (as under `script`): the bar must still be drawn
        raise OSError("no size")


def test_when_progress_is_shown():
    tty, pipe = Tty(), io.StringIO()
    ns = argparse.Namespace
    assert progress_wanted(ns(quiet=False, progress=False), tty)
    assert not progress_wanted(ns(quiet=True, progress=False), tty)
    assert not progress_wanted(ns(quiet=False, progress=False), pipe)
    assert progress_wanted(ns(quiet=False, progress=True), pipe)
    assert not progress_wanted(ns(), pipe) and progress_wanted(ns(), tty)


def test_phase_progress_shows_the_time_left_and_the_phase():
    out = Tty()
    p = PhaseProgress("tune", 4, stream=out)
    for msg in ("loading", "plain decoding", "verify curve over n = 1..5", "confirmation 1/3", "one phase more than expected"):
        p(msg)
    p.close()
    text = out.getvalue()
    assert "tune:" in text and "confirmation 1/3" in text and ETA.search(text)
    assert "5/5 steps" in text  # the total grew when the count passed the estimate


def test_disabled_bar_writes_nothing_and_results_still_go_to_stdout(capsys):
    err = io.StringIO()
    b = Bar("bench", 4, "pairs", enabled=False, stream=err)
    b.update_to(2, "capture: pair 2")
    b.write_out("capture  ratio 1.0")
    b.close()
    assert err.getvalue() == "" and capsys.readouterr().out == "capture  ratio 1.0\n"


def test_run_progress_counts_tokens_against_the_total():
    out = Tty()
    p = Progress(stream=out)
    p.update({"event": "run_started", "config": {"n_cases": 1, "repeats": 1, "max_tokens": 4}}, None)
    for _ in range(3):
        p.update({"event": "step"}, None)
    p.update({"event": "round", "emitted": [1, 2]}, None)
    p.close()
    assert "5/8 tokens" in out.getvalue() and ETA.search(out.getvalue())


def test_check_is_silent_when_piped_and_shows_progress_when_asked(capsys):
    from specscope.profiler.cli.main import main

    assert main(["check", "--demo", "--max-k", "1", "--json"]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and '"class"' in cap.out
    assert main(["check", "--demo", "--max-k", "1", "--json", "--progress"]) == 0
    err = capsys.readouterr().err
    assert "check:" in err and "2/2 checks" in err and "rollback exactness: k = 1, 1 accepted" in err
    assert ETA.search(err)


def test_roofline_and_tune_draw_a_bar_with_the_time_left_on_a_terminal(monkeypatch):
    from specscope.profiler.cli import engine as engine_cli, roofline as roofline_cli, tune as tune_cli

    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    roofline_cli.add_parser(sub)
    tune_cli.add_parser(sub)
    for argv, command in ((["roofline", "--demo"], roofline_cli), (["tune", "--demo", "--drafters", "ngram"], tune_cli)):
        a = ap.parse_args(argv)
        say = command.status(a)
        say("loading the demo model")
        say("a long phase")
        engine_cli.close_status(say)
    text = tty.getvalue()
    assert "roofline:" in text and "tune:" in text and "a long phase" in text and ETA.search(text)
    tty.truncate(0)
    a = ap.parse_args(["tune", "--demo", "--quiet"])
    say = tune_cli.status(a)
    say("quiet")
    engine_cli.close_status(say)
    assert "quiet" not in tty.getvalue()
