"""``specscope capture``: Metal GPU traces of one decode step and one verify forward.

On this kind of machine (Linux, MLX on the CPU) the command must refuse, clearly and before
anything is loaded or created. The Metal path is tested through its seams: a fake
``start_capture`` / ``stop_capture`` (which, like Metal, writes a .gputrace bundle and refuses
an existing one), a fake Metal probe, and the worker's measurement (``run.measurement``) run in-process on the
configuration the CLI would start the worker with.
"""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.engine_adapter.measure import gpu_trace as engine_capture
from specscope.errors import SpecscopeError
from specscope.profiler.cli import gpu_trace as cli_capture, worker_measure
from specscope.profiler.cli.main import main
from specscope.profiler.run import measurement
from specscope.profiler.run.capture_run import capture_data
from specscope.profiler.run.pump import EventPump
from specscope.profiler.run.tool_configs import CaptureConfig

ROOT = Path(__file__).resolve().parents[3]
NOT_METAL = "GPU trace capture needs Metal (macOS on Apple silicon); this machine runs MLX on "
HAS_METAL = engine_capture.metal_status()["metal"]
needs_no_metal = pytest.mark.skipif(HAS_METAL, reason="this machine has Metal: the refusal cannot happen here")


def small_model() -> str:
    from specscope.engine_adapter.model.demo_model import demo_model_path

    return str(demo_model_path("draft"))


class FakeMetal:
    """``mx.metal`` as far as a capture uses it; records every call."""

    def __init__(self, fail_start: Exception | None = None):
        self.log: list[tuple] = []
        self.capturing: str | None = None
        self.fail_start = fail_start

    def is_available(self):
        return True

    def device_info(self):
        return {"device_name": "Apple M2 (fake)", "architecture": "applegpu_g14g", "memory_size": 1 << 34}

    def start_capture(self, path):
        if self.fail_start:
            raise self.fail_start
        assert self.capturing is None, "captures must not nest"
        p = Path(path)
        assert p.suffix == ".gputrace" and p.parent.is_dir()
        if p.exists():
            raise RuntimeError("[metal::start_capture] Failed to start: the file already exists")
        p.mkdir()  # a .gputrace is a bundle (a folder)
        (p / "capture.mtlsp-journal").write_text("fake")
        self.capturing = p.name
        self.log.append(("start", p.name))

    def stop_capture(self):
        self.log.append(("stop", self.capturing))
        self.capturing = None


class RecordingModel:
    """Wraps a model: every forward is logged with its width and the capture running at the time."""

    def __init__(self, model, metal: FakeMetal):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_metal", metal)
        object.__setattr__(self, "calls", [])

    def __call__(self, x, *a, **kw):
        self.calls.append((int(x.shape[1]), self._metal.capturing))
        return self._model(x, *a, **kw)

    def __getattr__(self, name):
        return getattr(self._model, name)


def in_process_worker(monkeypatch, measure, seen):
    """``runner.run_worker`` with the worker's measurement run in this process (``measure``: the capture, with a fake
    Metal): the same events, folded by the same pump."""

    def run_worker(cfg, on_event=None, autosave=None, on_start=None):
        seen["cfg"] = cfg
        pump = EventPump(autosave, on_event)

        def emit(ev):
            pump.feed(json.dumps(ev))

        with monkeypatch.context() as m:
            m.setitem(measurement.MEASURE, "capture", measure)
            for k, v in cfg.worker_env.items():
                m.setenv(k, v)
            try:
                emit({"event": "run_done", "status": measurement.run_measurement(cfg, emit)})
            except SpecscopeError as exc:
                emit({"event": "error", "message": str(exc), "kind": "input"})
        return pump.result(0, "")

    monkeypatch.setattr(worker_measure, "run_worker", run_worker)


@pytest.fixture
def fake_metal_cli(monkeypatch):
    """The CLI believes it is on Metal; the worker's measurement runs in-process on the configuration the CLI built."""
    metal = FakeMetal()
    seen = {}
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal (Apple M2 (fake))"})
    in_process_worker(monkeypatch, functools.partial(capture_data, metal=metal), seen)
    return metal, seen


