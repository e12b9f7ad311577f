"""HTML report: one self-contained file (inline CSS, charts as data: PNG, no scripts, no URLs).

``build(session, charts, target)`` writes the same report for two engines:
``"screen"`` for browsers (this module's ``render``) and ``"print"`` for Qt's
rich-text engine, which ``gui.reports.pdf`` paginates into a PDF. Every string
that came from a prompt, the model, a path or an error goes through ``esc``
(home directory replaced by ``~``, then HTML-escaped).
"""

from __future__ import annotations

import base64
import datetime as _dt

from specscope.profiler.analysis.verdict import (
    SAMPLED_NOTE,
    acceptance_phrase,
    ledger_text,
    rollback_term_text,
    audit_answers,
    divergence_note,
    instrumentation_cost_text,
    prediction_error_text,
    verdict,
)

from . import charts as _charts
from .html_breakdown import breakdown_section
from .html_context import context_images, context_section
from .html_cost import prediction_paragraph, tune_section, verify_cost_section
from .html_protocol import drift_note, protocol_section
from .html_trace import trace_images, trace_section
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.summary import session_case_stats, summarize
from specscope.profiler.session.divergence import ENGINE_FAULT, divergence_message
from specscope.profiler.analysis.formatting import ci, count, fmt as f, mib, pct
from specscope.profiler.renderers.html_common import PRINT_CSS, SCREEN_CSS, esc
from specscope.profiler.renderers.html_common import kv_table as _kv
from specscope.profiler.renderers.html_common import table as _table

CHART_CAPTIONS = {
    "division": "The division: predicted speedup over acceptance p at the measured T_decode, T_verify and T_draft "
    "(curve assumes i.i.d. acceptance); the marker is the measured run.",
    "breakdown": "Where time goes: per-block time of one decode step and one verify pass (barrier-timed).",
    "throughput": "Throughput over generation time: plain vs speculative decoding (rolling window).",
    "acceptance": "Cumulative acceptance with its 95% interval (the round as the unit); the line marks the low-sample limit.",
    "tokens_per_round": "Tokens emitted per speculative round.",
    "verify_cost": "Verify cost over n positions in plain decode steps: measured (median, min–max), every position re-reading (n × decode), each weight read once at the decode step's efficiency, and the roofline floor.",
    "tune": "Predicted speedup over k per drafter with its 95% band, the confirmation runs' measured points, and the recommended k.",
    "probe": "The clock probe: each reading's speed as a share of the fastest, with its own noise band; a slide late in the run is drift.",
}


def sweep_only(session) -> bool:
    """A sweep's session: its cases are in its points (``session["sweep"]``), its top level has none of its own."""
    return bool(session.data.get("sweep")) and not session.cases


def collect_charts(session, names=_charts.NAMES, width=900, height=420) -> dict:
    have = {"verify_cost": session.data.get("roofline"), "tune": session.data.get("tune"), "probe": session.data.get("probe")}
    if sweep_only(session):  # no run of its own to draw: the clock probe over the whole sweep, and the sweep's charts
        names = [n for n in names if n == "probe"]
    out = {n: _charts.image(n, session, width=width, height=height) for n in names if have.get(n, True)}
    return {**out, **trace_images(session, width=width, height=int(height * 0.6)),  # acceptance traces, when held
            **context_images(session, width=width, height=int(height * 0.9))}  # a context sweep, when held


# -- small builders ------------------------------------------------------------------

def _figure(name, charts, target, width=640) -> str:
    data = charts.get(name)
    cap = esc(CHART_CAPTIONS.get(name, ""))
    if not data:
        why = _charts.last_error.get(name, "not drawn")
        return f'<figure><p class="unavailable muted">chart unavailable ({esc(name)}: {esc(why)})</p><figcaption>{cap}</figcaption></figure>'
    if target == "print":
        src = f"chart-{name}.png"
        return f'<p align="center"><img src="{src}" width="{width}"></p><p class="muted" align="center"><small>{cap}</small></p>'
    b64 = base64.b64encode(data).decode("ascii")
    return f'<figure><img alt="{esc(name)} chart" src="data:image/png;base64,{b64}"><figcaption>{cap}</figcaption></figure>'


