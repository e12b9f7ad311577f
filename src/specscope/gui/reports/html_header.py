"""The report's opening: title and notes (demo, what-if, faults, status), the verdict line, and the environment and
configuration tables; also whether a session is a sweep's (its cases live in its points)."""

from __future__ import annotations

import datetime as _dt

from specscope.profiler.analysis.summary_text import engine_line
from specscope.profiler.analysis.verdict import divergence_note, verdict

from .html_protocol import drift_note
from specscope.profiler.session.divergence import divergence_message
from specscope.profiler.session.records import drafter_label
from specscope.profiler.analysis.formatting import count, mib
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import kv_table as _kv


def sweep_only(session) -> bool:
    """A sweep's session: its cases are in its points (``session["sweep"]``), its top level has none of its own."""
    return bool(session.data.get("sweep")) and not session.cases


def _drafter_text(cfg: dict) -> str:
    d = cfg.get("drafter") or {}
    name = drafter_label(cfg)
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


def when(x) -> str:
    if isinstance(x, (int, float)):
        try:
            return _dt.datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return str(x)
    return "—" if x is None else str(x)


def header_section(session, s) -> str:
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


def verdict_section(s, target, session=None) -> str:
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


def environment_section(session, target) -> str:
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
        ("Compute dtype", esc(f"{model['compute_dtype']} (floating parameters cast on load with --dtype)")
         if model.get("compute_dtype") else None),
        ("Weights", esc(mib(model.get("weight_bytes"))) if model.get("weight_bytes") else None),
        ("MTP head", esc("present" if (model.get("mtp") or {}).get("available") else "absent") if "mtp" in model else None),
    ]
    env_rows = machine_rows(env)
    cfg_rows = [
        ("Drafter", esc(_drafter_text(cfg))),
        *([("Engine", esc(engine_line(cfg)))] if engine_line(cfg) else []),
        ("Draft model path", esc(cfg.get("draft_model_path")) if cfg.get("draft_model_path") else None),
        ("Draft tokens k", esc(cfg.get("num_draft_tokens"))),
        ("Sampling regime", esc(f"{samp.get('regime', 'greedy')} (temp {samp.get('temp', cfg.get('temp'))}, top-p {samp.get('top_p', cfg.get('top_p'))}, seed {samp.get('seed', cfg.get('seed'))})")),
        ("Suite", esc(f"{cfg.get('suite_name') or cfg.get('suite') or 'default'} · {cfg.get('n_cases', cfg.get('cases', '?'))} cases × {cfg.get('max_tokens')} new tokens")),
        ("Protocol", esc(f"{cfg.get('warmup', 0)} warm-up, {cfg.get('repeats', 1)} measured repeat(s), rates pooled over them; breakdown {'on, ' + str(cfg.get('breakdown_reps')) + ' reps' if cfg.get('breakdown') else 'off'}")),
        ("MTP hidden state", esc(cfg.get("mtp_hidden")) if (cfg.get("drafter") or {}).get("kind") == "mtp" else None),
        ("Started / finished", esc(f"{when(session.data.get('started_at'))} / {when(session.data.get('finished_at'))}") if session.data.get("started_at") else None),
    ]
    return environment_html([("Run", cfg_rows), ("Model", model_rows), ("Machine", env_rows)], target)


def machine_rows(env: dict) -> list[tuple[str, str | None]]:
    """The machine a session ran on, as the environment table's rows."""
    return [
        ("Device", esc(f"{env.get('device_name', '?')} · {env.get('chip', '')} · {env.get('device', '')}")),
        ("OS / machine", esc(f"{env.get('os', '?')} · {env.get('machine', '')}")),
        ("MLX / mlx-lm", esc(f"{env.get('mlx', '?')} / {env.get('mlx_lm', '?')}")),
        ("Python", esc(env.get("python"))),
        ("CPU cores", esc(env.get("cpu_count")) if env.get("cpu_count") else None),
        ("Peak memory", esc(mib(env.get("peak_memory_bytes"))) if env.get("peak_memory_bytes") else None),
        ("Thermal state", esc(env.get("thermal_state")) if env.get("thermal_state") else None),
    ]


def environment_html(blocks, target) -> str:
    """The "Environment and configuration" section from (title, rows) blocks: a grid on screen, stacked in print."""
    if target == "print":
        return "<h2>Environment and configuration</h2>" + "".join(f"<h3>{t}</h3>" + _kv(r) for t, r in blocks)
    return '<h2>Environment and configuration</h2><div class="envgrid">' + "".join(
        f'<section class="env"><h3>{t}</h3>' + _kv(r) + "</section>" for t, r in blocks) + "</div>"
