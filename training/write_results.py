"""Write training/RESULTS.md from the evaluation outputs (not run in CI).

    python training/write_results.py MTP_SESSION.json DRAFT_SESSION.json [TRAIN_LOG ...]

MTP_SESSION / DRAFT_SESSION: `specscope run --demo [--drafter draft] -o ...` on the default suite.
TRAIN_LOG: the training logs (stdout of train_demo.py), for the validation curve.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def table(sessions):
    from specscope.profiler.session.session import Session

    rows, heads = [], []
    for label, path in sessions:
        s = Session.load(path)
        su = s.summary()
        heads.append(f"| {label} | {su['k']} | {su['plain_tok_s']:.1f} tok/s (T_decode {su['t_decode_ms']:.2f} ms) | "
                     f"{su['spec_tok_s']:.1f} tok/s | {su['measured_speedup']:.3f}× |")
        for cat, a in sorted((su.get("acceptance_by_content_class") or su.get("acceptance_by_category") or {}).items()):
            lo, hi = a["p_ci95"]
            t = a.get("tokens_per_round_ci95") or [0, 0]
            rows.append(f"| {label} | {cat} | **{a['p'] * 100:.1f}%** ({lo * 100:.1f}–{hi * 100:.1f}%) | "
                        f"{a['tokens_per_round']:.2f} ({t[0]:.2f}–{t[1]:.2f}) | {a['rounds']} |")
    return heads, rows


def curve(logs):
    out = []
    for log in logs:
        for line in Path(log).read_text().splitlines():
            if line.startswith("eval "):
                d = json.loads(line[5:])
                v = d["val_loss_lm_mtp_draft__agree_mtp_draft"]
                out.append(f"| {Path(log).stem} | {d['step']} | {d['seconds']} | " + " | ".join(
                    f"{v[c][0]:.2f} / {v[c][1]:.2f} / {v[c][2]:.2f}; {v[c][3]:.2f} / {v[c][4]:.2f}" for c in ("code", "en", "zh")) + " |")
    return out


def main():
    mtp, draft, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
    heads, rows = table([("MTP head", mtp), ("draft model", draft)])
    md = ["# The tiny trained demo: what it shows", "",
          "Measured with `specscope run --demo` (MTP head) and `specscope run --demo --drafter draft` on the default",
          "suite (18 cases × 128 tokens, greedy, k = 2), on the 2-core CPU with nothing else running. Intervals are",
          "the profiler's own (95%; a class's 6 cases are the unit).", "",
          "| drafter | k | plain | speculative | measured speedup |", "|---|---|---|---|---|", *heads, "",
          "| drafter | class | acceptance (95% CI) | tokens per round (95% CI) | rounds |", "|---|---|---|---|---|", *rows, ""]
    if logs:
        md += ["## Training curve (held-out 2% of each class)", "",
               "Per class: validation loss of trunk / MTP head / draft model (nats per token); then greedy agreement",
               "with the trunk, teacher-forced (MTP head's token after next, draft model's next token).", "",
               "| run | step | seconds | code | en | zh |", "|---|---|---|---|---|---|", *curve(logs), ""]
    (HERE / "RESULTS.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