def _speed_cls(x) -> str:
    if x is None:
        return ""
    return "good" if x >= 1 else "bad"


def _drafter_text(cfg: dict) -> str:
    d = cfg.get("drafter") or {}
    name = d.get("name", "?")
    kind = d.get("kind", "")
    text = name + (f" ({kind})" if kind and kind != name else "")
    if d.get("model"):
        text += f", model {d['model']}"
    if d.get("what_if") or kind == "oracle" or name == "oracle":
        text += (
            f" — WHAT-IF: oracle drafter, plain continuation corrupted to p={cfg.get('oracle_p')} "
            f"at {cfg.get('oracle_draft_ms')} ms draft cost"
        )
    return text


def _when(x) -> str:
    if isinstance(x, (int, float)):
        try:
            return _dt.datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return str(x)
    return "—" if x is None else str(x)


def _first_diff(a: str, b: str) -> int | None:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def _marked(text: str, at: int | None) -> str:
    if at is None:
        return esc(text)
    return esc(text[:at]) + "<mark>" + esc(text[at:]) + "</mark>"


# -- sections -------------------------------------------------------------------------

def _header(session, s) -> str:
    env = session.data.get("environment") or {}
    model = session.data.get("model") or {}
    cfg = session.config
    title = f"specscope report — {model.get('name') or 'model ?'} on {env.get('device_name') or '?'}"
    if env.get("chip"):
        title += f" ({env['chip']})"
    sub = (
        f"drafter {_drafter_text(cfg)} · k = {s['k']} · {s['regime']} · {s['cases_measured']} "
        f"case{'' if s['cases_measured'] == 1 else 's'} × "
        f"{cfg.get('max_tokens', '?')} new tokens · status {session.status}"
    )
    if sweep_only(session):
        from specscope.profiler.analysis.sweep import sweep_status

        sub = (f"drafter {_drafter_text(cfg)} · k = {s['k']} · {s['regime']} · {sweep_status(session)} × "
               f"{cfg.get('max_tokens', '?')} new tokens · status {session.status}")
    out = [f"<h1>{esc(title)}</h1>", f'<p class="sub">{esc(sub)}</p>']
    from specscope.demo_labels import demo_kind

    if demo_kind(model.get("demo")) == "trained":
        out.append(
            '<p class="note"><b>Tiny trained demo:</b> acceptance is real for this model, not for yours. '
            "A few-million-parameter model of the target's layout (Gated DeltaNet + full attention, routed and shared "
            "experts, 4-bit) trained on a small corpus of code, English and Chinese, with a trained MTP head and draft "
            "model: its acceptance per content class is a real measurement, its timings are real for this tiny model "
            "(mostly per-step overhead at this size), and neither says what your model will do.</p>"
        )
    elif demo_kind(model.get("demo")) == "shape":
        from specscope.demo_labels import demo_note

        out.append(f'<p class="note"><b>Random weights at a released model\'s dimensions:</b> {esc(demo_note(model["demo"]))}. '
                   "Its layers, experts, vocabulary and quantization are the released model's, so every timing is a real "
                   "measurement of that shape on this machine; its text and acceptance say nothing.</p>")
    elif model.get("demo") or cfg.get("demo"):
        out.append(
            '<p class="note"><b>Synthetic demo model:</b> timings real, text/acceptance not meaningful. '
            "Its weights are random; it has the target's shape and loads through the same code path, "
            "so every timing here is a real measurement of that shape on this machine.</p>"
        )
    if s.get("what_if"):
        out.append(
            '<p class="note whatif"><b>What-if run (oracle drafter):</b> drafts are the plain run\'s own continuation, '
            "corrupted to a chosen acceptance at a chosen draft cost. It measures the real verify path at that acceptance; "
            "it is not a drafter you can deploy.</p>"
        )
    faults = s.get("engine_faults") or []
    shown = set()
    if faults:
        out.append('<p class="note error"><b>Engine fault: speculative output is not plain decoding\'s.</b> Under greedy '
                   "sampling it must equal plain decoding up to kernel rounding, which can only flip a near-tie; these cases "
                   "diverged with a clear margin, so the speed figures below measure a faulty engine.</p>")
        for d in faults:
            msg = divergence_message(d["case"], d)
            shown.add(msg)
            out.append(f'<p class="note error">{esc(msg)}</p>')
    if session.status not in ("complete",):
        why = "" if faults else " Figures cover the cases measured so far."
        out.append(f'<p class="note error"><b>Session status: {esc(session.status)}.</b>{why}</p>')
    for e in [e for e in (session.data.get("errors") or []) if e not in shown][:20]:
        out.append(f'<p class="note error">{esc(e)}</p>')
    out.append(drift_note(s))
    note = divergence_note(s)
    if note and not faults:  # a near-tie (kernel rounding), or a divergence an older specscope never measured
        out.append(f'<p class="note">{esc(note)}</p>')
    return "".join(out)


