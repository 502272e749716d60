"""benchmarks/frontend_cost.py: the workload is deterministic and what a GPU engine and vLLM's server would send
(real token ids, the sampled token in or outside its top k, bodies the served client accepts), every variant runs
through vLLM's own classes and writes readable records, the rounds rotate, and ratios are taken within each round;
the last line printed is one JSON object. No speed is asserted here (docs/architecture.md#tests-and-benchmarks)."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest
from testenv import REPO

from trac_metrics.records import iter_records

PATH = REPO / "benchmarks" / "frontend_cost.py"
SPEC = importlib.util.spec_from_file_location("frontend_cost", PATH)
frontend_cost = sys.modules.get("frontend_cost") or importlib.util.module_from_spec(SPEC)
if "frontend_cost" not in sys.modules:
    sys.modules["frontend_cost"] = frontend_cost  # dataclasses look their module up there
    SPEC.loader.exec_module(frontend_cost)

pytest.importorskip("vllm")


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(tiny_model))


@pytest.fixture(scope="module")
def workload(tokenizer):
    return frontend_cost.build_workload(tokenizer, sequences=8, tokens=40, top_k=5, seed=3)


def test_the_workload_is_deterministic_and_engine_like(tokenizer, workload):
    again = frontend_cost.build_workload(tokenizer, sequences=8, tokens=40, top_k=5, seed=3)
    assert again.steps_logprobs == workload.steps_logprobs and again.bodies_logprobs == workload.bodies_logprobs
    assert workload.tokens == sum(len(one.token_ids) for one in workload.sequences)
    for index, one in enumerate(workload.sequences):
        assert 20 <= len(one.token_ids) <= 60 and one.top_ids.shape == (len(one.token_ids), 6)
        assert (one.top_ids[:, 0] == one.token_ids).all()  # the sampled token first, as vLLM's sampler puts it
        assert all(len(set(row[1:])) == 5 for row in one.top_ids.tolist())  # distinct top-k ids
        top = one.top_logprobs[:, 1:]
        assert (np.diff(top, axis=1) <= 0).all() and (one.top_logprobs <= 0).all()
        inside = (one.top_ids[:, 1:] == one.token_ids[:, None]).any(axis=1)
        assert (one.ranks[inside] <= 5).all() and (one.ranks[~inside] > 5).all()
        ends_at_limit = index % frontend_cost.LENGTH_EVERY == frontend_cost.LENGTH_EVERY - 1
        assert (one.token_ids[-1] == tokenizer.eos_token_id) != ends_at_limit
    assert len(workload.steps_logprobs) == max(len(one.token_ids) for one in workload.sequences)


def test_the_served_bodies_are_what_the_served_client_accepts(tokenizer, workload):
    from trac_tasks.engines.completions_client import _json_body
    from trac_tasks.engines.served_backend import _only_choice, _positions

    for one, raw in zip(workload.sequences, workload.bodies_logprobs, strict=True):
        positions = _positions(_only_choice(_json_body(raw, "url", "generation")), 5, len(tokenizer))
        assert positions.token_ids == one.token_ids.tolist()
        np.testing.assert_array_equal(positions.chosen, one.top_logprobs[:, 0].astype(np.float64))
    assert "logprobs" in json.loads(workload.bodies_plain[0])["choices"][0]


def test_every_variant_runs_and_writes_readable_records(workload, tmp_path):
    front_end = frontend_cost.FrontEnd(workload, tmp_path)
    for variant in frontend_cost.variants():
        run = front_end.run(variant, "round1")
        assert run.tokens == workload.tokens and set(run.seconds) == set(variant.stages)
        records = [
            record for path in (tmp_path / "round1" / variant.name).glob("*.jsonl") for record in iter_records(path)
        ]
        assert len(records) == (0 if variant.summaries is None else len(workload.sequences)), variant.name
        if variant.name == "fast":
            assert run.text_replay > 0
    fast = {r.doc_id: r for p in (tmp_path / "round1" / "fast").glob("*.jsonl") for r in iter_records(p)}
    before = {r.doc_id: r for p in (tmp_path / "round1" / "before").glob("*.jsonl") for r in iter_records(p)}
    served = {r.doc_id: r for p in (tmp_path / "round1" / "served_fast").glob("*.jsonl") for r in iter_records(p)}
    for doc_id, record in fast.items():  # the same response, the same record, whichever path captured it
        for other in (before[doc_id], served[doc_id]):
            assert record.to_dict() == other.to_dict()


def test_rounds_rotate_and_ratios_are_taken_within_each_round():
    calls = []

    def run(name, round_name):
        calls.append((name, round_name))
        plain = {"round1": 10.0, "round2": 20.0}.get(round_name, 1.0)
        seconds = dict.fromkeys(frontend_cost.VLLM_STAGES, 0.0)
        seconds["vllm"] = plain if name == "plain" else 1.5 * plain
        seconds["ipc"] = 1.0
        return frontend_cost.Run(seconds, 1_000_000)

    _, rounds = frontend_cost.measure(run, ["plain", "fast", "before"], 2)
    assert [one for one, _ in calls] == [
        "plain",
        "fast",
        "before",
        "plain",
        "fast",
        "before",
        "fast",
        "before",
        "plain",
    ]
    assert [list(one) for one in rounds] == [["plain", "fast", "before"], ["fast", "before", "plain"]]
    result = frontend_cost.figures(rounds)
    assert result["ratios"]["fast_vs_plain"]["per_round"] == [1.5, 1.5]  # although plain doubled in round 2
    assert result["ratios"]["fast_vs_plain_with_ipc"]["per_round"] == [16 / 11, 31 / 21]
    assert result["variants"]["plain"]["total_us_per_token"]["median"] == 15.0
    assert result["variants"]["plain"]["tokens_per_second_per_core"] == 1e6 / 15.0


def test_the_command_prints_one_json_line_last(capsys):
    frontend_cost.main(["--sequences", "2", "--tokens", "8", "--rounds", "1", "--variants", "plain,fast,served_fast"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(last)
    assert set(result["variants"]) == {"plain", "fast", "served_fast"} and "fast_vs_plain" in result["ratios"]
    assert (
        result["served_body_bytes_per_token"]["served_logprobs"] > result["served_body_bytes_per_token"]["served_plain"]
    )


def test_an_unknown_variant_is_refused():
    with pytest.raises(SystemExit):
        frontend_cost.main(["--variants", "plain,turbo"])
