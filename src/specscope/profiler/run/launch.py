"""Distributed runs: the rank worker under ``mlx.launch``, rank 0's events folded into a Session, faults named.

``--ranks N`` runs N ranks on this machine (ring backend over loopback; for trying it out and for tests);
``--hosts H1,H2`` runs one rank per host over ssh, as ``mlx.launch`` does (``--backend ring`` writes a
hostfile with each host's IP; ``jaccl`` needs RDMA device names, so it takes ``--hostfile`` from
``mlx.distributed_config``; ``any`` lets MLX pick). The processes:

    specscope (this module)            reads rank 0's events, autosaves, decides how the run ended
      └ guard (new process group)      kills the whole group if specscope goes away
          └ mlx.launch                 starts the ranks (locally, or over ``ssh -tt``), merges their output
              └ rank 0 … N-1           ``python -m specscope.profiler.run.dist_worker``

Faults: a rank that exits (killed, crashed, out of memory, a host that drops or cannot be reached) ends
the run with a message naming the rank and its host; the process group (guard, mlx.launch, local ranks,
ssh clients, hence remote ranks by SIGHUP) is killed, so nothing is left running; everything rank 0 sent
is kept and saved as an incomplete session. Ctrl+C sends ``stop`` to every rank's stdin (rank 0 ends the
run cleanly) and kills the group if it has not ended within the grace period.

This module never imports MLX (the app uses it): mlx.launch runs in a child process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.profiler.run.config import BACKENDS as BACKENDS
from specscope.profiler.run.config import MAX_LOCAL_RANKS as MAX_LOCAL_RANKS
from specscope.profiler.run.config import DistSpec as DistSpec
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.config import parse_hosts as parse_hosts
from specscope.profiler.run.events import finish_run
from specscope.profiler.run.pump import EventPump, RunResult, describe_exit, worker_env
from specscope.profiler.run.rank_monitor import LOOPBACK, RankMonitor
from specscope.profiler.run.records import RingHost, RingHostfile

# What the rank workers (``profiler.run.dist_worker``) say on stderr, and how a rank whose peer went away exits.
# Defined here, not there: the app imports this module, and the worker module reaches the engine (MLX).
# After a rank has failed, or rank 0's stream has ended, how long the rest may take to exit on their own.
RANK_GRACE_SECONDS = 5.0
SSH_CHECK_SECONDS = 8
EXIT_RANK_FAULT = 1  # RunResult.returncode of a run that a failed rank ended
_MLX_LAUNCH = "import sys; from mlx._distributed_utils.launch import main; sys.argv[0] = 'mlx.launch'; sys.exit(main())"


# -- building the command -----------------------------------------------------------------------------------


def _free_port_base(n: int, tries: int = 50) -> int:
    """A first port such that ``n`` consecutive loopback ports are free now (runs on one machine must not collide)."""
    import random

    for _ in range(tries):
        base = random.randrange(20000, 60000 - n)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((LOOPBACK, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise SpecscopeError(f"found no {n} free consecutive ports on {LOOPBACK} for the ring backend")


def _is_local(host: str) -> bool:
    return host in ("localhost", LOOPBACK, socket.gethostname(), socket.getfqdn())


def _ipv4(host: str) -> str:
    try:
        return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])
    except (OSError, IndexError):
        raise SpecscopeError(f"host {host} cannot be resolved to an IP address (the ring backend connects by IP); "
                             "pass its IP in --hosts, or a --hostfile") from None


def ring_hostfile(hosts: list[str]) -> RingHostfile:
    """The hostfile mlx.launch reads for the ring backend: ssh name and the IP the other ranks connect to."""
    if all(_is_local(h) for h in hosts):
        return {"backend": "ring", "hosts": [{"ssh": LOOPBACK, "ips": [LOOPBACK]} for _ in hosts]}
    out: list[RingHost] = []
    for h in hosts:
        ip = _ipv4(socket.gethostname() if _is_local(h) else h)
        if ip.startswith("127."):
            raise SpecscopeError(f"host {h} resolves to {ip}, which the other hosts cannot reach; pass its network IP in --hosts")
        out.append({"ssh": LOOPBACK if _is_local(h) else h, "ips": [ip]})
    return {"backend": "ring", "hosts": out}


def _mlx_launch(python: str) -> list[str]:
    script = Path(python).parent / "mlx.launch"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("mlx.launch")
    return [found] if found else [python, "-c", _MLX_LAUNCH]


@dataclass
class LaunchPlan:
    argv: list[str]  # the guard, wrapping mlx.launch, wrapping the rank workers
    hosts: list[str]  # host of each rank
    backend: str
    hostfile: str | None = None  # a hostfile this plan wrote (removed by cleanup)
    env: dict = field(default_factory=dict)

    def cleanup(self) -> None:
        if self.hostfile:
            try:
                os.unlink(self.hostfile)
            except OSError:
                pass


def plan_launch(cfg: RunConfig, spec: DistSpec) -> LaunchPlan:
    """The full command of a distributed run (mlx.launch under the guard), and what it needs."""
    spec.validate()
    python = spec.python or sys.executable
    hosts = spec.rank_hosts()
    args = ["--python", python]
    written = None
    if spec.ranks:
        args += ["--hosts", LOOPBACK, "-n", str(spec.ranks), "--backend", "ring",
                 "--starting-port", str(spec.port or _free_port_base(spec.ranks))]
    else:
        hostfile = spec.hostfile
        if spec.hosts:
            if spec.backend == "ring":
                fd, written = tempfile.mkstemp(prefix="specscope-hosts-", suffix=".json")
                with os.fdopen(fd, "w") as f:
                    json.dump(ring_hostfile(spec.hosts), f)
                hostfile = written
            else:  # "any": mlx.launch picks the backend for plain host names
                args += ["--hosts", ",".join(LOOPBACK if _is_local(h) else h for h in spec.hosts)]
        if hostfile:
            args += ["--hostfile", str(Path(hostfile).expanduser())]
        if spec.backend != "any":
            args += ["--backend", spec.backend]
        if spec.port:
            args += ["--starting-port", str(spec.port)]
        args += ["--env", "PYTHONUNBUFFERED=1"]
    worker_backend = "any" if spec.backend == "any" else spec.backend
    cfg_json = json.dumps(cfg.to_dict())
    dist_json = json.dumps({"backend": worker_backend, "hosts": hosts})
    launch = _mlx_launch(python) + args + ["--", "-m", "specscope.profiler.run.dist_worker", cfg_json, dist_json]
    guard = [sys.executable, "-m", "specscope.profiler.run.launch", "--guard", "--", *launch]
    return LaunchPlan(guard, hosts, worker_backend, written, worker_env())


def check_hosts(hosts: list[str], python: str | None = None, timeout: int = SSH_CHECK_SECONDS) -> None:
    """Every remote host answers over ssh without a password and has specscope and MLX at ``python``; else a
    clear error naming the hosts (before anything is loaded anywhere)."""
    python = python or sys.executable
    remote = sorted({h for h in hosts if not _is_local(h)})
    if not remote:
        return
    if not shutil.which("ssh"):
        raise SpecscopeError("ssh is not installed: mlx.launch starts the ranks of other hosts over ssh")
    probe = f"{python} -c 'import specscope, mlx.core'"
    procs = {h: subprocess.Popen(["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout}", h, probe],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for h in remote}
    bad = []
    for h, p in procs.items():
        try:
            _, err = p.communicate(timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            bad.append(f"host {h} cannot be reached (no answer over ssh within {timeout + 5} s)")
            continue
        last = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "")
        if p.returncode == 255:
            bad.append(f"host {h} cannot be reached over ssh ({last or 'ssh exit 255'})")
        elif p.returncode != 0:
            bad.append(f"host {h} has no working specscope + MLX at {python} ({last or f'exit code {p.returncode}'})")
    if bad:
        raise SpecscopeError("; ".join(bad) + ". mlx.launch needs password-less ssh to every host and the same Python "
                             "environment at the same path (see the docs, Several machines)")


# -- reading how the ranks ended ----------------------------------------------------------------------------


def _killpg(pgid: int, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


class RankProcess(subprocess.Popen):
    """The guard process of a distributed run; ``rank_monitor`` (set once it runs) says which rank runs where."""

    rank_monitor: RankMonitor | None = None


def start(plan: LaunchPlan) -> RankProcess:
    """The guard process (its own process group: killing the group ends mlx.launch and every local rank)."""
    return RankProcess(plan.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=plan.env, text=True, encoding="utf-8", errors="replace", bufsize=1,
                       start_new_session=True)


def request_stop(proc: subprocess.Popen) -> None:
    """Ask every rank to end the run cleanly (``stop`` reaches each rank's stdin through mlx.launch)."""
    assert proc.stdin is not None  # started with a pipe (``start``)
    try:
        proc.stdin.write("stop\n")
        proc.stdin.flush()
    except (OSError, ValueError):
        pass


def run_distributed(cfg: RunConfig, spec: DistSpec, on_event=None, autosave: str | None = None, on_start=None,
                    check: bool = True) -> RunResult:
    """``runner.run_worker`` for a distributed run: same session, autosave, Ctrl+C and fault guarantees
    (``profiler.run.pump``), plus a message naming the rank (and host) that ended a run."""
    spec.validate()
    pump = EventPump(autosave, on_event)
    session = pump.session
    if check and spec.hosts:
        check_hosts(spec.hosts, spec.python)

    plan = plan_launch(cfg, spec)
    proc = start(plan)
    pgid = proc.pid
    monitor = RankMonitor(plan.hosts, on_fault=lambda rank: pump.kill_later(RANK_GRACE_SECONDS))
    proc.rank_monitor = monitor  # for on_start: which rank runs where (pids from each rank's hello line)
    try:
        # once rank 0's stream has ended, the other ranks follow within the grace period, or are ended; at the
        # end, whatever is left of the group is killed: no orphan, here or (through ssh) on another host
        rc, interrupted, stderr = pump.drain(proc, stop=lambda: request_stop(proc), kill=lambda: _killpg(pgid),
                                             on_start=on_start, on_stderr_line=monitor.feed,
                                             after_stream=lambda: pump.kill_later(RANK_GRACE_SECONDS), kill_at_end=True)
    finally:
        plan.cleanup()
    fault = None if interrupted else monitor.message()
    if fault:
        session.mark_incomplete(fault)
    elif session.status in ("running", "empty") and not interrupted:
        # rank 0 ended without a run_done and no rank was reported failing: say what is known
        started = sorted(monitor.started)
        never = [r for r in range(len(plan.hosts)) if r not in started]
        if never:
            session.mark_incomplete(f"rank {never[0]} ({monitor.host(never[0])}) never started; the distributed run ended "
                                    "there, everything measured before is kept")
    finish_run(session, None if rc == 0 else describe_exit(rc), stopped_by_user=interrupted, stderr_tail=stderr[-4000:])
    if fault and not rc:
        rc = EXIT_RANK_FAULT  # mlx.launch itself exits 0 when a rank fails
    return pump.result(rc, stderr)


# -- the guard ----------------------------------------------------------------------------------------------


def guard(cmd: list[str]) -> int:
    """Run ``cmd`` (mlx.launch) in this process group and kill the whole group if our parent goes away."""
    if os.getpgrp() != os.getpid():  # started without a group of its own (the app's QProcess): make one
        try:
            os.setsid()
        except OSError:
            pass
    ppid = os.getppid()

    def end_group(*_):
        _killpg(os.getpgrp())
        os._exit(3)

    signal.signal(signal.SIGTERM, end_group)
    signal.signal(signal.SIGHUP, end_group)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a stop arrives as "stop" on stdin; Ctrl+C is the parent's
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    if os.getppid() != ppid:
        end_group()

    def watch() -> None:
        while True:
            time.sleep(0.25)
            if os.getppid() != ppid:
                end_group()

    threading.Thread(target=watch, daemon=True).start()
    child = subprocess.Popen(cmd)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:2] == ["--guard", "--"]:
        sys.exit(guard(argv[2:]))
    sys.exit("usage: python -m specscope.profiler.run.launch --guard -- COMMAND...")
