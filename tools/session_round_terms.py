"""A recorded run's judged error taken apart: its full end-to-end rounds against the components' round, term by term.

The judged error is, to within E's pooling, (mean full round) ÷ (T_verify + T_draft + T_rollback + T_bookkeeping) − 1.
Since T_draft is a round minus the verify before it, T_verify + T_draft is the components' timed round (``round_ms``,
draft to the read-back); so the error splits into what the round to its sync, the work after it and the rollback
each contribute. Per case and pooled; the real rounds split by the earlier round's accepted count (a full acceptance
feeds a draft model two tokens) and by their place in the pass (the first round; the others).
usage: python tools/session_round_terms.py SESSION.json"""
import json
import sys

import numpy as np

s = json.load(open(sys.argv[1]))
k = s["config"]["num_draft_tokens"]
if "summary" in s:
    summ = s["summary"]
else:  # a session saved without its figures: computed here as the run computes them
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.session.session import Session

    summ = summarize(Session.load(sys.argv[1]))
cases = [c for c in s["cases"] if not c.get("discarded") and c.get("components")]
real_all, first, rest, per_case = [], [], [], []
by_prior: dict[int, list[float]] = {}
comp_round: dict[int, list[float]] = {}
comp_book: dict[int, list[float]] = {}
for c in cases:
    rounds = c["spec"]["rounds"]
    passes: list[list[dict]] = []
    for i, r in enumerate(rounds):  # a pass: a run of rounds of one kind (a paired phase runs one of each)
        if not passes or r.get("kind") != rounds[i - 1].get("kind"):
            passes.append([])
        passes[-1].append(r)
    ms_case = []
    for p in passes:
        if p[0].get("kind") != "end_to_end":
            continue
        for i, r in enumerate(p):
            if len(r["drafted"]) != k:
                continue
            real_all.append(r["ms"])
            ms_case.append(r["ms"])
            (first if i == 0 else rest).append(r["ms"])
            if i > 0:
                by_prior.setdefault(int(p[i - 1]["accepted"] == k), []).append(r["ms"])
    comp = c["components"]
    for a, x, b in zip(comp["prior_accepted"], comp["round_ms"], comp["bookkeeping_ms"]):
        comp_round.setdefault(int(a == k), []).append(x)
        comp_book.setdefault(int(a == k), []).append(b)
    per_case.append((np.mean(ms_case), np.mean(comp["round_ms"]) + np.mean(comp["bookkeeping_ms"])))

hist = summ.get("acceptance_histogram") or {}
print(f"{len(cases)} cases, k = {k}; judged error {summ.get('prediction_error')}, "
      f"predicted {summ.get('predicted_speedup')}, measured {summ.get('measured_speedup')}")
terms = {t: summ.get(t) for t in ("t_verify_ms", "t_draft_ms", "t_rollback_ms", "t_bookkeeping_ms")}
cost = sum(v or 0.0 for v in terms.values())
print("terms (ms): " + ", ".join(f"{t} {v:.3f}" for t, v in terms.items() if v is not None) + f"; round {cost:.3f}")
print(f"real full e2e rounds: {len(real_all)}, mean {np.mean(real_all):.3f} ms; first of a pass {np.mean(first):.3f} "
      f"({len(first)}), the others {np.mean(rest):.3f}")
print(f"mean real round ÷ the round model's round: {np.mean(real_all) / cost:.4f}")
for full in (0, 1):
    lab = "after a full acceptance" if full else "after a partial one"
    print(f"  {lab:<26} real {np.mean(by_prior.get(full, [np.nan])):.3f} ({len(by_prior.get(full, []))}), "
          f"components round {np.mean(comp_round.get(full, [np.nan])):.3f} + book {np.mean(comp_book.get(full, [np.nan])):.3f}"
          f" ({len(comp_round.get(full, []))})")
x = np.log(np.array([a for a, _ in per_case]) / np.array([b for _, b in per_case]))
h = 1.96 * x.std(ddof=1) / len(x) ** 0.5
print(f"per case, real ÷ (components' round + book), no rollback: {np.exp(x.mean()):.4f} "
      f"({np.exp(x.mean() - h):.4f}…{np.exp(x.mean() + h):.4f})")

# The rollback as the run's own rounds pay it: a round after a partial acceptance computes the earlier round's lazy
# rollback in its sync and feeds the draft one token; one after a full acceptance computes none and feeds two. The
# components' rounds (no rollback pending in either) give the feed's own difference; what is left is the rollback.
def fused_estimate(idx):
    rp = [x for i in idx for x in per_case_prior[i][0]]
    rf = [x for i in idx for x in per_case_prior[i][1]]
    cp = [x for i in idx for x in per_case_comp[i][0]]
    cf = [x for i in idx for x in per_case_comp[i][1]]
    rb = [x for i in idx for x in per_case_rb[i]]
    return (np.mean(rp) - np.mean(rf)) - (np.mean(cp) - np.mean(cf)), np.mean(rb)


per_case_prior, per_case_comp, per_case_rb = [], [], []
for c in cases:
    rounds = c["spec"]["rounds"]
    pr = ([], [])
    for i, r in enumerate(rounds):
        if i and r["kind"] == "end_to_end" == rounds[i - 1]["kind"] and len(r["drafted"]) == k:
            pr[int(rounds[i - 1]["accepted"] == k)].append(r["ms"])
    comp = c["components"]
    cp = ([], [])
    for a, x in zip(comp["prior_accepted"], comp["round_ms"]):
        cp[int(a == k)].append(x)
    per_case_prior.append(pr)
    per_case_comp.append(cp)
    per_case_rb.append([x for a, xs in comp["rollback_ms"].items() if int(a) < k for x in xs])
est = fused_estimate(range(len(cases)))
rng = np.random.default_rng(0)
boot = np.array([fused_estimate(rng.integers(0, len(cases), len(cases))) for _ in range(2000)])
lo, hi = np.percentile(boot[:, 0], [2.5, 97.5])
dlo, dhi = np.percentile(boot[:, 1] - boot[:, 0], [2.5, 97.5])
print(f"a partial acceptance's rollback as the real rounds pay it: {est[0]:.3f} ms ({lo:.3f}…{hi:.3f}, cases "
      f"resampled); timed apart by the components: {est[1]:.3f} ms; apart − real {est[1] - est[0]:.3f} ({dlo:.3f}…{dhi:.3f})")
