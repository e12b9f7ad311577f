"""The Session: everything one profiling run measured, folded from worker events.

A plain, JSON-serialisable object. The CLI and the GUI build it the same way
(``Session.apply(event)`` for each worker event); every chart and report reads
only a Session. Derived numbers (``summary``, per-case statistics) are always
recomputed from the raw measurements, never trusted from a file.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
from pathlib import Path

from . import stats
from .verdict import ENGINE_FAULT, ROUNDING, divergence_message

SCHEMA = "specscope.session"
SCHEMA_VERSION = 1
CATEGORIES = ["linear_attention", "full_attention", "moe", "dense_mlp", "output_head", "other", "unclassified"]
CATEGORY_LABELS = {
    "linear_attention": "Linear attention",
    "full_attention": "Full attention",
    "moe": "MoE",  # sessions before dense_mlp existed label a dense "moe" row themselves ("MLP (dense)")
    "dense_mlp": "Dense MLP",
    "output_head": "Output head",
    "other": "Other (embed, norms)",
    "unclassified": "Unclassified",
    "inter_block": "Inter-block overhead",
}


class SessionError(ValueError):
    """A session file that cannot be used, with a message that says why."""


# What a ``divergence`` event carries (engine_adapter.divergence.divergence_event); kept on its case.
DIVERGENCE_FIELDS = (
    "position", "plain_token", "spec_token", "plain_margin", "verify_margin", "plain_lead", "verify_lead",
    "plain_top", "verify_top", "plain_logits", "verify_logits", "verify_row", "verify_width", "dtype",
    "tolerance", "verdict", "reason",
)


def divergence_verdict(d: dict) -> str:
    """Recomputed from the measured leads and tolerance (the rule of engine_adapter.divergence.classify):
    a near-tie only if every measured lead of the plain token over the speculative one is within the
    tolerance; no measured margin, or no tolerance, is never rounding."""
    tol = d.get("tolerance")
    leads = [x for x in (d.get("plain_lead"), d.get("verify_lead")) if isinstance(x, (int, float))]
    if not leads or not isinstance(tol, (int, float)) or not math.isfinite(tol):
        return ENGINE_FAULT
    return ROUNDING if all(math.isfinite(x) and abs(x) <= tol for x in leads) else ENGINE_FAULT


def case_divergence(case: dict) -> dict | None:
    """The case's divergence record with its verdict recomputed, or None (outputs equal, or not checked)."""
    d = case.get("divergence")
    if not isinstance(d, dict):
        return None
    return {**d, "verdict": divergence_verdict(d)}


def _new_case(info: dict) -> dict:
    return {
        "id": info["id"],
        "category": info.get("category", ""),
        "prompt": info.get("prompt", ""),
        "prompt_tokens": list(info.get("prompt_tokens", [])),
        "plain": {"tokens": [], "prefill_ms": None, "step_ms": [], "repeats_tok_s": []},
        "spec": {"tokens": [], "prefill_ms": None, "rounds": [], "repeats_tok_s": []},
        "breakdown": None,
        "plain_text": "",
        "spec_text": "",
        "complete": False,
    }


