"""The probe's diagnostic row (trac_metrics.features.probe_agreement, docs/method.md#probe-agreement): counts over the
questions whose agreement is defined, NaN where a class is absent, the paper's figures beside, the note for a probe
that read the answer it tests."""

from __future__ import annotations

import math

import pytest

from trac_metrics.features.probe_agreement import (
    LEGACY_PROBE_NOTE,
    ProbeAgreement,
    format_agreement,
    probe_agreement,
)


def _evidence(correct: int, agree: float | None, context: str | None = "reasoning") -> dict:
    return {"correct": correct, "agree": agree, "probe_context": context}


def test_shares_count_only_questions_with_a_defined_agreement():
    evidences = [
        _evidence(1, 1.0),
        _evidence(1, 1.0),
        _evidence(1, 0.0),
        _evidence(0, 1.0),
        _evidence(0, 0.0),
        _evidence(0, 0.0),
        _evidence(0, 0.0),
        _evidence(0, math.nan),
        _evidence(1, None, None),
    ]
    agreement = probe_agreement(evidences)
    assert agreement == ProbeAgreement(agree_correct=2, correct=3, agree_wrong=1, wrong=4, undefined=2)
    assert agreement.share_correct == pytest.approx(2 / 3) and agreement.share_wrong == pytest.approx(0.25)
    assert agreement.results() == {"probe_agree_correct": 2 / 3, "probe_agree_wrong": 0.25}
    assert not agreement.uninformative
    line = agreement.line()
    assert line.startswith("probe agreement with the primary answer: 66.7 % of correct (2 of 3), 25.0 % of wrong")
    assert "(paper: 87.6 % / 24.7 %); 2 without both answers" in line and LEGACY_PROBE_NOTE not in line


def test_a_probe_that_agrees_on_everything_is_uninformative_and_an_old_probe_is_named():
    copy = probe_agreement([_evidence(1, 1.0)] * 40 + [_evidence(0, 1.0)] * 30 + [_evidence(0, 0.0, "after_answer")])
    assert copy.uninformative and copy.reads_answer
    assert copy.line().endswith(LEGACY_PROBE_NOTE)


def test_a_class_without_responses_has_no_share():
    agreement = probe_agreement([_evidence(1, 1.0)])
    assert math.isnan(agreement.share_wrong) and not agreement.uninformative
    assert "— of wrong (0 of 0)" in agreement.line()
    assert format_agreement(math.nan) == "—" and format_agreement(0.876) == "87.6 %"
