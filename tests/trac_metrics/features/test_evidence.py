"""Per-question evidence (trac_metrics.features.evidence, docs/architecture.md#evidence): labels by answer equivalence
(or by the labeller the records name, docs/method.md#labels), whole questions only, features equal to the feature
functions."""

from __future__ import annotations

import dataclasses

import math_verify
import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features import pce_features, tup_features
from trac_metrics.features.baselines import mean_logprob
from trac_metrics.features.evidence import EvidenceOptions, question_evidence, reasoning_span


def test_labels_use_answer_equivalence_not_string_equality():
    rng = np.random.default_rng(0)
    records = synthetic_question(rng, 0, correct=True, k=1)
    record = records[0]
    half = type(record)(**{**record.__dict__, "answer": "\\frac{1}{2}", "reference": "0.5"})
    assert question_evidence([half])["correct"] == 1


def test_the_labeller_the_records_name_labels_the_question_unless_the_options_relabel():
    # Math-Verify rounds floats to 6 places; trac-eval's checker reads the written digits (docs/method.md#labels)
    response = r"Dividing, we get $\boxed{0.3333334}$."
    records = [
        dataclasses.replace(record, text=response, answer="0.3333334", reference=r"\frac{1}{3}")
        for record in synthetic_question(np.random.default_rng(3), 0, correct=True, k=2)
    ]
    built_in = question_evidence(records)
    assert (built_in["correct"], built_in["labeller"]) == (0, "trac")
    math_verify = [dataclasses.replace(record, labeller="math-verify") for record in records]
    labelled = question_evidence(math_verify)
    assert (labelled["correct"], labelled["majority_correct"], labelled["labeller"]) == (1, 1, "math-verify")
    relabelled = question_evidence(math_verify, EvidenceOptions(equivalence="math-verify"))
    assert relabelled["correct"] == 1
    with pytest.raises(ValueError, match="mixes labellers"):
        question_evidence([math_verify[0], records[1]])


def test_math_verify_labels_the_whole_response_as_lm_eval_does():
    # lm-eval's Math-Verify-labelled tasks: verify(parse(gold), parse(response)). A response cut off in its last box
    # has no answer for trac-eval's checker; Math-Verify's own extraction reads the earlier box
    (record,) = synthetic_question(np.random.default_rng(4), 0, correct=True, k=1)
    response = r"First $\boxed{3}$. Correcting this, the answer is $\boxed{"
    labelled = dataclasses.replace(record, text=response, answer=None, reference="3", labeller="math-verify")
    assert math_verify.verify(math_verify.parse("$3$"), math_verify.parse(response))
    assert question_evidence([labelled])["correct"] == 1
    assert question_evidence([dataclasses.replace(labelled, labeller=None)])["correct"] == 0


@pytest.mark.parametrize("labeller", [None, "math-verify"])
def test_a_list_reference_is_matched_by_any_alias_and_never_by_its_text(labeller):
    # a task whose target lists the acceptable answers (triviaqa, nq_open): the record stores the aliases
    (record,) = synthetic_question(np.random.default_rng(5), 0, correct=True, k=1)
    aliases = ["12", "twelve", "1/2"]
    for answer, expected in [("\\frac{1}{2}", 1), ("12.0", 1), ("13", 0), ("['12', 'twelve', '1/2']", 0)]:
        text = f"So the answer is $\\boxed{{{answer}}}$."
        stored = dataclasses.replace(record, text=text, answer=answer, reference=aliases, labeller=labeller)
        assert stored.reference == tuple(aliases)
        evidence = question_evidence([stored])
        assert evidence["correct"] == expected, (answer, labeller)
        assert evidence["reference"] == aliases
        read_back = type(record).from_dict(stored.to_dict())
        assert read_back.reference == tuple(aliases) and question_evidence([read_back])["correct"] == expected
    text_record = dataclasses.replace(record, answer_kind="text", answer="Twelve", reference=aliases)
    assert question_evidence([text_record])["correct"] == 1


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
    reasoning = probe.context_tokens  # docs/method.md#tup-span: TUP(r), r what the probe read
    assert 0 < reasoning < primary.num_tokens
    np.testing.assert_allclose(
        evidence["features"]["tup"],
        tup_features(primary.token_logprobs[:reasoning].astype(float), primary.topk_entropy[:reasoning].astype(float)),
    )
    np.testing.assert_allclose(
        evidence["features"]["tup_generation"],
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


def test_tup_profiles_the_span_in_force_and_keeps_the_whole_generation_beside():
    """docs/method.md#tup-span: the reasoning r the probe read by default, the whole generation on request; a record
    without the probe's count falls back to its reasoning tokens, then to every token."""
    records = synthetic_question(np.random.default_rng(4), 1, correct=True, k=2)
    primary = records[0]
    whole = question_evidence(records, EvidenceOptions(tup_span="generation"))["features"]
    assert whole["tup"] == whole["tup_generation"]
    assert question_evidence(records)["features"]["tup"] != whole["tup"]
    assert reasoning_span(primary) == primary.probes["trace"].context_tokens
    legacy = dataclasses.replace(
        primary, probes={"trace": dataclasses.replace(primary.probes["trace"], context="after_answer")}
    )
    assert reasoning_span(legacy) == primary.num_tokens
    assert reasoning_span(dataclasses.replace(legacy, reasoning_tokens=3)) == 3
    with pytest.raises(ValueError, match="tup_span must be one of"):
        EvidenceOptions(tup_span="answer")
