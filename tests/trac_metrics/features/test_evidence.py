"""Per-question evidence (trac_metrics.features.evidence, docs/architecture.md#evidence): labels by answer equivalence,
whole questions only, features equal to the feature functions."""

from __future__ import annotations

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features import pce_features, tup_features
from trac_metrics.features.baselines import mean_logprob
from trac_metrics.features.evidence import question_evidence


def test_labels_use_answer_equivalence_not_string_equality():
    rng = np.random.default_rng(0)
    records = synthetic_question(rng, 0, correct=True, k=1)
    record = records[0]
    half = type(record)(**{**record.__dict__, "answer": "\\frac{1}{2}", "reference": "0.5"})
    assert question_evidence([half])["correct"] == 1


def test_evidence_rejects_mixed_or_incomplete_questions():
    rng = np.random.default_rng(1)
    first, second = synthetic_question(rng, 0, True), synthetic_question(rng, 1, False)
    with pytest.raises(ValueError, match="several questions"):
        question_evidence([first[0], second[1]])
    with pytest.raises(ValueError, match="repeats \\[0, 2\\]"):
        question_evidence([first[0], first[2]])
    no_reference = type(first[0])(**{**first[0].__dict__, "reference": None})
    with pytest.raises(ValueError, match="no reference answer"):
        question_evidence([no_reference])


def test_evidence_features_match_the_feature_functions():
    rng = np.random.default_rng(2)
    records = synthetic_question(rng, 5, correct=False, k=3)
    evidence = question_evidence(records)
    primary = records[0]
    probe = primary.probes["trace"]
    np.testing.assert_allclose(
        evidence["features"]["tup"],
        tup_features(primary.token_logprobs.astype(float), primary.topk_entropy.astype(float)),
    )
    np.testing.assert_allclose(
        evidence["features"]["pce"],
        pce_features(primary.answer, probe.answer, probe.answer_logprobs, probe.first_token_logprob),
        equal_nan=True,
    )
    assert evidence["baselines"]["mean_logprob"] == pytest.approx(mean_logprob(primary.token_logprobs))
    assert evidence["num_samples"] == 3 and set(evidence["features"]["consensus"]) == {
        "q_K",
        "h_K",
        "vote_margin",
        "q_primary",
    }
