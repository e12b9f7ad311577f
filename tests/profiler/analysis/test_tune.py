"""``specscope tune``: the prediction's arithmetic on a deterministic fake engine, the JSON shape on the demo
model, the recommendation, bad input, and ``bench tune``'s result shape. No timing is asserted."""

from __future__ import annotations

import itertools
import math
import random
import json

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.cli.main import main
from specscope.profiler.analysis.tune import MAX_REPS, MIN_REPS, confirm_set, recommendation
from specscope.profiler.run.tune_run import run_tune
from specscope.profiler.analysis.tune_confirm import agreement
from specscope.profiler.analysis.tune_predict import GREEDY_ASSUMPTION, K_MAX_ASSUMPTION, draft_ms_at, per_position, predict

ROW_KEYS = {"drafter", "k", "predicted_speedup", "predicted_ci95", "measured_speedup", "prediction_error"}
T_DECODE = 10.0
PATTERN = [4, 1, 0, 2, 4, 3]  # accepted drafts per round at K_max = 4, cycled


class FakeEngine:
    """Every time is exact: a verify over n positions costs ``10 + slope·(n−1)`` ms, drafting k tokens ``1 + 0.5k``,
    a partial round ``0.5 + 0.1·accepted`` of rollback, and each round 0.2 ms of bookkeeping. A run at k accepts
    min(PATTERN[i], k) in its i-th round: the greedy assumption holds exactly, so prediction = measurement."""

    def __init__(self, slope=5.0, drafters=("ngram", "mtp")):
        self.slope, self.drafters = slope, list(drafters)
        self.calls = []

    def describe(self):
        return {"model": "fake", "regime": "greedy", "greedy": True, "drafters": self.drafters}

    def plain(self, prompt, n):
        return {"tokens": list(range(n)), "step_ms": [T_DECODE] * (n - 1), "prefill_ms": 1.0}

    def verify_ms(self, n):
        return T_DECODE + self.slope * (n - 1)

    def verify_samples(self, context, tokens, positions, reps, ns=None):
        return {n: [self.verify_ms(n)] * reps for n in (ns or range(1, positions + 1))}

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        self.calls.append((name, k, kinds))
        extra = 0.0 if name == "ngram" else 1.0  # mtp drafts cost one more ms per round
        rounds = []
        for a in itertools.islice(itertools.cycle(PATTERN), len(PATTERN) * 4):
            acc = min(a, k)
            draft, verify = 1.0 + 0.5 * k + extra, self.verify_ms(k + 1)
            rb = 0.5 + 0.1 * acc if acc < k else 0.0
            inst = kinds == "instrumented"
            rounds.append({"drafted": k, "accepted": acc, "emitted": acc + 1, "ms": draft + verify + rb + 0.2,
                           "draft_ms": draft if inst else None, "verify_ms": verify if inst else None,
                           "rollback_ms": rb if inst else None, "kind": kinds})
        return {"rounds": rounds, "tokens": []}


def test_prediction_equals_measurement_when_the_model_holds():
    eng = FakeEngine()
    res = run_tune(eng, [[1, 2, 3]], k_max=4, max_tokens=16, reps=2, confirm="all")
    assert len(res["rows"]) == 8 and {r["drafter"] for r in res["rows"]} == {"ngram", "mtp"}
    for r in res["rows"]:
        assert ROW_KEYS <= set(r)
        # the measured rate pools every round, the last short one too (the one estimand); the prediction is the steady
        # state's: noiseless, they differ by that one round's share alone
        assert r["prediction_error"] == pytest.approx(0.0, abs=2e-3)
        lo, hi = r["predicted_ci95"]
        assert lo <= r["predicted_speedup"] + 1e-9 and r["predicted_speedup"] <= hi + 1e-9
        acc = [min(a, r["k"]) for a in PATTERN]
        assert r["tokens_per_round"] == pytest.approx(1 + sum(acc) / len(acc))
        assert r["t_verify_ms"] == eng.verify_ms(r["k"] + 1) and r["t_decode_ms"] == T_DECODE
        assert r["t_rollback_ms"] == pytest.approx(sum(0.5 + 0.1 * a for a in acc if a < r["k"]) / len(acc))
        assert r["t_bookkeeping_ms"] == pytest.approx(0.2)
    assert res["drafters"]["ngram"]["acceptance"] == per_position(PATTERN, 4)
    assert res["assumption"] == K_MAX_ASSUMPTION and res["acceptance_source"] == "k_max_rounds"  # this seam has no trace
    # instrumented runs at K_max and k=1 first, then only end-to-end confirmations
    assert eng.calls[:4] == [("ngram", 4, "instrumented"), ("ngram", 1, "instrumented"), ("mtp", 4, "instrumented"),
                             ("mtp", 1, "instrumented")]
    assert all(kind == "end_to_end" for _, _, kind in eng.calls[4:])
    json.dumps(res)