class Session:
    def __init__(self, data: dict | None = None):
        self.data = data or {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "status": "empty",  # empty | running | complete | incomplete | failed
            "config": {},
            "environment": {},
            "model": {},
            "cases": [],
            "errors": [],
        }
        self._index = {c["id"]: c for c in self.data["cases"]}

    # -- folding events ----------------------------------------------------
    def apply(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "run_started":
            self.data["status"] = "running"
            for key in ("config", "environment", "model"):
                self.data[key] = ev.get(key, {})
            self.data["started_at"] = ev.get("time")
        elif kind == "case_started":
            if ev["case"]["id"] not in self._index:
                case = _new_case(ev["case"])
                self.data["cases"].append(case)
                self._index[case["id"]] = case
            c = self._index[ev["case"]["id"]]
            if ev.get("phase") == "plain":
                c["plain"].update(tokens=[], step_ms=[], prefill_ms=None)
            elif ev.get("phase") == "spec":
                c["spec"].update(tokens=[], rounds=[], prefill_ms=None)
        elif kind == "prefill":
            side = self._index[ev["case"]][ev["mode"]]
            side["prefill_ms"] = ev["ms"]
            side["tokens"] = [ev["token"]]
        elif kind == "step":
            side = self._index[ev["case"]]["plain"]
            side["tokens"].append(ev["token"])
            side["step_ms"].append(ev["ms"])
        elif kind == "round":
            side = self._index[ev["case"]]["spec"]
            rnd = {k: ev[k] for k in ("drafted", "accepted", "emitted", "draft_ms", "verify_ms", "rollback_ms", "ms")}
            side["rounds"].append(rnd)
            side["tokens"].extend(ev["emitted"])
        elif kind == "repeat_done":
            c = self._index[ev["case"]]
            c[ev["mode"]]["repeats_tok_s"].append(ev["tok_s"])
        elif kind == "breakdown":
            self._index[ev["case"]]["breakdown"] = ev["breakdown"]
        elif kind == "divergence":
            # Greedy speculative output left plain decoding: a near-tie is kernel rounding, a clear margin
            # is an engine fault, and an engine fault fails the session, loudly.
            c = self._index.get(ev.get("case"))
            if c is not None:
                c["divergence"] = {k: ev[k] for k in DIVERGENCE_FIELDS if k in ev}
                d = case_divergence(c)
                if d["verdict"] == ENGINE_FAULT:
                    self.data["errors"].append(divergence_message(c["id"], d))
                    self.data["status"] = "failed"
        elif kind == "case_done":
            c = self._index[ev["case"]]
            c["complete"] = True
            c["plain_text"] = ev.get("plain_text", "")
            c["spec_text"] = ev.get("spec_text", "")
            c["plain_pieces"] = ev.get("plain_pieces")
            c["spec_pieces"] = ev.get("spec_pieces")
        elif kind == "run_done":
            # An engine fault or an error already failed the run; a later "complete" does not undo that.
            self.data["status"] = "failed" if self.data["status"] == "failed" else ev.get("status", "complete")
            self.data["finished_at"] = ev.get("time")
        elif kind == "error":
            self.data["errors"].append(ev.get("message", "unknown error"))
            self.data["status"] = "failed"
        elif kind == "memory":
            self.data.setdefault("environment", {})["peak_memory_bytes"] = ev.get("peak_bytes")

    def mark_incomplete(self, reason: str) -> None:
        if self.data["status"] in ("running", "empty"):
            self.data["status"] = "incomplete"
        self.data["errors"].append(reason)

    # -- accessors -----------------------------------------------------------
    @property
    def cases(self) -> list[dict]:
        return self.data["cases"]

    @property
    def config(self) -> dict:
        return self.data["config"]

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def k(self) -> int:
        return int(self.config.get("num_draft_tokens", 1))

    @property
    def regime(self) -> str:
        return self.config.get("sampling", {}).get("regime", "greedy")

    @property
    def what_if(self) -> bool:
        return bool(self.config.get("drafter", {}).get("what_if"))

    # -- derived numbers -------------------------------------------------------
    def case_stats(self, case: dict) -> dict:
        return {**case_stats(case, self.k), "regime": self.regime}

    def summary(self) -> dict:
        return summarize(self)

    # -- (de)serialisation -----------------------------------------------------
    def to_dict(self) -> dict:
        out = copy.deepcopy(self.data)
        out["summary"] = self.summary()
        out["case_stats"] = {c["id"]: self.case_stats(c) for c in self.cases}
        return out

    def to_json(self) -> str:
        return json.dumps(finite_json(self.to_dict()), ensure_ascii=False, indent=1, sort_keys=False)

    @classmethod
    def from_dict(cls, d: dict) -> "Session":
        validate(d)
        d = {k: v for k, v in copy.deepcopy(d).items() if k not in ("summary", "case_stats")}
        return cls(d)

    def save(self, path: str | os.PathLike) -> None:
        atomic_write(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Session":
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read session {p}: {exc.strerror or exc}") from None
        try:
            d = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise SessionError(f"{p} is not a session file (not UTF-8 text)") from None
        except json.JSONDecodeError as exc:
            raise SessionError(f"{p} is not a complete session file (invalid JSON at line {exc.lineno}: {exc.msg})") from None
        return cls.from_dict(d)

    def __eq__(self, other) -> bool:
        return isinstance(other, Session) and self.to_dict() == other.to_dict()


def finite_json(obj):
    """JSON has no NaN/inf: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_json(v) for v in obj]
    return obj


def atomic_write(path: str | os.PathLike, content: str | bytes) -> None:
    """Write a file so that readers see either the old content or the new, never half."""
    p = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent or "."))
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def validate(d) -> None:
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise SessionError("not a specscope session (missing schema marker)")
    v = d.get("schema_version")
    if not isinstance(v, int):
        raise SessionError("session has no schema version")
    if v > SCHEMA_VERSION:
        raise SessionError(
            f"session was written by a newer specscope (schema {v}; this one reads up to {SCHEMA_VERSION}); upgrade specscope"
        )
    if v < 1:
        raise SessionError(f"session schema {v} is too old to read")
    if not isinstance(d.get("cases"), list) or not isinstance(d.get("config"), dict):
        raise SessionError("session is missing its cases or config")
    for c in d["cases"]:
        if not isinstance(c, dict) or "id" not in c or not isinstance(c.get("plain"), dict) or not isinstance(c.get("spec"), dict):
            raise SessionError("session has a malformed case record")
        for side in ("plain", "spec"):
            toks = c[side].get("tokens", [])
            if not isinstance(toks, list) or not all(isinstance(t, int) and t >= 0 for t in toks):
                raise SessionError(f"case {c['id']!r}: {side}.tokens must be a list of token ids")
        div = c.get("divergence")
        if div is not None and (not isinstance(div, dict) or not isinstance(div.get("position"), int) or div["position"] < 0):
            raise SessionError(f"case {c['id']!r}: malformed divergence record")
        for ms in c["plain"].get("step_ms", []):
            if not isinstance(ms, (int, float)) or ms < 0 or not math.isfinite(ms):
                raise SessionError(f"case {c['id']!r}: step times must be non-negative numbers")
        for r in c["spec"].get("rounds", []):
            if not isinstance(r, dict):
                raise SessionError(f"case {c['id']!r}: malformed round")
            n, drafted = r.get("accepted"), r.get("drafted")
            if not isinstance(n, int) or not isinstance(drafted, list) or not 0 <= n <= len(drafted):
                raise SessionError(f"case {c['id']!r}: a round accepts {n!r} of {drafted!r} drafts")
            for key in ("draft_ms", "verify_ms", "ms"):
                x = r.get(key)
                if not isinstance(x, (int, float)) or x < 0 or not math.isfinite(x):
                    raise SessionError(f"case {c['id']!r}: round {key} must be a non-negative number")


# -- statistics over a session ------------------------------------------------------

def _tok_s(n_tokens: int, ms: float) -> float | None:
    return 1000.0 * n_tokens / ms if ms > 0 and n_tokens > 0 else None


def case_stats(case: dict, k: int) -> dict:
    plain, spec = case["plain"], case["spec"]
    plain_tok_s = stats.median(plain.get("repeats_tok_s") or []) or _tok_s(len(plain["step_ms"]), sum(plain["step_ms"]))
    spec_ms = sum(r["ms"] for r in spec["rounds"])
    spec_tok_s = stats.median(spec.get("repeats_tok_s") or []) or _tok_s(sum(len(r["emitted"]) for r in spec["rounds"]), spec_ms)
    full = [r for r in spec["rounds"] if len(r["drafted"]) == k]
    acc = stats.acceptance_from_rounds([r["accepted"] for r in full], k)
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    t_verify = stats.mean(r["verify_ms"] for r in full)
    t_draft = stats.mean(r["draft_ms"] for r in full)
    pred = None
    if t_decode and t_verify is not None and t_draft is not None and acc["rounds"]:
        pred = stats.divide(t_decode, t_verify, t_draft, acc["tokens_per_round"]).predicted_speedup
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    return {
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": t_draft,
        "acceptance": acc,
        "predicted_speedup": pred,
        "measured_speedup": measured,
        "prediction_error": stats.relative_error(pred, measured),
        "match": stats.match_stats(plain["tokens"], spec["tokens"]) if spec["tokens"] else None,
        "divergence": case_divergence(case),
    }


def _pooled_tok_s(case_rates: list[tuple[int, float]]) -> float | None:
    """Tokens over time across cases, each case at its median rate."""
    toks = sum(n for n, r in case_rates if r)
    ms = sum(1000.0 * n / r for n, r in case_rates if r)
    return _tok_s(toks, ms)


def summarize(session: Session) -> dict:
    k = session.k
    cases = [c for c in session.cases if c["plain"]["step_ms"] or c["spec"]["rounds"]]
    per_case = [(c, case_stats(c, k)) for c in cases]
    plain_tok_s = _pooled_tok_s([(len(c["plain"]["step_ms"]), s["plain_tok_s"]) for c, s in per_case])
    spec_tok_s = _pooled_tok_s(
        [(sum(len(r["emitted"]) for r in c["spec"]["rounds"]), s["spec_tok_s"]) for c, s in per_case if c["spec"]["rounds"]]
    )
    full = [r for c in cases for r in c["spec"]["rounds"] if len(r["drafted"]) == k]
    acc = stats.acceptance_from_rounds([r["accepted"] for r in full], k)
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    # Means, like T_decode (a rate is a mean): medians on one side and a rate on the
    # other would make the prediction drift with the noise of a shared machine.
    t_verify = stats.mean(r["verify_ms"] for r in full)
    t_draft = stats.mean(r["draft_ms"] for r in full)
    t_rollback = stats.mean(r.get("rollback_ms", 0.0) for r in full)
    division = None
    if t_decode and t_verify is not None and t_draft is not None and acc["rounds"]:
        division = stats.divide(t_decode, t_verify, t_draft, acc["tokens_per_round"])
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    by_category = {}
    for cat in sorted({c["category"] for c in cases}):
        rs = [r for c in cases if c["category"] == cat for r in c["spec"]["rounds"] if len(r["drafted"]) == k]
        by_category[cat] = stats.acceptance_from_rounds([r["accepted"] for r in rs], k)
    matches = [s["match"] for _, s in per_case if s["match"] is not None]
    match_rate = (sum(m["match_rate"] for m in matches) / len(matches)) if matches else None
    greedy = session.regime == "greedy"
    divergences = [{"case": c["id"], **s["divergence"]} for c, s in per_case if greedy and s["divergence"]]
    # Sessions from before the divergence check: a finished greedy case whose outputs differ, with no margin.
    unchecked = [{"case": c["id"], "position": s["match"]["first_divergence"]} for c, s in per_case
                 if greedy and c.get("complete") and s["match"] and not s["match"]["equal"] and not s["divergence"]]
    bd = aggregate_breakdown([c["breakdown"] for c in cases if c.get("breakdown")])
    block_pred = None
    if division and bd and bd["decode"]["block_sum_ms"]:
        block_pred = acc["tokens_per_round"] * bd["decode"]["block_sum_ms"] / (t_verify + t_draft)
    return {
        "k": k,
        "regime": session.regime,
        "what_if": session.what_if,
        "cases_measured": len(cases),
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": t_draft,
        "t_rollback_ms": t_rollback,
        "p": acc["p"],
        "p_ci95": acc["p_ci95"],
        "drafted": acc["drafted"],
        "accepted": acc["accepted"],
        "per_position": acc["per_position"],
        "tokens_per_round": acc["tokens_per_round"],
        "low_sample": acc["low_sample"],
        "acceptance_by_category": by_category,
        "predicted_speedup": division.predicted_speedup if division else None,
        "predicted_tok_s": division.predicted_tok_s if division else None,
        "measured_speedup": measured,
        "prediction_error": stats.relative_error(division.predicted_speedup if division else None, measured),
        "break_even_verify_ms": division.break_even_verify_ms if division else None,
        "break_even_multiple": division.break_even_multiple if division else None,
        "verify_multiple": division.verify_multiple if division else None,
        "block_sum_predicted_speedup": block_pred,
        "match_rate": match_rate,
        "all_match": bool(matches) and all(m["equal"] for m in matches),
        "divergences": divergences,
        "engine_faults": [d for d in divergences if d["verdict"] == ENGINE_FAULT],
        "unchecked_divergences": unchecked,
        "breakdown": bd,
    }


def aggregate_breakdown(bds: list[dict]) -> dict | None:
    """Median over cases of each breakdown figure."""
    if not bds:
        return None
    out = {}
    for side in ("decode", "verify"):
        rows = [b[side] for b in bds if side in b]
        if not rows:
            return None
        agg = {
            "positions": rows[0]["positions"],
            "whole_ms": stats.median(r["whole_ms"] for r in rows),
            "instrumented_ms": stats.median(r["instrumented_ms"] for r in rows),
            "block_sum_ms": stats.median(r["block_sum_ms"] for r in rows),
            "blocks": {c: stats.median(r["blocks"].get(c) for r in rows) for c in rows[0]["blocks"]},
            "skip_estimates": {c: stats.median(r.get("skip_estimates", {}).get(c) for r in rows) for c in rows[0].get("skip_estimates", {})},
        }
        agg["inter_block_ms"] = agg["whole_ms"] - agg["block_sum_ms"]
        agg["barrier_distortion"] = agg["instrumented_ms"] / agg["whole_ms"] - 1 if agg["whole_ms"] else None
        out[side] = agg
    dec, ver = out["decode"], out["verify"]
    out["ratios"] = {
        c: (ver["blocks"][c] / dec["blocks"][c]) if dec["blocks"].get(c) else None for c in dec["blocks"]
    }
    # A ratio of overheads only means something when both are positive (barriers can make them negative).
    both = dec["inter_block_ms"] > 0 and ver["inter_block_ms"] > 0
    out["ratios"]["inter_block"] = ver["inter_block_ms"] / dec["inter_block_ms"] if both else None
    out["ratios"]["whole"] = ver["whole_ms"] / dec["whole_ms"] if dec["whole_ms"] else None
    out["categories"] = list(dec["blocks"])
    out["labels"] = bds[-1].get("labels", {})
    return out