def _forbid_model_loading(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a model was loaded")

    import specscope.engine_adapter.model.demo_model as demo_model
    import specscope.engine_adapter.model.loader as loader
    import specscope.model_ref as model_ref

    monkeypatch.setattr(loader, "load_model", boom)
    monkeypatch.setattr(demo_model, "demo_model_path", boom)
    monkeypatch.setattr(model_ref, "resolve_model", boom)
    monkeypatch.setattr(worker_measure, "run_worker", boom)


# -- this machine: no Metal -----------------------------------------------------------------------

@needs_no_metal
def test_refuses_without_metal_in_its_own_process(tmp_path):
    out = tmp_path / "traces"
    home = tmp_path / "home"
    env = {**os.environ, "SPECSCOPE_HOME": str(home)}
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", "capture", "--demo", "-k", "3", "-o", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("specscope: error: " + NOT_METAL), r.stderr
    assert "CPU" in line or "CUDA" in line
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not out.exists()  # no folder created
    assert not home.exists() or not any(home.rglob("config.json"))  # the demo model was not even built


@needs_no_metal
def test_refuses_before_resolving_or_loading_a_model(tmp_path, monkeypatch, capsys):
    _forbid_model_loading(monkeypatch)
    out = tmp_path / "traces"
    for args in (["--demo"], ["--model", "nobody/not-a-cached-model"], ["--model", str(tmp_path / "missing")]):
        rc = main(["capture", *args, "-o", str(out)])
        err = capsys.readouterr().err
        assert rc == 2
        assert err.startswith("specscope: error: " + NOT_METAL), err
        assert not out.exists()


@needs_no_metal
def test_check_says_why_not(capsys):
    assert main(["capture", "--check"]) == 2
    assert NOT_METAL in capsys.readouterr().err


@needs_no_metal
def test_worker_refuses_too(tmp_path):
    """Started by hand (not through the CLI), the worker refuses the same way, as an input error event."""
    from specscope.profiler.run.measure_config import worker_argument

    cfg = CaptureConfig(out_dir=str(tmp_path), prompt="hello", demo=True)
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.run.worker", worker_argument(cfg)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=cli_capture.capture_env())
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.returncode == 2 and events[-1]["event"] == "error" and NOT_METAL in events[-1]["message"], r.stdout
    assert list(tmp_path.iterdir()) == []


def test_check_on_metal(monkeypatch, capsys):
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal (Apple M2 (fake))"})
    _forbid_model_loading(monkeypatch)
    assert main(["capture", "--check"]) == 0
    assert capsys.readouterr().out.strip() == "GPU trace capture is available: MLX runs on Metal (Apple M2 (fake))"


def test_messages_and_names():
    assert engine_capture.not_metal_message("CPU (Linux x86_64)") == NOT_METAL + "CPU (Linux x86_64)"
    assert engine_capture.metal_status(FakeMetal()) == {"metal": True, "device": "Metal (Apple M2 (fake))"}
    for k in (1, 2, 7):
        assert cli_capture.output_files(k) == engine_capture.output_files(k)
    assert engine_capture.output_files(3) == ["decode.gputrace", "verify-k3.gputrace", "capture.json"]


def test_worker_environment_enables_capture(monkeypatch):
    monkeypatch.delenv("MTL_CAPTURE_ENABLED", raising=False)
    env = cli_capture.capture_env()
    assert env["MTL_CAPTURE_ENABLED"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(cli_capture.__file__).resolve().parents[3])
    assert "MTL_CAPTURE_ENABLED" not in os.environ  # only the worker gets it


# -- the Metal path, through its seams --------------------------------------------------------------

def test_capture_forwards_prefills_outside_and_captures_one_forward_each(tmp_path):
    from specscope.engine_adapter.model.loader import load_model

    lm = load_model(small_model())
    metal = FakeMetal()
    model = RecordingModel(lm.model, metal)
    prompt = lm.encode("The quick brown fox jumps over the lazy dog, again and again.")
    got = engine_capture.capture_forwards(model, prompt, 3, tmp_path, metal=metal)

    assert metal.log == [("start", "decode.gputrace"), ("stop", "decode.gputrace"),
                         ("start", "verify-k3.gputrace"), ("stop", "verify-k3.gputrace")]
    inside = [c for c in model.calls if c[1] is not None]
    assert inside == [(1, "decode.gputrace"), (4, "verify-k3.gputrace")]  # exactly one forward in each capture
    # the prefill (all prompt positions but the last, then the last) runs first, before any capture
    assert model.calls[:2] == [(len(prompt) - 1, None), (1, None)]
    assert {p.name for p in tmp_path.iterdir()} == {"decode.gputrace", "verify-k3.gputrace"}

    decode, verify = got["captures"]
    assert got["k"] == 3 and got["prompt_tokens"] == len(prompt)
    assert decode == {"name": "decode", "file": "decode.gputrace", "positions": 1, "start_position": len(prompt),
                      "tokens": verify["tokens"][:1]}
    assert verify["positions"] == 4 and len(verify["tokens"]) == 4 and verify["start_position"] == len(prompt)
    assert verify["accepted"] == 3  # CPU: the verify agrees with the greedy chain, so it ran at the decode's position


def test_capture_forwards_on_a_hybrid_keeps_the_verify_state_capture(tmp_path):
    from specscope.engine_adapter.model.demo_model import demo_model_path
    from specscope.engine_adapter.model.loader import load_model

    lm = load_model(demo_model_path("hybrid"))
    metal = FakeMetal()
    got = engine_capture.capture_forwards(lm.model, lm.encode("A hybrid model, Gated DeltaNet and attention."), 1,
                                          tmp_path, metal=metal)
    assert got["hybrid"] is True and got["captures"][1]["state_capture"] is True
    assert got["captures"][1]["positions"] == 2 and got["captures"][1]["accepted"] == 1
    assert {p.name for p in tmp_path.iterdir()} == {"decode.gputrace", "verify-k1.gputrace"}


def test_start_capture_failure_names_the_variable(tmp_path, monkeypatch):
    from specscope.engine_adapter.model.loader import load_model
    from specscope.errors import SpecscopeError

    monkeypatch.delenv("MTL_CAPTURE_ENABLED", raising=False)
    lm = load_model(small_model())
    metal = FakeMetal(fail_start=RuntimeError("[metal::start_capture] Failed to start: Capture layer is not inserted"))
    with pytest.raises(SpecscopeError, match="MTL_CAPTURE_ENABLED=1"):
        engine_capture.capture_forwards(lm.model, lm.encode("hello there"), 2, tmp_path, metal=metal)


def test_cli_metal_path_end_to_end(tmp_path, fake_metal_cli, capsys):
    metal, seen = fake_metal_cli
    out = tmp_path / "new" / "traces"  # missing parents are created
    rc = main(["capture", "--model", small_model(), "-k", "3", "-o", str(out)])
    std = capsys.readouterr()
    assert rc == 0, std.err
    assert seen["cfg"].worker_env["MTL_CAPTURE_ENABLED"] == "1"
    cfg = seen["cfg"]
    assert cfg.k == 3 and cfg.prompt_id == "zh-01" and cfg.out_dir == str(out.resolve())
    assert {p.name for p in out.iterdir()} == {"decode.gputrace", "verify-k3.gputrace", "capture.json"}
    assert all((out / f).is_dir() for f in ("decode.gputrace", "verify-k3.gputrace"))
    d = json.loads((out / "capture.json").read_text(encoding="utf-8"))
    assert d["model"] == Path(small_model()).name and d["model_path"] == str(Path(small_model()).resolve())
    assert d["k"] == 3 and d["prompt"]["id"] == "zh-01" and d["prompt"]["tokens"] == d["prompt_tokens"] > 0
    assert [(c["name"], c["file"], c["positions"]) for c in d["captures"]] == [
        ("decode", "decode.gputrace", 1), ("verify", "verify-k3.gputrace", 4)]
    env = d["environment"]
    from importlib.metadata import version

    assert env["mlx"] == version("mlx") and env["device"] == "Metal (Apple M2 (fake))"
    assert env["device_info"]["architecture"] == "applegpu_g14g"
    assert metal.log[0] == ("start", "decode.gputrace") and metal.log[-1] == ("stop", "verify-k3.gputrace")
    assert str(out / "decode.gputrace") in std.out and str(out / "verify-k3.gputrace") in std.out
    assert "Xcode" in std.out
    assert "loading" in std.err  # the worker's progress reaches the user


def test_cli_demo_json(tmp_path, fake_metal_cli, capsys):
    out = tmp_path / "t"
    out.mkdir()  # an empty folder is fine without --force
    assert main(["capture", "--demo", "-k", "1", "-o", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model"] == "the demo model" and d["k"] == 1 and d["hybrid"] is True
    assert d == json.loads((out / "capture.json").read_text(encoding="utf-8"))


# -- the output folder ---------------------------------------------------------------------------

def test_non_empty_folder_is_refused_without_force(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal"})
    _forbid_model_loading(monkeypatch)
    out = tmp_path / "traces"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    rc = main(["capture", "--demo", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "exists and is not empty; pass --force" in err, err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_file_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal"})
    _forbid_model_loading(monkeypatch)
    f = tmp_path / "traces"
    f.write_text("x")
    assert main(["capture", "--demo", "-o", str(f), "--force"]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err


def test_force_replaces_only_the_capture_files(tmp_path, fake_metal_cli, capsys):
    metal, _ = fake_metal_cli
    out = tmp_path / "traces"
    (out / "decode.gputrace").mkdir(parents=True)
    (out / "decode.gputrace" / "old").write_text("old trace")
    (out / "verify-k2.gputrace").mkdir()
    (out / "capture.json").write_text("{}")
    (out / "verify-k5.gputrace").mkdir()  # another k's trace: not ours to remove
    (out / "notes.txt").write_text("mine")
    assert main(["capture", "--model", small_model(), "-o", str(out), "--force"]) == 0, capsys.readouterr().err
    names = {p.name for p in out.iterdir()}
    assert names == {"decode.gputrace", "verify-k2.gputrace", "capture.json", "verify-k5.gputrace", "notes.txt"}
    assert not (out / "decode.gputrace" / "old").exists()  # a fresh trace, not the old bundle
    assert json.loads((out / "capture.json").read_text())["k"] == 2
    assert (out / "notes.txt").read_text() == "mine"


def test_a_failed_capture_leaves_no_new_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal"})

    def failing(cfg, say=None, partial=None, metal=None):
        say("loading")
        raise SpecscopeError("could not load weights")

    in_process_worker(monkeypatch, failing, {})
    out = tmp_path / "traces"
    assert main(["capture", "--model", small_model(), "-o", str(out)]) == 2
    assert "could not load weights" in capsys.readouterr().err
    assert not out.exists()

    def crashed(cfg, on_event=None, autosave=None, on_start=None):  # the worker killed before it said anything
        pump = EventPump(autosave, on_event)
        from specscope.profiler.run.events import finish_run

        finish_run(pump.session, "killed by SIGSEGV", stopped_by_user=False)
        return pump.result(-11, "")

    monkeypatch.setattr(worker_measure, "run_worker", crashed)
    assert main(["capture", "--model", small_model(), "-o", str(out)]) == 2
    assert "killed by SIGSEGV" in capsys.readouterr().err
    assert not out.exists()


def test_bad_requests(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal"})
    _forbid_model_loading(monkeypatch)
    cases = [
        (["--demo", "-k", "0", "-o", str(tmp_path / "a")], "-k must be between 1 and 16"),
        (["-o", str(tmp_path / "a")], "no model: pass --model MODEL or --demo"),
        (["--demo"], "give the folder for the traces with -o DIR"),
        (["--demo", "-o", str(tmp_path / "a"), "--case", "nope"], "no case 'nope' in the suite"),
    ]
    for args, msg in cases:
        assert main(["capture", *args]) == 2
        assert msg in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


# -- the capture's session (the worker's events, folded) --------------------------------------------------------------

def test_session_keeps_what_was_captured(tmp_path, fake_metal_cli, capsys):
    out, kept = tmp_path / "t", tmp_path / "capture-session.json"
    assert main(["capture", "--demo", "-k", "2", "-o", str(out), "--session", str(kept)]) == 0, capsys.readouterr().err
    from specscope.profiler.session.session import Session

    s = Session.load(kept)
    assert s.status == "complete" and s.data["measure"] == "capture" and s.data["measurement"]["k"] == 2
    assert s.data["capture"] == {"description": json.loads((out / "capture.json").read_text(encoding="utf-8")),
                                 "out_dir": str(out.resolve())}


@needs_no_metal
def test_the_capture_runs_in_the_worker(tmp_path, monkeypatch, capsys):
    """With the CLI's own Metal probe passed, the real worker is started: on this machine it is the worker that
    refuses, and the capture's session says so."""
    monkeypatch.setattr(cli_capture, "metal_status", lambda: {"metal": True, "device": "Metal (Apple M2 (fake))"})
    out, kept = tmp_path / "traces", tmp_path / "capture-session.json"
    assert main(["capture", "--demo", "-o", str(out), "--session", str(kept)]) == 2
    assert capsys.readouterr().err.startswith("specscope: error: " + NOT_METAL)
    assert not out.exists()
    from specscope.profiler.session.session import Session

    s = Session.load(kept)
    assert s.status == "failed" and s.data["measure"] == "capture" and s.data["errors"][-1].startswith(NOT_METAL)