def _verdict(s, target, session=None) -> str:
    m = s.get("measured_speedup")
    cls = "" if m is None else ("win" if m >= 1 else "lose")
    text = verdict(s)
    if session is not None and sweep_only(session):  # no single verdict: one per context
        from specscope.profiler.analysis.sweep import sweep_figures, sweep_verdict

        text = sweep_verdict(sweep_figures(session), where="in the Long context section below")
        cls = ""
    if target == "print":
        return f'<table width="100%" cellpadding="8" cellspacing="0"><tr><td class="verdict">{esc(text)}</td></tr></table>'
    return f'<p class="verdict {cls}">{esc(text)}</p>'


def _environment(session, target) -> str:
    env = session.data.get("environment") or {}
    model = session.data.get("model") or {}
    cfg = session.config
    samp = cfg.get("sampling") or {}
    q = model.get("quantization") or {}
    layers = model.get("layers")
    layer_text = None
    if layers:
        layer_text = f"{layers} ({model.get('linear_attention_layers', 0)} linear attention, {model.get('full_attention_layers', 0)} full attention, {model.get('moe_layers', 0)} MoE)"
    experts = None
    if model.get("experts"):
        experts = f"{model['experts']} routed, {model.get('experts_per_token', '?')} per token" + (", + shared expert" if model.get("shared_expert") else "")
    model_rows = [
        ("Model", esc(model.get("name"))),
        ("Revision", esc(model.get("revision")) if model.get("revision") else None),
        ("Path", esc(model.get("path") or cfg.get("model_path"))),
        ("Type", esc(f"{model.get('model_type', '?')} · {model.get('architecture', '')}")),
        ("Compatibility", esc(f"{(cfg.get('compatibility') or {}).get('class')}: "
                              + ((cfg.get('compatibility') or {}).get('rollback') or {}).get('text', ''))
         if cfg.get("compatibility") else None),
        ("Layers", esc(layer_text) if layer_text else None),
        ("Experts", esc(experts) if experts else None),
        ("Parameters", esc(f"{count(model.get('parameters'))} total, {count(model.get('active_parameters'))} active") if model.get("parameters") else None),
        ("Quantization", esc(f"{q.get('bits')}-bit, group {q.get('group_size')} ({q.get('mode', '')})") if q else None),
        ("Weights", esc(mib(model.get("weight_bytes"))) if model.get("weight_bytes") else None),
        ("MTP head", esc("present" if (model.get("mtp") or {}).get("available") else "absent") if "mtp" in model else None),
    ]
    env_rows = [
        ("Device", esc(f"{env.get('device_name', '?')} · {env.get('chip', '')} · {env.get('device', '')}")),
        ("OS / machine", esc(f"{env.get('os', '?')} · {env.get('machine', '')}")),
        ("MLX / mlx-lm", esc(f"{env.get('mlx', '?')} / {env.get('mlx_lm', '?')}")),
        ("Python", esc(env.get("python"))),
        ("CPU cores", esc(env.get("cpu_count")) if env.get("cpu_count") else None),
        ("Peak memory", esc(mib(env.get("peak_memory_bytes"))) if env.get("peak_memory_bytes") else None),
        ("Thermal state", esc(env.get("thermal_state")) if env.get("thermal_state") else None),
    ]
    cfg_rows = [
        ("Drafter", esc(_drafter_text(cfg))),
        ("Draft model path", esc(cfg.get("draft_model_path")) if cfg.get("draft_model_path") else None),
        ("Draft tokens k", esc(cfg.get("num_draft_tokens"))),
        ("Sampling regime", esc(f"{samp.get('regime', 'greedy')} (temp {samp.get('temp', cfg.get('temp'))}, top-p {samp.get('top_p', cfg.get('top_p'))}, seed {samp.get('seed', cfg.get('seed'))})")),
        ("Suite", esc(f"{cfg.get('suite_name') or cfg.get('suite') or 'default'} · {cfg.get('n_cases', cfg.get('cases', '?'))} cases × {cfg.get('max_tokens')} new tokens")),
        ("Protocol", esc(f"{cfg.get('warmup', 0)} warm-up, {cfg.get('repeats', 1)} measured repeat(s), medians reported; breakdown {'on, ' + str(cfg.get('breakdown_reps')) + ' reps' if cfg.get('breakdown') else 'off'}")),
        ("MTP hidden state", esc(cfg.get("mtp_hidden")) if (cfg.get("drafter") or {}).get("kind") == "mtp" else None),
        ("Started / finished", esc(f"{_when(session.data.get('started_at'))} / {_when(session.data.get('finished_at'))}") if session.data.get("started_at") else None),
    ]
    blocks = [("Run", cfg_rows), ("Model", model_rows), ("Machine", env_rows)]
    if target == "print":
        return "<h2>Environment and configuration</h2>" + "".join(f"<h3>{t}</h3>" + _kv(r) for t, r in blocks)
    return '<h2>Environment and configuration</h2><div class="envgrid">' + "".join(
        f'<section class="env"><h3>{t}</h3>' + _kv(r) + "</section>" for t, r in blocks) + "</div>"