class BurstyEngine(FakeEngine):
    """A scripted bursty drafter: right on spans of 3–15 tokens, wrong on the spans between (seeded). Its runs are
    simulated token by token the way the engine's loop goes (a round drafts min(k, n − emitted − 1) tokens, accepts
    the drafts up to the first wrong one, emits one more), and ``trace`` reads A(s) off the same script, so the
    two share nothing but the script. Times are exact, as in ``FakeEngine``."""

    def __init__(self, n=400, seed=1, **kw):
        super().__init__(**kw)
        rng = random.Random(seed)
        right = []
        while len(right) < n:
            right += [True] * rng.randint(3, 15) + [False] * rng.randint(3, 15)
        self.right, self.n = right[:n], n  # right[j]: the drafter's guess for token j (from the true prefix) is right

    def plain(self, prompt, n):
        assert n == self.n
        return super().plain(prompt, n)

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        self.calls.append((name, k, kinds))
        extra = 0.0 if name == "ngram" else 1.0
        rounds, emitted = [], 1
        while emitted < n:
            kk = min(k, n - emitted - 1)
            acc = 0
            while acc < kk and self.right[emitted + acc]:
                acc += 1
            draft, verify = 1.0 + 0.5 * kk + extra, self.verify_ms(kk + 1)
            rb = 0.5 + 0.1 * acc if acc < kk else 0.0
            inst = kinds == "instrumented"
            rounds.append({"drafted": kk, "accepted": acc, "emitted": acc + 1, "ms": draft + verify + rb + 0.2,
                           "draft_ms": draft if inst else None, "verify_ms": verify if inst else None,
                           "rollback_ms": rb if inst else None, "kind": kinds})
            emitted += acc + 1
        return {"rounds": rounds, "tokens": []}

    def trace(self, name, prompt, plain_tokens, k_max, seed=0):
        A = []
        for s in range(self.n - 1):
            a = 0
            while a < min(k_max, self.n - 1 - s) and self.right[s + 1 + a]:
                a += 1
            A.append(a)
        return {"drafter": name, "k_max": k_max, "A": A, "tokens": self.n, "estimate": False}


def test_bursty_drafter_the_trace_predicts_every_k_exactly_where_k_max_rounds_miss():
    """Bursty acceptance: rounds at K_max skip through right spans and land on wrong ones, so E(k) read off them is
    off by 5% or more at some k; the trace walked at k equals what the runs at k measure, exactly (fails on the
    old method, which took E(k) from the K_max rounds)."""
    eng = BurstyEngine(drafters=("ngram",))
    res = run_tune(eng, [[1]], k_max=4, max_tokens=eng.n, reps=1, confirm="all")
    assert res["acceptance_source"] == "trace" and res["assumption"] == GREEDY_ASSUMPTION
    off = []
    for r in res["rows"]:
        assert r["tokens_per_round"] == pytest.approx(r["measured_tokens_per_round"], abs=1e-12)
        # the measured rate pools every round, the last short one too (the one estimand); the prediction is the steady
        # state's: noiseless, they differ by that one round's share alone
        assert r["prediction_error"] == pytest.approx(0.0, abs=2e-3)
        off.append(abs(r["tokens_per_round_k_max_rounds"] / r["measured_tokens_per_round"] - 1))
    assert max(off) >= 0.05, off  # what the K_max rounds alone would have predicted
    facts = res["drafters"]["ngram"]["trace"]
    assert facts["positions"] == eng.n - 1
    assert facts["tokens_per_round"] == pytest.approx([r["tokens_per_round"] for r in res["rows"]])
    assert res["traces"]["ngram"][0]["A"] == eng.trace("ngram", [1], [], 4)["A"]
    json.dumps(res)


