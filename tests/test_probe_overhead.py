"""benchmarks/probe_overhead.py without an engine: the rounds (warm-up not counted, rotated order), the wall ratios'
median and spread, the token ratios from the engine's counters, and ratios left out when an engine lacks a phase."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "probe_overhead.py"
SPEC = importlib.util.spec_from_file_location("probe_overhead", PATH)
probe_overhead = importlib.util.module_from_spec(SPEC)
sys.modules["probe_overhead"] = probe_overhead  # dataclasses look their module up there
SPEC.loader.exec_module(probe_overhead)

SECONDS = {"plain": 10.0, "capture": 11.0, "trac": 12.0, "probes_after": 12.5, "cache_off": 13.0}
TOKENS = {"plain": 1000, "capture": 1000, "trac": 1100, "probes_after": 1100, "cache_off": 1600}  # computed
GENERATED = {"plain": 100, "capture": 100, "trac": 120, "probes_after": 120, "cache_off": 120}


class FakeEngine:
    """Seconds and tokens per phase kind; call number ``slow_call`` (counting from 1) is twice as slow, as
    under a burst of background load."""

    def __init__(self, kinds: tuple[str, ...] = probe_overhead.LONG_KINDS, slow_call: int = 0) -> None:
        self.kinds = kinds
        self.slow_call = slow_call
        self.calls: list[tuple[str, str]] = []

    def run_phase(self, kind, workload, records_dir):
        self.calls.append((kind + workload.suffix, str(records_dir)))
        slow = 2.0 if len(self.calls) == self.slow_call else 1.0
        tokens = probe_overhead.TokenCounts(
            prompt=TOKENS[kind] + 50, computed_prompt=TOKENS[kind] - GENERATED[kind], generated=GENERATED[kind]
        )
        return probe_overhead.PhaseCount(SECONDS[kind] * slow, tokens)

    def describe(self):
        return {"engine": "fake"}


def _phases(engine):
    workloads = [
        probe_overhead.Workload("", [], [], probe_overhead.LONG_KINDS),
        probe_overhead.Workload("_short", [], [], probe_overhead.SHORT_KINDS),
    ]
    return probe_overhead.phases_of(engine, workloads)


def test_warm_up_round_then_rotated_rounds(tmp_path):
    engine = FakeEngine()
    phases = _phases(engine)
    warmup, rounds = probe_overhead.measure(engine, phases, 3, tmp_path)
    names = [phase.name for phase in phases]
    assert warmup.order == names
    assert [one.order for one in rounds] == [names, names[1:] + names[:1], names[2:] + names[:2]]
    assert len(engine.calls) == 4 * len(names)
    assert engine.calls[0] == ("plain", str(tmp_path / "warmup" / "plain"))
    assert engine.calls[len(names)] == ("plain", str(tmp_path / "round1" / "plain"))


def test_wall_ratios_are_medians_over_rounds_and_a_slow_warm_up_does_not_count(tmp_path):
    engine = FakeEngine(slow_call=2)  # the warm-up capture
    _, rounds = probe_overhead.measure(engine, _phases(engine), 3, tmp_path)
    ratios = probe_overhead.ratios(rounds)
    assert ratios["probe_overhead_ratio"] == {
        "median": 12 / 11,
        "min": 12 / 11,
        "max": 12 / 11,
        "per_round": [12 / 11] * 3,
    }
    assert ratios["probe_overhead_token_ratio"] == pytest.approx(1100 / 1000)
    assert ratios["cache_off_token_ratio"] == pytest.approx(1600 / 1000)
    assert ratios["capture_overhead_token_ratio_short"] == 1.0
    assert ratios["cache_off_decoded_token_ratio"] == pytest.approx(1.2)


def test_one_slow_round_moves_the_spread_not_the_median(tmp_path):
    engine = FakeEngine()
    phases = _phases(engine)
    engine.slow_call = len(phases) + 3  # round 1's trac phase
    _, rounds = probe_overhead.measure(engine, phases, 3, tmp_path)
    wall = probe_overhead.ratios(rounds)["probe_overhead_ratio"]
    assert wall["per_round"] == [24 / 11, 12 / 11, 12 / 11]
    assert (wall["median"], wall["min"], wall["max"]) == (12 / 11, 12 / 11, 24 / 11)
    assert probe_overhead.ratios(rounds)["probe_overhead_token_ratio"] == pytest.approx(1.1)


def test_ratios_of_phases_an_engine_does_not_run_are_left_out(tmp_path):
    engine = FakeEngine(kinds=("plain", "capture", "trac"))
    _, rounds = probe_overhead.measure(engine, _phases(engine), 1, tmp_path)
    assert set(probe_overhead.ratio_names(rounds)) == {
        "probe_overhead_ratio",
        "probe_overhead_ratio_short",
        "capture_overhead_ratio",
        "capture_overhead_ratio_short",
    }


def test_token_counts_sum_vllm_counters_over_engines():
    samples = [
        ("vllm:prompt_tokens", {"engine": "0"}, 300.0),
        ("vllm:prompt_tokens", {"engine": "1"}, 100.0),
        ("vllm:prompt_tokens_by_source", {"engine": "0", "source": "local_compute"}, 120.0),
        ("vllm:prompt_tokens_by_source", {"engine": "0", "source": "local_cache_hit"}, 180.0),
        ("vllm:prompt_tokens_by_source", {"engine": "1", "source": "local_compute"}, 100.0),
        ("vllm:generation_tokens", {"engine": "0"}, 50.0),
        ("vllm:num_preemptions", {"engine": "0"}, 7.0),
    ]
    counts = probe_overhead.TokenCounts.from_metrics(samples)
    assert counts == probe_overhead.TokenCounts(prompt=400, computed_prompt=220, generated=50)
    assert (counts - probe_overhead.TokenCounts(100, 20, 10)).as_dict() == {
        "prompt": 300,
        "cached_prompt": 100,
        "generated": 40,
        "computed": 240,
    }
