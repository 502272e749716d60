"""The probe's cache share (docs/method.md#probe-cache-share): Σ cached / Σ prompt tokens of the trace probes that
reported a count, the counts carried through JSON, and the warning below 50 %."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from record_factory import synthetic_question, with_every_input

from trac_metrics.features.cache_share import (
    LOW_SHARE,
    ProbeCacheCounts,
    format_share,
    low_share_warning,
    probe_cache_counts,
)


def _with_trace_counts(records, counts):
    """The records with their trace probes' (cached, prompt) counts replaced; None drops the trace probe."""
    changed = []
    for record, count in zip(records, counts, strict=True):
        probes = dict(record.probes)
        if count is None:
            del probes["trace"]
        else:
            cached, prompt = count
            probes["trace"] = dataclasses.replace(
                probes["trace"], num_cached_tokens=cached, num_prompt_tokens=prompt, context_tokens=prompt // 2
            )
        changed.append(dataclasses.replace(record, probes=probes))
    return changed


def test_the_share_is_summed_tokens_over_the_trace_probes_that_reported_a_count():
    records = synthetic_question(np.random.default_rng(0), doc_id=1, correct=True, k=4)
    records = _with_trace_counts(records, [(96, 100), (0, 300), (None, 50), None])
    counts = probe_cache_counts(records)
    # token-weighted (96 / 400), not the mean of the per-probe shares ((0.96 + 0) / 2)
    assert counts == ProbeCacheCounts(cached_tokens=96, prompt_tokens=400, reported=2, unreported=1)
    assert counts.share == pytest.approx(0.24)
    assert format_share(counts) == "24.0 %"


def test_only_the_trace_probe_counts_not_the_ablation_or_prefix_probes():
    rng = np.random.default_rng(1)
    records = with_every_input(synthetic_question(rng, doc_id=2, correct=True, k=2), rng)
    primary = records[0]
    probes = {
        name: dataclasses.replace(probe, num_cached_tokens=0) if name != "trace" else probe
        for name, probe in primary.probes.items()
    }
    prefix = [dataclasses.replace(probe, num_cached_tokens=0) for probe in primary.prefix_probes]
    records[0] = dataclasses.replace(primary, probes=probes, prefix_probes=prefix)
    counts = probe_cache_counts(records)
    assert counts.reported == 2
    assert counts.cached_tokens == sum(record.probes["trace"].num_cached_tokens for record in records) == 2 * 96


def test_no_reported_count_gives_nan_and_no_warning():
    records = synthetic_question(np.random.default_rng(2), doc_id=3, correct=False, k=2)
    counts = probe_cache_counts(_with_trace_counts(records, [(None, 80), (None, 90)]))
    assert math.isnan(counts.share) and counts.unreported == 2
    assert format_share(counts) == "not reported"
    assert low_share_warning("task t", counts) is None
    assert math.isnan(probe_cache_counts([]).share)


def test_counts_add_up_over_questions_and_survive_json():
    rng = np.random.default_rng(3)
    questions = [synthetic_question(rng, doc_id, True, k=3) for doc_id in range(3)]
    per_question = [probe_cache_counts(records) for records in questions]
    total = sum(per_question, ProbeCacheCounts())
    assert total == probe_cache_counts([record for records in questions for record in records])
    carried = [ProbeCacheCounts.from_dict(json.loads(json.dumps(counts.to_dict()))) for counts in per_question]
    assert sum(carried, ProbeCacheCounts()) == total


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"cached_tokens": 1, "prompt_tokens": 2, "reported": 1}, "exactly the fields"),
        ({"cached_tokens": -1, "prompt_tokens": 2, "reported": 1, "unreported": 0}, "'cached_tokens'"),
        ({"cached_tokens": 1, "prompt_tokens": 2.0, "reported": 1, "unreported": 0}, "'prompt_tokens'"),
        ({"cached_tokens": 1, "prompt_tokens": 2, "reported": True, "unreported": 0}, "'reported'"),
        ([1, 2, 1, 0], "exactly the fields"),
    ],
)
def test_malformed_counts_are_refused_naming_the_field(payload, named):
    with pytest.raises(ValueError, match=named):
        ProbeCacheCounts.from_dict(payload)


def test_a_share_below_half_is_warned_about_with_its_likely_causes():
    low = ProbeCacheCounts(cached_tokens=49, prompt_tokens=100, reported=2)
    message = low_share_warning("task trac_demo", low)
    assert message is not None and "task trac_demo" in message and "49.0 %" in message
    for cause in ("enable_prefix_caching=False", "block size", "hybrid", "teacher_forced"):
        assert cause in message
    at_threshold = ProbeCacheCounts(cached_tokens=50, prompt_tokens=100, reported=2)
    assert at_threshold.share == LOW_SHARE and low_share_warning("task trac_demo", at_threshold) is None