def test_recommendation_is_one_of_the_rows_and_says_why_nothing_wins():
    res = run_tune(FakeEngine(slope=9.0), [[1]], k_max=3, max_tokens=16, reps=1)
    rec = res["recommendation"]
    assert any(r["drafter"] == rec["drafter"] and r["k"] == rec["k"] and r["measured_speedup"] == rec["measured_speedup"]
               for r in res["rows"])
    assert rec["drafter"] == "ngram" and not rec["wins"]  # cheaper drafts, same acceptance
    assert rec["text"].startswith(f"no k wins here: the best, k={rec['k']} with n-gram lookup, measures")
    assert "it would need T_verify ≤" in rec["text"]
    # confirmed: the best predicted setting and its nearest rival; the rest are predictions only, ranked from the trace
    top2 = sorted(res["rows"], key=lambda r: -r["predicted_speedup"])[:2]
    for r in res["rows"]:
        assert (r["measured_speedup"] is not None) == (r in top2)
    assert res["decision"]["pick"] in ([r["drafter"], r["k"]] for r in top2) and not res["decision"]["decided"]
    # "best" still confirms each drafter's best predicted k and its neighbours
    res = run_tune(FakeEngine(slope=9.0), [[1]], k_max=3, max_tokens=16, reps=1, confirm="best")
    best = {d: max((r for r in res["rows"] if r["drafter"] == d), key=lambda r: r["predicted_speedup"])["k"]
            for d in ("ngram", "mtp")}
    for r in res["rows"]:
        assert (r["measured_speedup"] is not None) == (abs(r["k"] - best[r["drafter"]]) <= 1)


def test_a_winning_setting_is_recommended():
    res = run_tune(FakeEngine(slope=1.0), [[1]], k_max=4, max_tokens=16)
    rec = res["recommendation"]
    assert rec["wins"] and rec["text"].startswith(f"use k={rec['k']} with n-gram lookup: ")
    assert rec["measured_speedup"] == max(r["measured_speedup"] or 0 for r in res["rows"])
    # one repeat gives no interval: faster by its median, but not shown to win
    one = run_tune(FakeEngine(slope=1.0), [[1]], k_max=4, max_tokens=16, reps=1)["recommendation"]
    assert one["measured_speedup"] > 1 and not one["wins"] and one["text"].startswith("no k is shown to win")
    # and it says why without miscounting: the repeats were 1 (it printed "2 repeats", the range's two ends, before)
    assert "fewer than 3 repeats cannot give an interval" in one["text"] and "2 repeats" not in one["text"]


def test_a_win_inside_the_noise_is_not_recommended():
    rows = [{"drafter": "ngram", "k": 2, "measured_speedup": 1.06, "measured_ci95": [0.86, 1.15], "predicted_speedup": 1.04,
             "predicted_ci95": [0.84, 1.25], "what_if": False, "t_verify_ms": 15.0, "break_even_verify_ms": 16.0}]
    rec = recommendation(rows)
    assert not rec["wins"] and "0.86–1.15 holds 1×" in rec["text"]
    rows[0]["measured_ci95"] = [1.02, 1.1]
    assert recommendation(rows)["wins"]


def test_oracle_is_recommended_only_when_alone():
    rows = [{"drafter": "oracle", "k": 2, "measured_speedup": 3.0, "predicted_speedup": 3.0, "predicted_ci95": [2, 4],
             "what_if": True, "t_verify_ms": 1.0, "break_even_verify_ms": 5.0},
            {"drafter": "mtp", "k": 1, "measured_speedup": 0.8, "predicted_speedup": 0.8, "predicted_ci95": [0.7, 0.9],
             "what_if": False, "t_verify_ms": 20.0, "break_even_verify_ms": 12.0}]
    assert recommendation(rows)["drafter"] == "mtp"
    only = recommendation(rows[:1])
    assert only["drafter"] == "oracle" and "what-if" in only["text"]


def test_helpers():
    assert per_position([0, 1, 2, 2], 3) == [0.75, 0.5, 0.0]
    assert draft_ms_at(1, 2.0, 8.0, 4) == 2.0 and draft_ms_at(4, 2.0, 8.0, 4) == 8.0 and draft_ms_at(3, 2.0, 8.0, 4) == 6.0
    assert draft_ms_at(1, 2.0, 8.0, 1) == 2.0
    pred = {"a": [{"k": 1, "predicted_speedup": 0.5}, {"k": 2, "predicted_speedup": 0.7}, {"k": 3, "predicted_speedup": 0.6},
                  {"k": 4, "predicted_speedup": 0.1}]}
    assert confirm_set(pred, 4) == [("a", 2), ("a", 3)]   # the best predicted and its nearest rival
    assert confirm_set(pred, 4, "best") == [("a", 1), ("a", 2), ("a", 3)]
    both = {"oracle": [{"k": 1, "predicted_speedup": 0.9}], **pred}
    assert confirm_set(both, 4) == [("a", 2), ("a", 3)]   # a real drafter's before a what-if's
    assert confirm_set(pred, 4, "all") == [("a", k) for k in range(1, 5)]
    with pytest.raises(SpecscopeError):
        predict([], 2, {2: [1.0], 3: [1.0]}, [], [1.0])
    with pytest.raises(SpecscopeError):
        run_tune(FakeEngine(), [[1]], drafters=["draft"])


