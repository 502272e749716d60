"""``trac rescore`` (docs/architecture.md#command-line): evidence options, the equivalence override and what a rescore
reports as changed."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from record_factory import synthetic_question
from user_equivalence import never_equivalent

from trac_metrics import answers, selective
from trac_metrics._warnings import TracWarning
from trac_metrics.answers import equivalent, use_equivalence
from trac_metrics.features import tup_features
from trac_metrics.features.evidence import EvidenceOptions, question_evidence, reasoning_span, resolve_equivalence
from trac_metrics.records import RecordWriter, iter_records
from trac_metrics.reporting.rescore import MAIN_METHODS, MAIN_METRICS, changes_to_json, format_changes, rescore
from trac_metrics.reporting.runs import load_pairs

N_QUESTIONS = 60
REWRITTEN = set(range(0, N_QUESTIONS, 3))
"""Questions whose primary answer is stored as ``x = <answer>``: the same answer for the math normalizer (which
drops a single-variable assignment), a different string for the text normalizer."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One (model, task) pair of seeded records, K = 4, with the primary answers of :data:`REWRITTEN` rewritten."""
    folder = tmp_path_factory.mktemp("rescore") / "model"
    writer = RecordWriter(folder / "trac_records" / "task.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(11)
    for doc_id in range(N_QUESTIONS):
        records = synthetic_question(rng, doc_id, rng.random() < 0.5, k=4, signal=0.3, task="task", model="model")
        if doc_id in REWRITTEN:
            records[0] = replace(records[0], answer=f"x = {records[0].answer}")
        writer.write_batch(records)
    return folder


def primaries(folder: Path) -> dict[int, object]:
    return {
        record.doc_id: record
        for path in sorted(folder.rglob("*.jsonl"))
        for record in iter_records(path)
        if record.repeat == 0
    }


def stored_verdict(record) -> int:
    """The label by hand: the factory writes a correct primary as the reference string itself."""
    return int(record.answer.removeprefix("x = ") == record.reference)


def test_default_options_change_nothing(run: Path) -> None:
    (change,) = rescore([run], EvidenceOptions())
    assert change.flips == ()
    assert change.accuracy_before == change.accuracy_after
    expected = np.mean([stored_verdict(record) for record in primaries(run).values()])
    assert change.accuracy_before == pytest.approx(expected)
    for method in MAIN_METHODS:
        for metric in MAIN_METRICS:
            assert change.metrics_before[f"{method}_{metric}"] == change.metrics_after[f"{method}_{metric}"]
            assert change.delta(method, metric) == 0.0
    assert "0 of 60 labels flipped" in format_changes([change], EvidenceOptions())


def test_text_kind_flips_exactly_the_rewritten_correct_answers(run: Path) -> None:
    records = primaries(run)
    expected_flips = sorted(doc_id for doc_id in REWRITTEN if stored_verdict(records[doc_id]))
    assert expected_flips, "the fixture must rewrite some correct answers"
    options = EvidenceOptions(answer_kind="text")
    (change,) = rescore([run], options)
    assert [int(flip.doc_id) for flip in change.flips] == expected_flips
    for flip in change.flips:
        assert (flip.before, flip.after) == (1, 0)
        assert flip.primary_answer == f"x = {flip.reference}"
    after_labels = np.asarray(
        [stored_verdict(record) and doc_id not in REWRITTEN for doc_id, record in sorted(records.items())], dtype=int
    )
    assert change.accuracy_after == pytest.approx(after_labels.mean())
    assert change.accuracy_before - change.accuracy_after == pytest.approx(len(expected_flips) / N_QUESTIONS)
    mean_logprob = [float(np.mean(record.token_logprobs.astype(np.float64))) for _, record in sorted(records.items())]
    assert change.metrics_after["mean_logprob_auroc"] == pytest.approx(selective.auroc(mean_logprob, after_labels))
    assert change.metrics_after["mean_logprob_aurc"] == pytest.approx(selective.aurc(mean_logprob, after_labels))
    text = format_changes([change], options)
    assert f"{len(expected_flips)} of {N_QUESTIONS} labels flipped" in text and "answer_kind=text" in text
    first = change.flips[0]
    assert (
        f"doc {first.doc_id}: answer 'x = {first.reference}' vs reference '{first.reference}': correct → wrong" in text
    )
    payload = changes_to_json([change], options)
    assert payload["changed_options"] == {"answer_kind": "text"}
    assert payload["pairs"][0]["labels_flipped"] == len(expected_flips)


def test_equivalence_override_makes_every_label_wrong(run: Path) -> None:
    records = primaries(run)
    options = EvidenceOptions(equivalence="user_equivalence:never_equivalent")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (change,) = rescore([run], options)
    reasons = {str(item.message) for item in caught if issubclass(item.category, TracWarning)}
    assert any("one class only" in reason for reason in reasons)  # NaN with its reason, never silent
    assert any("AUROC is undefined" in reason for reason in reasons)
    assert [int(flip.doc_id) for flip in change.flips] == sorted(d for d, r in records.items() if stored_verdict(r))
    assert change.accuracy_after == 0.0
    assert "all 60 labels are now 0" in change.note
    assert math.isnan(change.metrics_after["mean_logprob_auroc"])
    assert math.isnan(change.delta("trac", "auroc"))
    assert changes_to_json([change], options)["pairs"][0]["metrics"]["trac"]["auroc"]["after"] is None
    (pair,) = load_pairs([run], options=options)
    assert all(evidence["features"]["pce"][0] == 0.0 for evidence in pair.evidences)  # e uses the override too
    assert all(evidence["features"]["consensus"]["q_K"] == 0.25 for evidence in pair.evidences)  # K singletons


def test_tup_options_change_only_tup_features(run: Path) -> None:
    options = EvidenceOptions(n_bins=4, tail_window=5, low_threshold=-1.0)
    (default,), (changed,) = load_pairs([run]), load_pairs([run], options=options)
    records = primaries(run)
    for old, new in zip(default.evidences, changed.evidences, strict=True):
        record = records[new["doc_id"]]
        span = reasoning_span(record)  # docs/method.md#tup-span: the reasoning r by default
        expected = tup_features(
            record.token_logprobs[:span].astype(np.float64),
            record.topk_entropy[:span].astype(np.float64),
            n_bins=4,
            tail_window=5,
            low_threshold=-1.0,
        )
        assert len(new["features"]["tup"]) == 2 * 4 + 11
        np.testing.assert_array_equal(new["features"]["tup"], expected)
        assert (old["correct"], old["features"]["pce"], old["baselines"]) == (
            new["correct"],
            new["features"]["pce"],
            new["baselines"],
        )
    (change,) = rescore([run], options)
    assert change.flips == ()
    for method in ("pce", "sc_modal", "mean_logprob"):
        assert change.delta(method, "auroc") == 0.0
    assert change.delta("tup", "auroc") != 0.0


def test_default_options_reproduce_the_plain_evidence() -> None:
    rng = np.random.default_rng(3)
    for doc_id in range(5):
        records = synthetic_question(rng, doc_id, doc_id % 2 == 0)
        assert question_evidence(records, EvidenceOptions()) == question_evidence(records)


def test_use_equivalence_overrides_restores_and_does_not_leak_cached_results() -> None:
    assert equivalent("1/2", "0.5") and not equivalent("3", "4")
    with use_equivalence(lambda a, b, kind: True):
        assert equivalent("3", "4")
        with use_equivalence(never_equivalent):
            assert not equivalent("1/2", "0.5")
        assert equivalent("1/2", "4")
        assert answers.answer_classes(["1", "2", "3"]) == [0, 0, 0]
    assert equivalent("1/2", "0.5") and not equivalent("3", "4")  # built-in results, not the overrides'
    with pytest.raises(RuntimeError), use_equivalence(never_equivalent):
        raise RuntimeError
    assert equivalent("1/2", "0.5")
    with pytest.raises(TypeError, match="callable"), use_equivalence("not a function"):
        pass
    with use_equivalence(never_equivalent), pytest.raises(ValueError, match="answer kind"):
        equivalent("a", "a", kind="latex")


def test_resolve_equivalence_forms_and_errors(tmp_path: Path) -> None:
    assert resolve_equivalence("user_equivalence:never_equivalent") is never_equivalent
    checks = tmp_path / "checks.py"
    checks.write_text("def same_length(a, b, kind):\n    return len(a or '') == len(b or '')\n")
    assert resolve_equivalence(f"{checks}:same_length")("12", "34", "math") is True
    for spec, message in [
        ("no_colon", "MODULE:FUNCTION"),
        ("no_such_module_xyz:f", "cannot load"),
        (f"{tmp_path / 'missing.py'}:f", "cannot load"),
        ("math:no_such", "no attribute"),
        ("math:pi", "not callable"),
    ]:
        with pytest.raises(ValueError, match=message):
            resolve_equivalence(spec)


def test_evidence_options_validation_and_round_trip() -> None:
    options = EvidenceOptions(answer_kind="mc", n_bins=3)
    assert options.changes() == {"answer_kind": "mc", "n_bins": 3}
    assert EvidenceOptions().changes() == {}
    assert EvidenceOptions.from_dict(options.to_dict()) == options
    for bad, message in [
        ({"answer_kind": "latex"}, "answer kind"),
        ({"n_bins": 0}, "n_bins"),
        ({"tail_window": 2.5}, "tail_window"),
        ({"low_threshold": math.nan}, "low_threshold"),
        ({"equivalence": "math:no_such"}, "no attribute"),
        ({"re_extract": "yes"}, "re_extract"),
    ]:
        with pytest.raises(ValueError, match=message):
            EvidenceOptions(**bad)
    with pytest.raises(ValueError, match="unknown evidence options"):
        EvidenceOptions.from_dict({"n_bin": 3})


# Stored answers as an older extractor read them (the last box only, a whole sentence), the texts they came from and
# the references: --re-extract reads the texts again with the current extractor (docs/method.md#answer-extraction).
STALE_EXTRACTIONS = [
    (r"Solving, x = \boxed{2} or x = \boxed{-5}.", "-5", "-5, 2"),
    (r"Partial sums \boxed{12} and then \boxed{40}. The final answer is $52$.", "40", "52"),
    ("Final Answer: The largest $n$ is 34.", "The largest $n$ is 34", "34"),
    (r"So the answer is \boxed{7}.", "7", "7"),  # unchanged
]


def _stale_run(folder: Path) -> Path:
    writer = RecordWriter(folder / "trac_records" / "task.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(5)
    for doc_id, (text, stored, reference) in enumerate(STALE_EXTRACTIONS):
        records = synthetic_question(rng, doc_id, True, k=2, task="task", model="model")
        records[0] = replace(records[0], text=text, answer=stored, reference=reference)
        # stored as no answer (e.g. its thinking was still open) though its text holds the primary's box
        records[1] = replace(records[1], text=text, answer=None, reference=reference)
        writer.write_batch(records)
    return folder


def test_re_extract_reads_stored_texts_again_and_keeps_a_stored_none(tmp_path: Path) -> None:
    run = _stale_run(tmp_path / "stale")
    before = [question_evidence(records) for records in _questions(run)]
    after = [question_evidence(records, EvidenceOptions(re_extract=True)) for records in _questions(run)]
    assert [evidence["correct"] for evidence in before] == [0, 0, 0, 1]
    assert [evidence["correct"] for evidence in after] == [1, 1, 1, 1]
    assert [evidence["primary_answer"] for evidence in after] == ["2, -5", "$52$", "34", "7"]
    # the second response stored no answer: it stays None, a singleton class, so the modal share q_K stays 1/2
    assert [evidence["features"]["consensus"]["q_K"] for evidence in after] == [0.5] * len(STALE_EXTRACTIONS)
    (change,) = rescore([run], EvidenceOptions(re_extract=True))
    assert sorted(flip.doc_id for flip in change.flips) == ["0", "1", "2"]
    assert (change.accuracy_before, change.accuracy_after) == (0.25, 1.0)


def _questions(run: Path) -> list[list]:
    by_question: dict[int, list] = {}
    for path in sorted(run.rglob("*.jsonl")):
        for record in iter_records(path):
            by_question.setdefault(record.doc_id, []).append(record)
    return [by_question[doc_id] for doc_id in sorted(by_question)]


# (stored answer, reference, trac-eval's verdict, Math-Verify's verdict): rows of the documented differences
# (docs/method.md#where-the-checker-differs-from-math-verify) and rows where both agree.
MATH_VERIFY_LABELS = [
    ("9 = 4p + q", "4p+q", 0, 1),
    ("0.3333334", r"\frac{1}{3}", 0, 1),
    ("1e3", "1000", 1, 0),
    (r"\frac{1}{2}", "0.5", 1, 1),
    ("(2, 1)", "(1, 2)", 0, 0),
]


def test_math_verify_equivalence_labels_as_math_verify_does(tmp_path: Path) -> None:
    writer = RecordWriter(tmp_path / "mv" / "trac_records" / "task.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(6)
    for doc_id, (answer, reference, _, _) in enumerate(MATH_VERIFY_LABELS):
        records = synthetic_question(rng, doc_id, True, k=1, task="task", model="model")
        response = f"The answer is $\\boxed{{{answer}}}$."  # Math-Verify reads the whole response, as lm-eval does
        writer.write_batch([replace(records[0], text=response, answer=answer, reference=reference)])
    questions = _questions(tmp_path / "mv")
    ours = [question_evidence(records)["correct"] for records in questions]
    theirs = [
        question_evidence(records, EvidenceOptions(equivalence="math-verify"))["correct"] for records in questions
    ]
    assert ours == [row[2] for row in MATH_VERIFY_LABELS]
    assert theirs == [row[3] for row in MATH_VERIFY_LABELS]
    assert resolve_equivalence("math-verify")("B", "(B)", "mc") is True  # other kinds keep trac-eval's relation


def test_each_phase_of_a_rescore_gets_its_named_progress(run: Path) -> None:
    streams: dict[str, list] = {}

    def progress(phase: str):
        return lambda items: streams.setdefault(phase, list(items))

    rescore([run], EvidenceOptions(n_bins=4), progress=progress)
    assert list(streams) == [
        "reading (default configuration)",
        "reading (n_bins=4)",
        "evaluating (default configuration)",
        "evaluating (n_bins=4)",
    ]
    assert [len(items) for items in streams.values()] == [1, 1, 1, 1]  # one record file, one pair


def test_rescore_counts_the_comparisons_that_ran_out_of_the_work_budget(tmp_path: Path) -> None:
    """Labels computed again from the records meet the same undecided comparisons (the primary answer against the
    reference runs out of the work budget on 3 questions), counted before and after
    (docs/method.md#the-symbolic-work-budget)."""
    writer = RecordWriter(tmp_path / "model" / "trac_records" / "task.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(5)
    for doc_id in range(12):
        records = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=3, task="task", model="model")
        if doc_id < 3:
            records = [replace(record, reference="a^{16}") for record in records]
            records[0] = replace(records[0], answer="(a+b+c+d+e)^{16}")
        writer.write_batch(records)
    options = EvidenceOptions(n_bins=4)
    (change,) = rescore([tmp_path], options)
    assert change.undecided_before == change.undecided_after >= 3
    counted = change.undecided_after
    assert f"comparisons undecided (work budget ran out, not equivalent) {counted} → {counted}" in format_changes(
        [change], options
    )
    pair = changes_to_json([change], options)["pairs"][0]
    assert pair["undecided_comparisons"] == {"before": counted, "after": counted}
