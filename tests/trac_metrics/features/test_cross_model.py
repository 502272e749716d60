"""The cross-model score's data (trac_metrics.features.cross_model, docs/method.md#cross-model-score): what the judge
reads is what TrAC's trace probe read, judgements are written as they are read back, and a run's judgements reach
the report as the method ``cross_model``."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from record_factory import synthetic_question
from sklearn.metrics import roc_auc_score

from trac_metrics._warnings import TracWarning
from trac_metrics.features.cross_model import (
    Judgement,
    judge_context,
    judgements_beside,
    judgements_file,
    read_judgements,
    write_judgements,
)
from trac_metrics.records import RecordFormatError, RecordWriter
from trac_metrics.reporting.runs import evaluate_pairs, load_pairs

PROMPT = "<|im_start|>user\nHow many?<|im_end|>\n<|im_start|>assistant\n"
REPLY = (
    "<think>\nTom has 3.\nSo Tom has 3 pens.\n</think>\n\nTom has 3 pens in the end.\nThe final answer is \\boxed{3}."
)


def _primary(context: str, text: str = REPLY, marker: str | None = "</think>", appended: str = "</think>\n\nX{"):
    record = synthetic_question(np.random.default_rng(0), 1, True, k=1)[0]
    probe = dataclasses.replace(record.probes["trace"], context=context, appended_text=appended)
    return dataclasses.replace(record, text=text, marker=marker, answer="3", probes={"trace": probe})


def test_the_judge_reads_what_the_trace_probe_read_then_what_it_appended():
    assert (
        judge_context(_primary("reasoning"), PROMPT)
        == PROMPT + "<think>\nTom has 3.\nSo Tom has 3 pens.\n</think>\n\nX{"
    )
    plain = "Tom has 3.\nSo the answer is \\boxed{3}."
    cut = _primary("cut_before_answer", text=plain, marker="", appended="\n\nX{")
    assert judge_context(cut, PROMPT) == PROMPT + "Tom has 3.\n" + "\n\nX{"
    assert judge_context(_primary("whole", text="<think>\nTom has", appended="</think>X{"), PROMPT) == (
        PROMPT + "<think>\nTom has</think>X{"
    )
    assert judge_context(dataclasses.replace(_primary("reasoning"), probes={}), PROMPT) is None
    # a primary without an answer is read alike (the judge scores the empty answer)
    assert judge_context(dataclasses.replace(_primary("reasoning"), answer=None), PROMPT) == judge_context(
        _primary("reasoning"), PROMPT
    )


def _judgement(doc_id=1, logprob=-0.5, **changes) -> Judgement:
    return Judgement(
        "t",
        "m",
        doc_id,
        **{
            "judge": "small",
            "answer_logprob": logprob,
            "answer_tokens": 2,
            "restated": "3",
            "agrees": True,
            "seconds": 0.01,
            **changes,
        },
    )


def test_judgements_are_read_back_as_written_and_a_bad_one_is_refused_by_file_and_line(tmp_path):
    path = tmp_path / "j.jsonl"
    write_judgements(path, [_judgement(1), _judgement("aime:3", -2.0, restated=None, agrees=False)])
    assert list(read_judgements(path)) == [_judgement(1), _judgement("aime:3", -2.0, restated=None, agrees=False)]
    with pytest.raises(FileExistsError):
        write_judgements(path, [_judgement(2)])
    assert _judgement(answer_tokens=0, restated=None, agrees=False).answer_tokens == 0  # the empty answer
    for bad in ({"answer_logprob": 0.5}, {"answer_logprob": float("nan")}, {"answer_tokens": -1}, {"judge": "a/b"}):
        with pytest.raises(RecordFormatError):
            _judgement(**bad)
    line = json.loads(_judgement().to_json()) | {"seconds": -1}
    path.write_text(_judgement().to_json() + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(RecordFormatError, match=r"j\.jsonl:2: seconds"):
        list(read_judgements(path))


def _run(folder, n=60, seed=0):
    rng = np.random.default_rng(seed)
    writer = RecordWriter(folder / "trac_records" / "t.2026-01-01T00-00-00.jsonl")
    for doc_id in range(n):
        writer.write_batch(synthetic_question(rng, doc_id, rng.random() < 0.5, k=4, task="t", model="m"))
    return folder


def test_a_runs_judgements_become_the_method_cross_model_and_agree_with_scikit_learn(tmp_path):
    folder = _run(tmp_path / "run")
    rng = np.random.default_rng(1)
    logprobs = {doc_id: -float(rng.uniform(0.01, 3.0)) for doc_id in range(60)}
    write_judgements(
        judgements_file(folder, "t", "small"),
        [dataclasses.replace(_judgement(d, v), task="t", model="m") for d, v in logprobs.items()],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        (pair,) = load_pairs([folder], jobs=1)
        (evaluation,) = evaluate_pairs([pair], jobs=1)
    scores = [evidence["baselines"]["cross_model"] for evidence in pair.evidences]
    assert scores == [logprobs[int(evidence["doc_id"])] for evidence in pair.evidences]
    assert evaluation.metrics["cross_model_auroc"] == pytest.approx(roc_auc_score(pair.labels, scores))


def test_a_run_without_judgements_has_no_cross_model_and_two_judges_of_one_answer_are_refused(tmp_path):
    folder = _run(tmp_path / "run", n=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        (pair,) = load_pairs([folder], jobs=1)
    assert not any("cross_model" in evidence["baselines"] for evidence in pair.evidences)
    for judge in ("small", "other"):
        write_judgements(
            judgements_file(folder, "t", judge), [dataclasses.replace(_judgement(3), task="t", model="m", judge=judge)]
        )
    with pytest.raises(RecordFormatError, match="judged in .*t.other.jsonl too|judged in .*t.small.jsonl too"):
        judgements_beside(next((folder / "trac_records").iterdir()))