# -- the command on the demo model ----------------------------------------------------------------------------------------

def test_tune_command_json_shape(capsys):
    assert main(["tune", "--demo", "--k-max", "2", "--max-tokens", "8", "--reps", "1", "--drafters", "oracle,ngram",
                 "--prompt", "Hello there", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) >= {"recommendation", "rows", "assumption"}
    assert [(r["drafter"], r["k"]) for r in res["rows"]] == [("oracle", 1), ("oracle", 2), ("ngram", 1), ("ngram", 2)]
    for r in res["rows"]:
        assert ROW_KEYS <= set(r) and r["predicted_speedup"] > 0 and len(r["predicted_ci95"]) == 2
    rec = res["recommendation"]
    assert rec["drafter"] == "ngram"  # a real drafter is preferred to the what-if
    assert any(r["drafter"] == rec["drafter"] and r["k"] == rec["k"] for r in res["rows"])
    assert "greedy" in res["assumption"] and res["acceptance_source"] == "trace"
    # greedy: E(k) walked on the traces is what the confirmation runs at k measured, exactly (oracle and n-gram alike)
    confirmed = [r for r in res["rows"] if r["measured_speedup"] is not None]
    assert confirmed
    for r in confirmed:
        assert r["tokens_per_round"] == pytest.approx(r["measured_tokens_per_round"], rel=1e-12), r
        assert r["e_exact"] is True, r.get("e_exact_void")  # checked: the runs' tokens and rounds are the trace's
    assert all(len(t["A"]) == 7 for ts in res["traces"].values() for t in ts)  # 8 tokens: 7 positions


@pytest.mark.parametrize("args, message", [
    (["tune", "--demo", "--k-max", "0"], "--k-max"),
    (["tune", "--demo", "--max-tokens", "2"], "--max-tokens"),
    (["tune", "--demo", "--reps", "0"], "--reps"),
    (["tune", "--demo", "--beside-reps", "0"], "--beside-reps"),
    (["tune"], "--demo"),
    (["tune", "--demo", "--drafters", ","], "--drafters"),
    (["tune", "--demo", "--drafters", "telepathy", "--max-tokens", "4"], "telepathy"),
    (["tune", "--demo", "--suite", "/nonexistent/suite.json"], "suite"),
])
def test_bad_input_is_a_clear_message(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error:") and message in err and "Traceback" not in err


class FusedEngine(FakeEngine):
    """Drafting inside an end-to-end round costs half what it costs timed alone behind barriers (its graph building
    overlaps its own compute). ``components`` times what drafting adds to such a round, as the real seam does."""

    def draft_in_round(self, name, k):
        return 0.5 * (1.0 + 0.5 * k + (0.0 if name == "ngram" else 1.0))

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        if kinds == "end_to_end":
            for r in out["rounds"]:
                r["ms"] -= (1.0 + 0.5 * k + (0.0 if name == "ngram" else 1.0)) - self.draft_in_round(name, k)
        return out

    def components(self, name, prompt, plain_tokens, k, reps=3):
        return {"draft_ms": [self.draft_in_round(name, k)] * reps * (k + 1)}


def test_the_oracle_with_adaptive_repeats_covers_every_seed_a_confirmation_can_use():
    """``tune --drafters oracle`` without ``--reps`` raised a TypeError (range(None)); its K_max run now covers the
    seeds of every repeat a confirmation may take (MAX_REPS)."""
    eng = FakeEngine(drafters=("oracle",))
    res = run_tune(eng, [[1]], k_max=2, max_tokens=16, drafters=["oracle"])
    assert [r["k"] for r in res["rows"]] and all(r["drafter"] == "oracle" for r in res["rows"])
    assert sum(1 for name, k, kinds in eng.calls if k == 2 and kinds == "instrumented") == MAX_REPS


def test_the_draft_is_charged_what_it_adds_to_a_round_not_its_cost_behind_barriers():
    """With the in-round draft cost timed apart, the prediction holds exactly; charged the draft timed alone (the old
    method: a seam without ``components``), it misses by more than the 5% a confirmation is held to."""
    res = run_tune(FusedEngine(), [[1, 2, 3]], k_max=4, max_tokens=16, reps=2, confirm="all")
    for r in res["rows"]:
        assert r["t_draft_source"] == "in_round"
        # the measured rate pools every round, the last short one too (the one estimand); the prediction is the steady
        # state's: noiseless, they differ by that one round's share alone
        assert r["prediction_error"] == pytest.approx(0.0, abs=2e-3)

    class OldSeam(FusedEngine):
        components = property(lambda self: (_ for _ in ()).throw(AttributeError("components")))

    old = run_tune(OldSeam(), [[1, 2, 3]], k_max=4, max_tokens=16, reps=2, confirm="all")
    assert all(r["t_draft_source"] == "line" for r in old["rows"])
    assert max(abs(r["prediction_error"]) for r in old["rows"]) > 0.05


class VerifyStallEngine(FusedEngine):
    """As ``FusedEngine``, but the first ``stalls`` times k = 1's rounds are timed apart (before the confirmations, or
    beside one), one verify timed alone stalls by 200 ms: that k's paired differences then add up to far below zero."""

    def __init__(self, stalls=1, every_verify=False):
        super().__init__()
        self.stalls, self.every, self.timed = stalls, every_verify, []

    def components(self, name, prompt, plain_tokens, k, reps=3):
        out = super().components(name, prompt, plain_tokens, k, reps)
        self.timed.append((name, k, reps))
        if k == 1 and self.stalls > 0:
            self.stalls -= 1
            for i in range(len(out["draft_ms"]) if self.every else 1):
                out["draft_ms"][i] -= 200.0
        return out


def test_a_k_whose_terms_add_up_to_nothing_is_timed_again_not_refused():
    """A stall in one verify timed alone sank k = 1's few paired differences below zero, and tune refused after every
    run it had made (a slow test on the demo met it in CI). It now times that k again, with more rounds, keeping what
    it had; a machine that stalls every time is still refused, saying which k, after the retries."""
    eng = VerifyStallEngine(stalls=1)
    said = []
    res = run_tune(eng, [[1, 2, 3]], k_max=2, max_tokens=16, reps=2, confirm="all", component_reps=2,
                   drafters=["mtp"], progress=said.append)
    first = [reps for name, k, reps in eng.timed if k == 1][:2]
    assert first == [2, 4]  # timed again at k = 1 alone, with twice the rounds
    assert any("add up to nothing" in m and "k = 1" in m for m in said)
    assert all(r["predicted_speedup"] > 0 for r in res["rows"])

    # the negative control: a machine whose every verify timed alone at k = 1 stalls is refused after the retries, with the k named
    always = VerifyStallEngine(stalls=10 ** 6, every_verify=True)
    with pytest.raises(SpecscopeError, match="k = 1"):
        run_tune(always, [[1, 2, 3]], k_max=2, max_tokens=16, reps=2, confirm="all", component_reps=2,
                 drafters=["mtp"])
    assert [reps for name, k, reps in always.timed if k == 1] == [2, 4, 8]


def test_unset_reps_stop_once_decided_and_an_estimated_e_decides_nothing():
    # exact times: every ratio equal, so the minimum number of repeats suffices; with a trace of the same prompt under
    # greedy decoding E(k) is exact for the confirmation, so only timings are uncertain: none here, and it agrees
    eng = BurstyEngine()
    res = run_tune(eng, [[1, 2, 3]], k_max=2, max_tokens=eng.n, confirm="best")
    assert res["confirm_reps"] == 6 and "until" in res["confirm_reps_rule"]
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert confirmed and all(r["agreement"]["state"] == "agrees" for r in confirmed)
    # without a trace E(k) comes from the K_max rounds, an estimate whose interval the error keeps: a point error of
    # zero with that interval wider than ±5% decides nothing
    res = run_tune(FakeEngine(), [[1, 2, 3]], k_max=2, max_tokens=16, confirm="best")
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert confirmed and all(r["agreement"]["state"] == "too_little_data" and abs(r["prediction_error"]) < 1e-9
                             for r in confirmed)


class CatchUpEngine(FakeEngine):
    """A drafter whose in-round cost grows with what the round before accepted (it catches up over those tokens):
    0.4 + 0.6·a ms. Runs accept PATTERN (mostly high counts), ``components`` times every prior count alike."""

    def cost(self, a):
        return 0.4 + 0.6 * a

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        if kinds == "end_to_end":
            prev = out["rounds"][-1]["accepted"]  # the pattern cycles: the first round follows the last one's count
            for r in out["rounds"]:
                r["ms"] += self.cost(prev) - (1.0 + 0.5 * k + (0.0 if name == "ngram" else 1.0))
                prev = r["accepted"]
        return out

    def components(self, name, prompt, plain_tokens, k, reps=3):
        return {"draft_ms": [self.cost(i % (k + 1)) for i in range(reps * (k + 1))]}


def test_the_in_round_draft_is_weighted_by_how_often_each_catch_up_happens():
    """Timed apart, every earlier accepted count is sampled alike; a run accepts some counts far more often. Weighted
    by the run's counts the prediction is exact; an unweighted median of all pairs would miss."""
    res = run_tune(CatchUpEngine(), [[1, 2, 3]], k_max=4, max_tokens=16, reps=2, confirm="all")
    for r in res["rows"]:
        # the measured rate pools every round, the last short one too (the one estimand); the prediction is the steady
        # state's: noiseless, they differ by that one round's share alone
        assert r["prediction_error"] == pytest.approx(0.0, abs=2e-3), r["k"]
    import statistics

    k = 4
    unweighted = statistics.median(CatchUpEngine().cost(i % (k + 1)) for i in range(8 * (k + 1)))
    row = next(r for r in res["rows"] if r["k"] == k)
    assert abs(unweighted - row["t_draft_ms"]) > 0.1


class StallEngine(FakeEngine):
    """A shared machine: every timed piece (a plain step, a verify forward, a round, a draft timed apart) stalls with
    probability 0.2 by half its cost on top, seeded. The stalls are the same on every side, so a right-skewed cost
    is the truth: a run pays the mean cost, and a prediction that takes medians of the pieces timed apart misses it."""

    def __init__(self, seed=3, **kw):
        super().__init__(**kw)
        self.rng = random.Random(seed)

    def stall(self, ms):
        return ms * (1.5 if self.rng.random() < 0.2 else 1.0)

    def plain(self, prompt, n):
        out = super().plain(prompt, n)
        out["step_ms"] = [self.stall(x) for x in out["step_ms"]]
        return out

    def verify_samples(self, context, tokens, positions, reps, ns=None):
        return {n: [self.stall(self.verify_ms(n)) for _ in range(reps)] for n in (ns or range(1, positions + 1))}

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        for r in out["rounds"]:
            if kinds == "end_to_end":
                r["ms"] = self.stall(r["ms"] - 0.2) + 0.2
        return out

    def components(self, name, prompt, plain_tokens, k, reps=3):
        extra = 0.0 if name == "ngram" else 1.0
        # what drafting adds to a round: the round run end to end less the verify timed just before it
        return {"draft_ms": [self.stall(self.verify_ms(k + 1) + 1.0 + 0.5 * k + extra) - self.stall(self.verify_ms(k + 1))
                             for _ in range(reps)]}


def test_the_prediction_is_unbiased_when_costs_are_right_skewed():
    """Stalls make every cost right-skewed, alike on both sides: the measured speed is a rate (a mean), so the
    prediction must take means of what it times apart. With medians (the method before) it read 8–12% optimistic at
    every k, all eight settings the same sign; with means the errors scatter around zero within 3% (seeded)."""
    res = run_tune(StallEngine(), [[1, 2, 3]], k_max=4, max_tokens=16, reps=60, confirm="all", verify_reps=60,
                   component_reps=300, beside_reps=3)
    errors = [r["prediction_error"] for r in res["rows"]]
    assert all(abs(e) < 0.03 for e in errors), errors
    assert abs(sum(errors) / len(errors)) < 0.01, errors  # no bias: the sign is not the same throughout


class DriftEngine(FakeEngine):
    """A shared machine whose drafting gets twice as slow once the confirmations start (another load lands on its
    small kernels): every draft timed from the first timing taken beside a confirmation pair on costs double, in the
    components timed apart and in the end-to-end rounds alike."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.slow = False

    def draft_cost(self, name, k):
        return (1.0 + 0.5 * k + (0.0 if name == "ngram" else 1.0)) * (2.0 if self.slow else 1.0)

    def components(self, name, prompt, plain_tokens, k, reps=3):
        if reps != 2:  # run_tune's beside timings (the ones before the confirmations use component_reps = 2 here)
            self.slow = True
        return {"draft_ms": [self.draft_cost(name, k)] * reps * (k + 1)}

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        if kinds == "end_to_end":
            for r in out["rounds"]:
                r["ms"] += self.draft_cost(name, k) - (1.0 + 0.5 * k + (0.0 if name == "ngram" else 1.0))
        return out


def test_drift_between_the_first_timings_and_the_confirmations_hits_both_sides():
    """The first predictions (timed before the confirmations) miss the slowed drafting by more than 5%; the final ones,
    timed beside each confirmation pair, are exact."""
    first = []
    res = run_tune(DriftEngine(), [[1, 2, 3]], k_max=4, max_tokens=16, reps=2, confirm="all", component_reps=2,
                   on_update=lambda r: first.append(r) if not first else None)
    before = {(r["drafter"], r["k"]): r["predicted_speedup"] for r in first[0]["rows"]}
    for r in res["rows"]:
        assert r["timed_beside"] and r["prediction_error"] == pytest.approx(0.0, abs=1e-9)
        assert r["t_draft_ms"] == pytest.approx(DriftEngine().draft_cost(r["drafter"], r["k"]) * 2.0)
        assert before[(r["drafter"], r["k"])] / r["measured_speedup"] - 1.0 > 0.05


class PairDriftEngine(BurstyEngine):
    """The bursty drafter on a machine whose speed wanders from one confirmation pair to the next (a random walk, a
    step of log sd 0.08 at every plain run) with jitter of every timing call's own (0.02): the timings beside a pair
    share most of its speed, the pairs far apart do not. The end-to-end rounds cost ``bias`` more than the parts timed
    apart."""

    def __init__(self, bias=0.0, seed=4, **kw):
        super().__init__(**kw)
        self.bias, self.rng, self.factor = bias, random.Random(seed), 1.0

    def _f(self):
        return self.factor * math.exp(self.rng.gauss(0.0, 0.02))

    def plain(self, prompt, n):
        self.factor *= math.exp(self.rng.gauss(0.0, 0.08))
        out = super().plain(prompt, n)
        f = self._f()
        out["step_ms"] = [ms * f for ms in out["step_ms"]]
        return out

    def verify_samples(self, context, tokens, positions, reps, ns=None):
        f = self._f()
        return {n: [ms * f for ms in xs] for n, xs in super().verify_samples(context, tokens, positions, reps, ns).items()}

    def components(self, name, prompt, plain_tokens, k, reps=3):
        f, extra = self._f(), 0.0 if name == "ngram" else 1.0
        m = reps * (k + 1)
        return {"draft_ms": [f * (1.0 + 0.5 * k + extra)] * m, "verify_ms": [f * self.verify_ms(k + 1)] * m,
                "bookkeeping_ms": [f * 0.2] * m, "rollback_ms": {a: [f * (0.5 + 0.1 * a)] * reps for a in range(k)}}

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        if kinds == "end_to_end":
            f = self._f() * (1.0 + self.bias)
            for r in out["rounds"]:
                r["ms"] *= f
        return out


@pytest.mark.parametrize("bias, state", [(0.0, "agrees"), (0.12, "off")])
def test_a_greedy_confirmation_is_judged_on_the_paired_interval(bias, state):
    """Drift from pair to pair moves a repeat's rounds and the timings beside it alike: the paired interval (each
    repeat's predicted round from its own beside timings) decides, where the unpaired bound on the same repeats (the
    prediction's interval over the measured one) is wider. A round dearer than its parts reads "off" (the check can
    fail)."""
    eng = PairDriftEngine(bias=bias)
    res = run_tune(eng, [[1, 2, 3]], k_max=2, max_tokens=eng.n, confirm="best", reps=12)
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert confirmed
    for r in confirmed:
        ag = r["agreement"]
        assert ag["interval_kind"] == "paired" and ag["state"] == state, ag["text"]
        assert len(r["paired_repeats"]) == res["confirm_reps"]  # each repeat's rounds and priced round, kept
        unpaired = agreement(r["prediction_error"], r["predicted_speedup"], r["measured_ci95"], res["confirm_reps"],
                             r["predicted_ci95"])
        assert unpaired["half_width"] > ag["half_width"] and ag["level"] == 0.95   # fixed repeats: no looks


@pytest.mark.parametrize("bias, state", [(0.0, "agrees"), (0.12, "off")])
def test_tune_stops_once_its_recommendation_is_decided(bias, state):
    """By default tune confirms the best predicted setting and its nearest rival, and stops once the pick's order
    against the rival and its verdict are both decided at the looks' corrected level (``tune_decide``), well before
    the cap here; the verdict is the corrected level's, and the recommendation says it was decided."""
    from specscope.profiler.analysis.tune_decide import LEVEL

    eng = PairDriftEngine(bias=bias)
    res = run_tune(eng, [[1, 2, 3]], k_max=2, max_tokens=eng.n)
    d = res["decision"]
    assert d["decided"] and d["order"] == "faster" and d["verdict"] == state and d["level"] == LEVEL
    assert MIN_REPS <= res["confirm_reps"] < MAX_REPS
    assert sum(r["measured_speedup"] is not None for r in res["rows"]) == 2
    pick = next(r for r in res["rows"] if [r["drafter"], r["k"]] == d["pick"])
    assert pick["agreement"]["state"] == state and pick["agreement"]["level"] == LEVEL
    assert d["ratio_interval"][0] > 1.0 and "Decided: " in res["recommendation"]["text"]
    assert "until the recommendation is decided" in res["confirm_reps_rule"]


# -- "E(k) exact" checked against the confirmation runs (trace_check) -------------------------------------------------------

class TokensEngine(PairDriftEngine):
    """``PairDriftEngine`` whose runs report the tokens they emit: the plain run's (the trace's continuation), or, with
    ``swap_at``, the same with one token changed in every end-to-end run (a target whose rounds do not reproduce the
    continuation the trace was walked on), or with ``trace_shift``, a trace recorded one position off (its walk is not
    the runs' rounds)."""

    def __init__(self, swap_at=None, trace_shift=False, target_agrees=None, **kw):
        super().__init__(**kw)
        self.swap_at, self.trace_shift, self.target_agrees = swap_at, trace_shift, target_agrees

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0):
        out = super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        out["tokens"] = list(plain_tokens)
        if kinds == "end_to_end" and self.swap_at is not None:
            out["tokens"][self.swap_at] += 1
        return out

    def trace(self, name, prompt, plain_tokens, k_max, seed=0):
        t = super().trace(name, prompt, plain_tokens, k_max, seed)
        if self.trace_shift:
            t["A"] = t["A"][1:] + t["A"][:1]
        if self.target_agrees is not None:
            t["target_agrees"] = self.target_agrees
        return t


