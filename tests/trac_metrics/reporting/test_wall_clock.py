"""Measured latency (docs/method.md#measured-latency): a method waits for the latest output it reads, summed over
questions and divided by the primary generation's own wait; runs without arrival times give NaN."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.methods import get
from trac_metrics.reporting.runs import PairRun
from trac_metrics.reporting.wall_clock import measured_latency, question_wall_clock


def timed(question, generations, outputs):
    """``question``'s records with the given arrival times: one per response, ``outputs`` on the primary."""
    timed_records = []
    for record, arrived in zip(question, generations, strict=True):
        timing = {**record.timing, "wall_generation": arrived}
        if record.repeat == 0:
            timing.update({f"wall_{key}": value for key, value in outputs.items()})
        timed_records.append(dataclasses.replace(record, timing=timing))
    return timed_records


def pair(questions, k: int = 4) -> PairRun:
    evidences = tuple({"doc_id": i, "num_samples": k} for i in range(max(len(questions), 1)))
    return PairRun("m", "t", {}, evidences, wall_clock=tuple(questions))


def test_each_method_waits_for_the_latest_output_it_reads():
    rng = np.random.default_rng(0)
    first = question_wall_clock(
        timed(synthetic_question(rng, 0, True, k=4), [2.0, 5.0, 3.0, 8.0], {"probe_trace": 2.5})
    )
    second = question_wall_clock(
        timed(synthetic_question(rng, 1, False, k=4), [4.0, 4.0, 6.0, 4.0], {"probe_trace": 4.5, "p_true": 7.0})
    )
    run = pair([first, second])
    assert run.measured_latency("mean_logprob") == 1.0
    assert run.measured_latency("trac") == pytest.approx((2.5 + 4.5) / (2.0 + 4.0))
    assert run.measured_latency("sc_modal") == pytest.approx((8.0 + 6.0) / 6.0)  # all K
    assert run.measured_latency("sc2_modal") == pytest.approx((5.0 + 4.0) / 6.0)  # the first two
    assert run.measured_latency("cf") == pytest.approx((8.0 + 6.0) / 6.0)  # K and the probe: the K come later
    assert run.measured_latency("p_true") == pytest.approx(7.0 / 4.0)  # only the question that has P(True)


def test_the_responses_are_read_in_repeat_order_whatever_the_file_order():
    rng = np.random.default_rng(1)
    records = timed(synthetic_question(rng, 0, True, k=3), [1.0, 9.0, 2.0], {"probe_trace": 1.5})
    wall_clock = question_wall_clock(list(reversed(records)))
    assert wall_clock.generations == (1.0, 9.0, 2.0) and dict(wall_clock.outputs) == {"probe_trace": 1.5}


def test_records_without_arrival_times_give_nan_not_a_number_from_other_timings():
    rng = np.random.default_rng(2)
    question = synthetic_question(rng, 0, True, k=2)
    assert question_wall_clock(question) is None
    half = timed(question, [1.0, 2.0], {})
    assert question_wall_clock([half[0], question[1]]) is None  # one response without: the question has none
    assert math.isnan(pair([]).measured_latency("trac"))
    assert math.isnan(measured_latency([question_wall_clock(half)], get("trac").cost, 2))  # no probe arrival


def test_stored_arrival_times_reach_the_pair_through_the_records(tmp_path):
    from trac_metrics.records import RecordWriter
    from trac_metrics.reporting.runs import load_pairs

    rng = np.random.default_rng(3)
    writer = RecordWriter(tmp_path / "trac_records" / "t.2026-01-01T00-00-00.jsonl")
    for doc_id in range(6):
        writer.write_batch(
            timed(synthetic_question(rng, doc_id, doc_id % 2 == 0, k=2), [1.0, 3.0], {"probe_trace": 2.0})
        )
    (run,) = load_pairs([tmp_path], jobs=1)
    assert len(run.wall_clock) == 6
    assert run.measured_latency("trac") == pytest.approx(2.0) and run.measured_latency("sc_modal") == pytest.approx(3.0)