def _summary(s) -> str:
    k = s["k"]
    rows = [
        ["Plain decoding", rate(s["plain_tok_s"], " tok/s"), "steady state, end to end, median over repeats"],
        ["T_decode", f(s["t_decode_ms"], ".2f", " ms"), "1000 / plain tok/s — whole graph, never a sum of blocks"],
        [f"T_verify(k={k})", f(s["t_verify_ms"], ".2f", " ms"),
         f"one verify forward over {k + 1} positions = {f(s['verify_multiple'], '.2f')} × T_decode; "
         + ("timed apart from the rounds, on a restored cache at the middle of each case"
            if s.get("division_inputs") == "components" else "mean of this run's instrumented rounds (no components timed apart)")],
        [f"T_draft(k={k})", esc(draft_time_text(s["t_draft_ms"], s.get("t_draft_ms_ci95"), unit=" ms")), f"producing the {k} draft{'s' if k != 1 else ''} of one round"
         + ("; timed apart" if s.get("division_inputs") == "components" else "")],
        ["Rollback", f(s["t_rollback_ms"], ".3f", " ms"),
         esc(rollback_term_text(s) or "mean per round; not in the division")],
        ["Instrumentation cost", esc(instrumentation_cost_text(s)),
         "end-to-end rounds (one sync per round, as a production engine) vs instrumented rounds (draft, verify and "
         f"rollback timed apart): {rate(s.get('spec_tok_s'), ' tok/s')} vs {rate(s.get('spec_instrumented_tok_s'), ' tok/s')}; "
         "the measured speed is end to end"] if s.get("instrumentation_cost") is not None else None,
        ["Acceptance p", f"{pct(s['p'])}" if s.get("p") is not None else "—",
         esc(acceptance_phrase(s))],
        ["Per-position a_i", esc(", ".join(f"a{i + 1} = {a:.2f}" for i, a in enumerate(s["per_position"]))) or "—",
         "share of rounds whose first i drafts were all accepted (measured, not i.i.d.)"],
        ["Tokens per round E", f(s["tokens_per_round"], ".3f"), "1 + Σ a_i"],
        ["Predicted speedup", f'<span class="{_speed_cls(s["predicted_speedup"])}">{f(s["predicted_speedup"], ".3f", "×")}</span>',
         (f"E · T_decode / (T_verify + T_draft), T_verify and T_draft timed apart, only E from the run → "
          f"{rate(s['predicted_tok_s'], ' tok/s')}") if s.get("predicted_speedup") is not None
         else esc(f"not available: {s.get('prediction_unavailable')}")],
        ["Measured speedup", f'<span class="{_speed_cls(s["measured_speedup"])}">{f(s["measured_speedup"], ".3f", "×")}</span>',
         f"speculative {rate(s['spec_tok_s'], ' tok/s')} ÷ plain {rate(s['plain_tok_s'], ' tok/s')}, same prompts and token budget"],
        ["Prediction error", esc(prediction_error_text(s) or "—"),
         "(predicted − measured) / measured, with its 95% interval (E, the measured speed and the component timings "
         f"resampled together by {esc(s.get('prediction_unit') or 'unit')}): "
         f"<b>{esc((s.get('prediction_verdict') or {}).get('text') or '—')}</b>"],
        ["Ledger", f(s.get("ledger_speedup"), ".3f", "×"), esc(ledger_text(s) or "no instrumented rounds")]
        if s.get("ledger_speedup") is not None else None,
        ["Break-even", f"T_verify ≤ {f(s['break_even_verify_ms'], '.2f', ' ms')}"
         if (s.get("break_even_verify_ms") or 0) > 0 else "out of reach",
         (f"≤ {f(s['break_even_multiple'], '.2f')} × T_decode (E·T_decode − T_draft)" if (s.get("break_even_verify_ms") or 0) > 0
          else "T_draft alone exceeds E·T_decode: no verify, however fast, can pay")
         + f"; measured {f(s['verify_multiple'], '.2f')} ×"],
    ]
    rows = [r for r in rows if r is not None]
    if s["regime"] != "greedy":  # outputs differ by design: no match rate, say what is checked instead
        rows.append(["Output check", "sampled", esc(SAMPLED_NOTE)])
    elif s.get("match_rate") is not None:
        note = divergence_note(s)
        rows.append(["Greedy match", pct(s["match_rate"]),
                     "of tokens equal to plain decoding" + (" (all cases identical)" if s.get("all_match") else "")
                     + (f" — {esc(note)}" if note else "")])
    if s.get("block_sum_predicted_speedup") is not None:
        rows.append(["Wrong-ruler prediction", f(s["block_sum_predicted_speedup"], ".3f", "×"),
                     f"what a block-sum T_decode would predict (vs {f(s['predicted_speedup'] or s.get('ledger_speedup'), '.3f', '×')} from whole-graph times)"])
    formula = ""
    if s.get("predicted_speedup") is not None:
        formula = (
            f'<p class="formula">predicted speedup = E · T_decode / (T_verify + T_draft) = '
            f"{s['tokens_per_round']:.3f} × {s['t_decode_ms']:.2f} / ({s['t_verify_ms']:.2f} + {s['t_draft_ms']:.2f}) = "
            f"{s['predicted_speedup']:.3f}×</p>"
        )
    return "<h2>Summary</h2>" + formula + _table(["Figure", "Value", "What it is"], rows, numeric_from=1, numeric_to=2, cls="full summary")