@pytest.mark.parametrize("kw, why", [({"swap_at": 37}, "other tokens"), ({"trace_shift": True}, "differs from the trace's walk"),
                                     ({"target_agrees": 0.97}, "recorded agreement with the target is 97.0%")])
def test_a_trace_the_confirmations_contradict_is_not_called_exact(kw, why):
    """Greedy, with a trace: where the confirmation runs emit other tokens than the trace's continuation, or run other
    rounds than its walk, or the trace's own record says the target disagreed, E(k) is not exact: the error is judged
    on the unpaired interval (the prediction's sampled interval over the measured one) and the output says why (fails
    on the code before the check, which called it exact and paired the repeats)."""
    from specscope.profiler.cli.tune import format_tune

    res = run_tune(TokensEngine(**kw), [[1, 2, 3]], k_max=2, max_tokens=400, reps=4, confirm="best")
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert confirmed
    for r in confirmed:
        assert r["agreement"]["interval_kind"] == "unpaired" and "paired_repeats" not in r
        assert r["e_exact"] is False and why in r["e_exact_void"]
    assert why in res["assumption"] and why in format_tune(res) and "E(k) not exact" in format_tune(res)


def test_a_trace_the_confirmations_reproduce_stays_exact():
    """The same runs with the tokens and rounds the trace walks: E(k) stays exact, the repeats paired (the check does
    not void a trace that holds; fails before the check, whose rows had no ``e_exact``)."""
    from specscope.profiler.cli.tune import format_tune

    res = run_tune(TokensEngine(target_agrees=1.0), [[1, 2, 3]], k_max=2, max_tokens=400, reps=4, confirm="best")
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert confirmed
    for r in confirmed:
        assert r["agreement"]["interval_kind"] == "paired" and r["e_exact"] is True and "e_exact_void" not in r
    assert "not exact" not in res["assumption"] and "E(k) not exact" not in format_tune(res)


