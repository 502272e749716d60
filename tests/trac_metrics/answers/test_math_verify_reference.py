"""Math-Verify as the answer relation and labeller (trac_metrics.answers.math_verify_reference,
docs/method.md#the-symbolic-work-budget): answers over the checker's input caps are never parsed, each answer is
parsed once and each pair verified once, and the cached verdicts are Math-Verify's own."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import math_verify
import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.answers import math_verify_reference as reference_module
from trac_metrics.answers.math_verify_reference import math_verify_equivalent, math_verify_label
from trac_metrics.answers.symbolic import exceeds_symbolic_caps
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.records import RecordWriter, iter_records
from trac_metrics.reporting.rescore import rescore

RUNAWAY = [
    # each made Math-Verify wait out its 5-second parsing or comparison timeout, again for every comparison
    "1+" * 1500 + "1",
    "(" * 40 + "x" + ")" * 40,
    "2^{" * 20 + "2" + "}" * 20,
    r"\frac{" * 30 + "1" + "}{2}" * 30,
]
N_QUESTIONS, K = 8, 4


@pytest.fixture
def runaway_run(tmp_path: Path) -> Path:
    """8 questions of K = 4 responses, 8 of whose 32 answers run away: sample 1 of every question, and the primary
    of every other question."""
    folder = tmp_path / "model"
    writer = RecordWriter(folder / "trac_records" / "task.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(5)
    for doc_id in range(N_QUESTIONS):
        records = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=K, task="task", model="model")
        runaway = {1: RUNAWAY[doc_id % 4]} | ({0: RUNAWAY[(doc_id + 1) % 4]} if doc_id % 2 else {})
        answers = [runaway.get(repeat, record.answer) for repeat, record in enumerate(records)]
        writer.write_batch(
            [
                replace(record, answer=answer, text=f"So the answer is $\\boxed{{{answer}}}$.")
                for record, answer in zip(records, answers, strict=True)
            ]
        )
    return folder


@pytest.fixture
def math_verify_calls(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Every text Math-Verify parses and every verify call, through this module's caches (emptied first)."""
    for name in ("_parsed", "_answers_verdict", "_response_verdict"):
        getattr(reference_module, name).cache_clear()
    calls: Counter = Counter()

    def parse(text: str, *args, **kwargs):
        calls[("parse", text)] += 1
        return math_verify.parse(text, *args, **kwargs)

    def verify(*args, **kwargs):
        calls["verify"] += 1
        return math_verify.verify(*args, **kwargs)

    monkeypatch.setattr(reference_module, "parse", parse)
    monkeypatch.setattr(reference_module, "verify", verify)
    return calls


def uncached_equivalent(answer: str, other: str) -> bool:
    """Math-Verify's verdict computed afresh (answers over the caps: only the identical string)."""
    if exceeds_symbolic_caps(answer, other):
        return answer == other
    return bool(math_verify.verify(math_verify.parse(f"${other}$"), math_verify.parse(f"${answer}$")))


def uncached_label(response: str, reference: str) -> bool:
    """Math-Verify on the whole response; a last box over the caps: only the reference itself."""
    boxes = re.findall(r"\\boxed\{(.*)\}", response)
    if boxes and exceeds_symbolic_caps(boxes[-1], reference):
        return boxes[-1] == reference
    return bool(math_verify.verify(math_verify.parse(f"${reference}$"), math_verify.parse(response)))


def test_a_rescore_with_runaway_answers_parses_each_answer_once_and_none_of_the_runaways(
    runaway_run: Path, math_verify_calls: Counter
) -> None:
    (change,) = rescore([runaway_run], EvidenceOptions(equivalence="math-verify"))
    assert change.questions == N_QUESTIONS
    parsed = {key[1]: count for key, count in math_verify_calls.items() if key != "verify"}
    assert parsed and max(parsed.values()) == 1  # each distinct answer, reference or response parsed once
    assert not [text for text in parsed for runaway in RUNAWAY if runaway in text]
    first_rescore = math_verify_calls.copy()
    rescore([runaway_run], EvidenceOptions(equivalence="math-verify"))
    assert math_verify_calls == first_rescore  # a second reading verifies nothing again


def test_cached_verdicts_are_the_uncached_ones(runaway_run: Path, math_verify_calls: Counter) -> None:
    records = [record for path in runaway_run.rglob("*.jsonl") for record in iter_records(path)]
    answers = sorted({record.answer for record in records} | {record.reference for record in records})
    for answer, other in itertools.product(answers, repeat=2):
        assert math_verify_equivalent(answer, other) == uncached_equivalent(answer, other), (answer, other)
    for record in records:
        assert math_verify_label(record.text, record.reference) == uncached_label(record.text, record.reference)
    runaway, capped_pair = RUNAWAY[0], (RUNAWAY[0], "1501")
    assert math_verify_equivalent(runaway, runaway) and not math_verify_equivalent(*capped_pair)
    assert math_verify_calls["verify"] <= len(answers) ** 2 + len(records)  # once per pair at most