def _division(s, charts, target) -> str:
    parts = ["<h2>The division</h2>"]
    if s.get("verify_multiple") is not None:
        vm, be = s["verify_multiple"], s["break_even_multiple"]
        ok = vm <= be
        parts.append(
            f"<p>Speculation pays only while T_verify ≤ E·T_decode − T_draft, here ≤ {be:.2f} × T_decode. "
            f'This run\'s verify costs <span class="{"good" if ok else "bad"}">{vm:.2f} × T_decode</span>, '
            f"so it is {'inside' if ok else 'outside'} the break-even line.</p>"
        )
        if s["k"] == 1 and vm >= 2:
            parts.append("<p>Verifying 2 positions costs two plain steps or more: for k = 1 the speedup is below (1+p)/2 ≤ 1 for every p. No drafter can save it; only a cheaper verify can.</p>")
    parts.append(_figure("division", charts, target))
    parts.append(_figure("throughput", charts, target))
    return "".join(parts)


def _acceptance(s, charts, target) -> str:
    k = s["k"]
    parts = ["<h2>Acceptance</h2>", f"<p>{esc(acceptance_phrase(s))}.</p>"]
    head = ["Content", "Rounds", "Drafted", "Accepted", "p", "95% CI", "E (tokens / round)"] + [f"a{i + 1}" for i in range(k)]
    rows = []
    for cat, a in (s.get("acceptance_by_content_class") or {}).items():
        low = ' <span class="warn">(low sample)</span>' if a.get("low_sample") else ""
        rows.append([esc(cat) + low, str(a["rounds"]), str(a["drafted"]), str(a["accepted"]), pct(a["p"]), ci(a["p_ci95"]),
                     f(a["tokens_per_round"], ".3f")] + [f(x, ".2f") for x in (a["per_position"] if a["rounds"] else [None] * k)])
    rows.append(["<b>all</b>", str(sum(a["rounds"] for a in (s.get("acceptance_by_content_class") or {}).values())),
                 str(s["drafted"]), str(s["accepted"]), pct(s["p"]), ci(s["p_ci95"]), f(s["tokens_per_round"], ".3f")]
                + [f(x, ".2f") for x in (s["per_position"] or [None] * k)])
    parts.append("<h3>Per content class and per position</h3>")
    parts.append(_table(head, rows, row_classes={len(rows) - 1: "total"}))
    parts.append(f'<p class="muted">Regime: {esc(s["regime"])}. a_i is the share of rounds whose first i drafts were all '
                 "accepted; greedy and sampled acceptance are not comparable.</p>")
    parts.append(_figure("acceptance", charts, target))
    parts.append(_figure("tokens_per_round", charts, target))
    return "".join(parts)