def test_the_measured_range_is_not_labelled_a_95_interval():
    """Too few repeats for an interval: tune's table shows the repeats' range marked as a range, with a note that it
    is not a 95% interval (it read as "measured (95% CI)" before)."""
    from specscope.profiler.cli.tune import format_tune

    res = run_tune(FakeEngine(), [[1, 2, 3]], k_max=2, max_tokens=16, reps=2, confirm="best")
    row = next(r for r in res["rows"] if r["measured_speedup"] is not None)
    assert row["measured_ci95"] is None and row["measured_range"]
    text = format_tune(res)
    lo, hi = row["measured_range"]
    assert f"[range {lo:.2f}–{hi:.2f}]" in text and f"({lo:.2f}–{hi:.2f})" not in text
    assert "range of repeats: the lowest and highest" in text and "not a 95% interval" in text


def test_the_predicted_band_is_not_called_a_95_interval():
    """The prediction's bootstrap band has no coverage test: tune's table calls it what it is (percentiles), never a 95%
    interval (it read "predicted (95% CI)" before)."""
    from specscope.profiler.cli.tune import format_tune

    res = run_tune(FakeEngine(), [[1, 2, 3]], k_max=2, max_tokens=16, reps=2, confirm="best")
    text = format_tune(res)
    assert "predicted (95% CI)" not in text and "predicted (2.5–97.5 pct)" in text
    assert "not called a 95% interval" in text
