"""The sharded engine on the demo model, two ranks on this machine (ring backend over loopback, CPU).

One launch of two ranks runs plain decoding, MTP speculative decoding and a breakdown on every rank;
the tokens must equal each other and the single-process run's, and the breakdown must carry the
communication block with per-rank figures. Three ranks cannot shard the demo (its vocabulary, heads
and widths are powers of two): that is refused before anything is sharded, with the reasons.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.engine_adapter.decode.records import tokens_of
from specscope.errors import SpecscopeError

PROMPT = "def fib(n):"
MAX_TOKENS = 10

RANK_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from specscope.engine_adapter.distributed.engine import DistributedEngine
    from specscope.engine_adapter.engine import EngineParams
    from specscope.engine_adapter.decode.records import tokens_of

    out_dir, prompt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    e = DistributedEngine.open(EngineParams(demo=True, drafter="mtp", num_draft_tokens=2, round_kinds="alternate"))
    p = e.encode(prompt)
    plain = tokens_of(e.plain(p, n))
    spec = tokens_of(e.speculative(p, plain, n))
    bd = e.breakdown(p, plain, reps=1)
    facts = e.run_facts(n)["distributed"]
    json.dump({"rank": e.rank, "size": e.size, "plain": plain, "spec": spec, "breakdown": bd, "facts": facts,
               "describe": e.describe().get("distributed")}, open(f"{out_dir}/rank{e.rank}.json", "w"))
    """
)


def launch_ranks(script: str, args: list[str], n: int, timeout: int = 300) -> subprocess.CompletedProcess:
    from specscope.profiler.run.launch import LOOPBACK, _free_port_base, _mlx_launch

    cmd = _mlx_launch(sys.executable) + ["--python", sys.executable, "--hosts", LOOPBACK, "-n", str(n), "--backend", "ring",
                                         "--starting-port", str(_free_port_base(n)), "--", script, *args]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    script = d / "rank.py"
    script.write_text(RANK_SCRIPT)
    r = launch_ranks(str(script), [str(d), PROMPT, str(MAX_TOKENS)], 2)
    outs = []
    for rank in range(2):
        f = d / f"rank{rank}.json"
        assert f.exists(), f"rank {rank} wrote nothing:\n{r.stderr[-3000:]}"
        outs.append(json.loads(f.read_text()))
    return outs


@pytest.mark.slow  # two real ranks (~20 s to launch); sharding's parts and a distributed run's app pages are tested by default
def test_sharded_tokens_equal_plain_and_single_process(two_ranks):
    e = Engine.open(EngineParams(demo=True, drafter="mtp", num_draft_tokens=2))
    p = e.encode(PROMPT)
    single = tokens_of(e.plain(p, MAX_TOKENS))
    for out in two_ranks:
        assert out["size"] == 2
        assert out["plain"] == single, f"rank {out['rank']}: sharded plain decoding left the single-process tokens"
        assert out["spec"] == out["plain"], f"rank {out['rank']}: greedy speculative != plain"


def _demo_layers() -> int:
    from specscope.engine_adapter.model.demo_model import default_demo_path

    return json.loads((default_demo_path() / "config.json").read_text())["text_config"]["num_hidden_layers"]


@pytest.mark.slow  # two real ranks (~20 s to launch); sharding's parts and a distributed run's app pages are tested by default
def test_breakdown_has_communication_and_per_rank_columns(two_ranks):
    bd = two_ranks[0]["breakdown"]
    assert bd["distributed"]["ranks"] == 2 and bd["distributed"]["backend"] == "ring"
    for phase, positions in (("decode", 1), ("verify", 3)):
        f = bd[phase]
        assert f["positions"] == positions
        assert f["blocks"]["communication"] > 0
        assert "communication" in f["skip_estimates"]
        assert set(f["communication_split"]) == {"wait_ms", "transfer_ms"}
        # one all-sum per attention or linear-attention layer and one per MoE layer, one all-gather of the
        # vocabulary slices (the random demo: 2 x 8 layers; the trained one: 2 x 4)
        assert f["collectives"]["calls"] == {"all_sum": 2 * _demo_layers(), "all_gather": 1}
        per = f["per_rank"]
        assert len(per["whole_ms"]) == 2 and len(per["blocks"]["communication"]) == 2
        assert per["whole_ms"][0] == pytest.approx(f["whole_ms"])
        assert "unclassified" not in f["blocks"], "the vocabulary-sharded head must stay the output head"
        assert f["uncalled_blocks"] == []
    assert "communication" in bd["ratios"]
    assert "Communication" in bd["labels"]["communication"]
    # both ranks hold the same per-rank table (every rank's figures reach every rank)
    assert two_ranks[1]["breakdown"]["decode"]["per_rank"]["whole_ms"] == pytest.approx(bd["decode"]["per_rank"]["whole_ms"])


@pytest.mark.slow  # two real ranks (~20 s to launch); sharding's parts and a distributed run's app pages are tested by default
def test_run_facts_say_how_it_was_distributed(two_ranks):
    facts = two_ranks[0]["facts"]
    assert facts["ranks"] == 2 and facts["drafting"] == "replicated on every rank" and len(facts["hosts"]) == 2
    assert two_ranks[0]["describe"] == facts


class FakeGroup:
    def __init__(self, n, rank=0):
        self.n, self.r = n, rank

    def size(self):
        return self.n

    def rank(self):
        return self.r


def test_three_ranks_cannot_shard_the_demo():
    from specscope.engine_adapter.model.demo_model import demo_model_path
    from specscope.engine_adapter.distributed.engine import load_sharded

    with pytest.raises(SpecscopeError) as exc:
        load_sharded(str(demo_model_path("hybrid")), FakeGroup(3))
    msg = str(exc.value)
    assert "cannot be sharded over 3 ranks" in msg
    for what in ("vocab_size = 4096", "num_attention_heads = 8", "num_key_value_heads = 2", "moe_intermediate_size = 256"):
        assert what in msg


def test_shard_problems():
    from specscope.engine_adapter.distributed.engine import shard_problems

    cfg = {"vocab_size": 4096, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
           "linear_num_key_heads": 4, "linear_num_value_heads": 8, "linear_value_head_dim": 64,
           "num_experts": 16, "moe_intermediate_size": 256, "shared_expert_intermediate_size": 512}
    assert shard_problems(cfg, 1) == [] and shard_problems(cfg, 2) == [] and shard_problems(cfg, 4) == []
    assert shard_problems(cfg, 3)
    assert any("quantization group" in p for p in shard_problems(cfg, 8, group_size=64))  # 256 / 8 = 32 columns