def _cases(session) -> str:
    head = ["Case", "Content", "Prompt tok", "Plain tok/s", "Spec tok/s", "T_verify ms", "T_draft ms", "p", "95% CI",
            "E", "Predicted", "Measured", "Error", "Match", "1st diverg."]
    rows = []
    for c in session.cases:
        st = session_case_stats(session, c)
        a = st["acceptance"]
        m = st["match"] or {}
        sampled = session.regime != "greedy"
        d = st.get("divergence")
        fd = None if sampled or m.get("first_divergence") is None else f"token {m['first_divergence']}"
        if fd and d:
            fd += " (ENGINE FAULT)" if d["verdict"] == ENGINE_FAULT else " (near-tie)"
        rows.append([
            esc(c["id"]) + ("" if c.get("complete") else ' <span class="warn">(incomplete)</span>')
            + (' <span class="warn">(discarded: not in the summary)</span>' if c.get("discarded") else ""),
            esc(c.get("content_class", "")),
            str(len(c.get("prompt_tokens") or [])),
            f(st["plain_tok_s"], ".1f"), f(st["spec_tok_s"], ".1f"),
            f(st["t_verify_ms"]), f(st["t_draft_ms"]),
            pct(a["p"]), ci(a["p_ci95"]) if a["rounds"] else "—",
            f(a["tokens_per_round"], ".2f"),
            f(st["predicted_speedup"], ".3f", "×"), f(st["measured_speedup"], ".3f", "×"),
            pct(st["prediction_error"], 1, signed=True),
            "by design" if sampled and m else (pct(m.get("match_rate"), 0) if m else "—"),
            fd or "—",
        ])
    return '<h2>Per case</h2><div class="scroll">' + _table(head, rows, numeric_from=2, cls="full cases") + "</div>"


def _audit(s) -> str:
    items = "".join(f"<dt>{esc(q)}</dt><dd>{esc(a)}</dd>" for q, a in audit_answers(s))
    return (
        "<h2>Judging a benchmark: the three questions</h2>"
        "<p>Answered for this run; ask the same of any quoted speculative-decoding number.</p>"
        f'<dl class="audit">{items}</dl>'
    )


