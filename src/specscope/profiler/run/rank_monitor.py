"""Who runs where, and who failed how, in a distributed run: the marks a rank prints on stderr, and the monitor that
folds the merged stderr of mlx.launch and the ranks into the rank that failed first and why."""

from __future__ import annotations

import re
import signal
import threading

from specscope.profiler.run.pump import describe_exit

EXIT_PEER_LOST = 4  # a rank's exit when a peer vanished (it is a victim, not the cause)
LOOPBACK = "127.0.0.1"  # mlx.launch runs a rank without ssh only for this host name
RANK_MARK = "specscope-rank"
RANK_ERROR_MARK = "specscope-rank-error"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NODE = re.compile(r"Node with rank (\d+) (?:exited with code (-?\d+)|(was killed))")
_HELLO = re.compile(rf"{RANK_MARK} (\d+) pid=(\d+) host=(\S+)")
_RANK_ERROR = re.compile(rf"{RANK_ERROR_MARK} (\d+): (.*)")


class RankMonitor:
    """Folds the merged stderr of mlx.launch and the ranks into: who started where, who exited how, and why."""

    VICTIM_CODES = {0, EXIT_PEER_LOST, -int(signal.SIGTERM), 128 + int(signal.SIGTERM)}

    def __init__(self, hosts: list[str], on_fault=None):
        self.hosts = hosts
        self.started: dict[int, tuple[int, str]] = {}  # rank -> (pid, hostname)
        self.exits: list[tuple[int, int | None, bool]] = []  # (rank, code, killed), in the order reported
        self.errors: dict[int, str] = {}
        self.on_fault = on_fault
        self._lock = threading.Lock()

    def feed(self, line: str) -> None:
        line = _ANSI.sub("", line).strip()
        with self._lock:
            m = _HELLO.search(line)
            if m:
                self.started[int(m.group(1))] = (int(m.group(2)), m.group(3))
                return
            m = _RANK_ERROR.search(line)
            if m:
                self.errors.setdefault(int(m.group(1)), m.group(2))
                return
            m = _NODE.search(line)
            if m:
                rank, code = int(m.group(1)), (int(m.group(2)) if m.group(2) is not None else None)
                self.exits.append((rank, code, bool(m.group(3))))
                if self.on_fault and self._causes(code, bool(m.group(3)), rank):
                    self.on_fault(rank)

    def _causes(self, code, killed, rank) -> bool:
        """Did this exit end the run (rather than follow from another rank's end)?"""
        if killed:
            return False  # "was killed": mlx.launch terminated it after another rank ended
        if code in self.VICTIM_CODES:
            return False
        return not (rank in self.errors and "lost the connection to another rank" in self.errors[rank])

    def host(self, rank: int) -> str:
        h = self.hosts[rank] if 0 <= rank < len(self.hosts) else "?"
        started = self.started.get(rank)
        if started and h in ("this machine", LOOPBACK):
            return f"this machine, pid {started[0]}"
        return h

    def culprit(self) -> tuple[int, str] | None:
        """(rank, what happened) for the rank whose end ended the run, or None when no rank failed."""
        with self._lock:
            for rank, code, killed in self.exits:
                if self._causes(code, killed, rank):
                    return rank, self._what(rank, code)
            for rank, msg in self.errors.items():  # a rank said why it failed, but its exit was not reported
                if "lost the connection to another rank" not in msg:
                    return rank, f"failed: {msg}"
            missing = [r for r in range(len(self.hosts)) if r not in self.started]
            if missing and self.exits:
                r = missing[0]
                return r, "never started" + (" (the host could not be reached over ssh)" if self.hosts[r] != "this machine" else "")
            lost = [r for r, _, _ in self.exits if r in self.errors]
            if lost:
                return None
        return None

    def _what(self, rank: int, code: int | None) -> str:
        if rank in self.errors and code not in (None,) and code > 0 and code != 255:
            return f"failed: {self.errors[rank]}"
        if code is not None and code < 0:
            return describe_exit(code)
        remote = self.hosts[rank] not in ("this machine", LOOPBACK) if rank < len(self.hosts) else False
        if code == 255 and remote and rank not in self.started:
            return "could not be reached over ssh (ssh exit 255)"
        if code == 255 and remote:
            return "lost its ssh connection (ssh exit 255: the host went away or the network dropped)"
        if code is not None and code > 128 and remote:
            sig = code - 128
            try:
                return f"killed by {signal.Signals(sig).name} (exit {code})"
            except ValueError:
                pass
        return describe_exit(code)

    def message(self) -> str | None:
        c = self.culprit()
        if c is None:
            return None
        rank, what = c
        return f"rank {rank} ({self.host(rank)}) {what}; the distributed run ended there, everything measured before is kept"


def fault_message(stderr_text: str, hosts: list[str]) -> str | None:
    """The rank that ended a run and why, from the merged stderr of a finished launch (for the app's QProcess)."""
    monitor = RankMonitor(hosts)
    for line in stderr_text.splitlines():
        monitor.feed(line)
    return monitor.message()


# -- running ------------------------------------------------------------------------------------------------
