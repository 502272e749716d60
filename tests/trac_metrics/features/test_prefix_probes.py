"""The prefix-probe scores (trac_metrics.features.prefix_probes, docs/method.md#prefix-probes): answer convergence,
prefix agreement and its likelihood-weighted form on hand-made records, each equal to the formula written out here
with the agreements stated by hand; what the evidence and the TrAC + prefix probes head read of them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features.evidence import question_evidence
from trac_metrics.features.prefix_probes import (
    answer_convergence,
    prefix_agreement,
    prefix_agreements,
    weighted_prefix_agreement,
)
from trac_metrics.methods import get
from trac_metrics.methods.builtin import PREFIX_PROBE_SCORES
from trac_metrics.records import ProbeRecord

FRACTIONS = (0.2, 0.4, 0.6, 0.8)


def probe(fraction: float, answer: str | None, logprobs: list[float]) -> ProbeRecord:
    """A prefix probe stating ``answer`` with one logprob per answer token (L = len(logprobs), 0 without answer)."""
    n_tokens = len(logprobs) + 1  # + the closing brace
    return ProbeRecord(
        variant="prefix",
        appended_text="\n\nThe final answer is \\boxed{",
        text=f"{answer or ''}}}",
        answer=answer,
        token_ids=np.arange(n_tokens),
        token_logprobs=np.asarray([*logprobs, -0.01]),
        top_logprobs=np.full((n_tokens, 5), -5.0),
        answer_token_count=len(logprobs) if answer is not None else 0,
        finish_reason="stop",
        num_prompt_tokens=80,
        num_cached_tokens=64,
        context="prefix",
        context_tokens=int(fraction * 40),
        seconds=0.001,
        fraction=fraction,
        trace_tokens=int(fraction * 40),
    )


# (answers of the probes at FRACTIONS, their agreement with a = "42" written out by hand)
CASES = [
    (["41", "42", "7", "42.0"], [0, 1, 0, 1]),  # 42.0 ≡ 42: converged at 0.8
    (["42", "42", "42", "42"], [1, 1, 1, 1]),  # settled from the first probe
    (["42", "41", "42", "42"], [1, 0, 1, 1]),  # a relapse: converged only from 0.6
    (["42", "42", "42", "41"], [1, 1, 1, 0]),  # the last probe disagrees: never converged
    ([None, "x", "42", None], [0, 0, 1, 0]),  # a probe without an answer states nothing
]
LOGPROBS = ([-0.5, -0.1], [-0.2], [-1.0, -0.3, -0.2], [-0.05])


def probes_of(answers: list[str | None]) -> list[ProbeRecord]:
    return [probe(f, answer, lps) for f, answer, lps in zip(FRACTIONS, answers, LOGPROBS, strict=True)]


def expected_convergence(agrees: list[int]) -> float:
    """The first fraction whose probe and every later one agree, else 1."""
    for index, fraction in enumerate(FRACTIONS):
        if all(agrees[index:]):
            return fraction
    return 1.0


@pytest.mark.parametrize(("answers", "agrees"), CASES)
def test_each_score_is_its_formula_on_hand_made_probes(answers, agrees):
    probes = probes_of(answers)
    assert prefix_agreements("42", probes, "math").tolist() == agrees
    assert answer_convergence("42", probes, "math") == expected_convergence(agrees)
    assert prefix_agreement("42", probes, "math") == pytest.approx(sum(agrees) / 4)
    likelihoods = [math.exp(sum(lps) / len(lps)) for lps in LOGPROBS]
    expected = sum(agree * likelihood for agree, likelihood in zip(agrees, likelihoods, strict=True)) / 4
    assert weighted_prefix_agreement("42", probes, "math") == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("answer", [None, "", "  "])
def test_without_a_final_answer_every_score_is_nan(answer):
    probes = probes_of(["42", "42", "42", "42"])
    for score in (answer_convergence, prefix_agreement, weighted_prefix_agreement):
        assert math.isnan(score(answer, probes, "math"))


def test_the_evidence_stores_the_scores_oriented_and_the_head_row_appends_them():
    records = synthetic_question(np.random.default_rng(0), 0, True, k=3)
    primary = dataclasses.replace(records[0], answer="42", prefix_probes=probes_of(["41", "42", "7", "42.0"]))
    evidence = question_evidence([primary, *records[1:]])
    scores = evidence["baselines"]
    assert scores["answer_convergence"] == -0.8  # a later convergence is less confident
    assert scores["prefix_agreement"] == 0.5
    assert scores["prefix_agreement_weighted"] == pytest.approx((math.exp(-0.2) + math.exp(-0.05)) / 4, rel=1e-6)
    row = get("trac_prefix").features(evidence)
    assert row == [
        *evidence["features"]["pce"],
        *evidence["features"]["tup"],
        *(scores[n] for n in PREFIX_PROBE_SCORES),
    ]


def test_records_without_prefix_probes_have_no_such_score_and_no_head_row():
    evidence = question_evidence(synthetic_question(np.random.default_rng(1), 0, True, k=3))
    assert not set(PREFIX_PROBE_SCORES) & set(evidence["baselines"])
    assert get("trac_prefix").features(evidence) is None