def _outputs(session, target) -> str:
    parts = ['<h2 class="pagebreak">Outputs: plain vs speculative</h2>']
    demo = (session.data.get("model") or {}).get("demo")
    from specscope.demo_labels import demo_kind

    if demo_kind(demo) == "trained":
        pass  # a trained demo writes real (if small-model) text
    elif demo_kind(demo) == "shape":
        parts.append('<p class="muted">Random weights at a released model\'s dimensions: the text is random tokens; '
                     "compare it only for equality.</p>")
    elif demo:
        parts.append('<p class="muted">Synthetic demo model: the text is random tokens; compare it only for equality.</p>')
    parts.append('<p class="muted">Where the two differ, the speculative text from the first differing character on is highlighted.</p>')
    for c in session.cases:
        st = session_case_stats(session, c)
        m = st["match"] or {}
        pt, stx = c.get("plain_text") or "", c.get("spec_text") or ""
        at = _first_diff(pt, stx)
        d = st.get("divergence")
        if m and session.regime != "greedy":
            status = "sampled: differs from plain decoding by design"
        elif m:
            status = ("identical tokens" if m.get("equal") else
                      f"{pct(m.get('match_rate'), 1)} tokens match, first divergence at token {m.get('first_divergence')}")
            if d:
                status += " — ENGINE FAULT (clear margin)" if d["verdict"] == ENGINE_FAULT else " — near-tie (kernel rounding)"
        else:
            status = "not measured"
        cell = "out" if target == "print" else ""
        parts.append(
            f'<div class="case"><h3>{esc(c["id"])} <span class="muted">· {esc(c.get("content_class", ""))} · {esc(status)}</span></h3>'
            f'<p class="prompt">{esc(c.get("prompt", ""))}</p>'
            f'<table class="outputs" width="100%" cellspacing="0" cellpadding="5" border="1">'
            f'<tr><th width="50%">Plain</th><th width="50%">Speculative</th></tr>'
            f'<tr><td class="{cell}">{_marked(pt, at)}</td><td class="{cell}">{_marked(stx, at)}</td></tr></table></div>'
        )
    return "".join(parts)


def build(session, charts: dict | None = None, target: str = "screen") -> str:
    """The report as HTML for ``target`` "screen" (browsers) or "print" (Qt rich text → PDF)."""
    charts = charts if charts is not None else {}
    s = summarize(session)
    model = session.data.get("model") or {}
    title = f"specscope report — {model.get('name') or 'session'}"
    css = SCREEN_CSS if target == "screen" else PRINT_CSS
    probe = _figure("probe", charts, target) if session.data.get("probe") else ""
    if sweep_only(session):  # a sweep: its figures are per context; the run sections would all be empty
        parts = [_header(session, s), _verdict(s, target, session), _environment(session, target),
                 context_section(session, charts, target), protocol_section(session, s) + probe]
    else:
        parts = [
            _header(session, s),
            _verdict(s, target),
            _environment(session, target),
            _summary(s),
            protocol_section(session, s) + probe,
            _division(s, charts, target) + prediction_paragraph(session, s),
            breakdown_section(s, _figure("breakdown", charts, target)),
            verify_cost_section(session, _figure("verify_cost", charts, target) if session.data.get("roofline") else ""),
            tune_section(session, _figure("tune", charts, target) if session.data.get("tune") else ""),
            _acceptance(s, charts, target),
            trace_section(session, charts, target),
            context_section(session, charts, target),  # a run that also holds a sweep
            _audit(s),
            _cases(session),
            _outputs(session, target),
        ]
    body = "".join(parts)
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    foot = (f'<footer><p class="muted">Generated by specscope on {esc(stamp)} from a saved session; '
            "charts drawn by the app's own chart code. Predictions use whole-graph times only.</p></footer>")
    if target == "print":
        return f"<html><head><meta charset=\"utf-8\"><title>{esc(title)}</title></head><body>{body}{foot}</body></html>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{css}</style></head><body><main>{body}{foot}</main></body></html>\n"
    )


def render(session) -> str:
    return build(session, collect_charts(session), target="screen")


def render_warnings() -> list[str]:
    """Charts the last render had to leave out, and why (the report says so too)."""
    return [f"chart {name} left out: {why}" for name, why in sorted(_charts.last_error.items())]

