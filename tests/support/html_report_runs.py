"""Run folders for the HTML report's tests: seeded records whose primary traces are real token ids of the tiny model's
tokenizer (a thinking section closed by ``</think>``, accents, an emoji split over byte tokens), and lm-eval samples
files holding each question's prompt for some models."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from record_factory import synthetic_question

from trac_metrics._warnings import TracWarning
from trac_metrics.records import RecordWriter, ResponseRecord, iter_records
from trac_metrics.reporting.runs import evaluate_pairs, load_pairs

STAMP = "2026-01-01T00-00-00"
MARKER = "</think>"
REASONING = (
    "Let me think about question {doc}. The café sells {doc} pastries ☕ and each costs 2 €. "
    "Hmm, maybe I should check 😀 the arithmetic again: {doc} × 2 is what we need."
)


SUBJECTS = ("Algebra", "Geometry", "Number Theory")
"""Each question's ``subject`` metadata: the one of its doc_id modulo 3 (``level``: ``Level`` doc_id % 5 + 1)."""


def tokenized(record: ResponseRecord, tokenizer, rng: np.random.Generator) -> ResponseRecord:
    """``record`` with a thinking trace as its text and its per-token arrays rebuilt on the tokenizer's ids of that
    text (plus the end-of-sequence token), so a page can decode them back."""
    text = f"<think>{REASONING.format(doc=record.doc_id)}{MARKER}\n\nThe answer is \\boxed{{{record.answer}}}"
    ids = np.asarray([*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id], dtype=np.int32)
    logprobs = np.minimum(rng.normal(-0.6, 0.8, ids.size), 0.0)
    return dataclasses.replace(
        record,
        text=text,
        token_ids=ids,
        token_logprobs=logprobs,
        topk_entropy=rng.uniform(0.0, 1.5, ids.size),
        topk_mean_logprob=logprobs - rng.uniform(1.0, 3.0, ids.size),
        marker=MARKER,
        metadata={"level": f"Level {record.doc_id % 5 + 1}", "subject": SUBJECTS[record.doc_id % len(SUBJECTS)]},
    )


def prompt_of(model: str, task: str, doc_id: int) -> str:
    return f"<|im_start|>user\nQuestion {doc_id} of {task} for {model}: how much are {doc_id} pastries?<|im_end|>\n"


def write_tokenized_runs(
    root: Path,
    tokenizer,
    models: list[str],
    tasks: list[str],
    n_questions: int,
    k: int = 4,
    seed: int = 0,
    samples_for: tuple[str, ...] = (),
    signal: float = 0.2,
) -> list[Path]:
    """``root/<model>/trac_records/<task>.<stamp>.jsonl`` per model and task (accuracy ~0.5, a weak ``signal``, so
    every method is confidently wrong somewhere), and for the
    models in ``samples_for`` lm-eval's samples files ``root/<model>/<model>/samples_<task>_<stamp>.jsonl``; returns
    the model folders."""
    rng = np.random.default_rng(seed)
    folders = []
    for model in models:
        folder = root / model
        folders.append(folder)
        for task in tasks:
            writer = RecordWriter(folder / "trac_records" / f"{task}.{STAMP}.jsonl")
            for doc_id in range(n_questions):
                correct = rng.random() < 0.5
                question = synthetic_question(rng, doc_id, correct, k=k, signal=signal, task=task, model=model)
                writer.write_batch([tokenized(record, tokenizer, rng) for record in question])
            if model in samples_for:
                samples = folder / model / f"samples_{task}_{STAMP}.123456.jsonl"
                samples.parent.mkdir(parents=True, exist_ok=True)
                lines = [
                    {"doc_id": doc_id, "arguments": {"gen_args_0": {"arg_0": prompt_of(model, task, doc_id)}}}
                    for doc_id in range(n_questions)
                ]
                samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folders


def confidently_wrong_from_records(runs: Path, method: str) -> set[tuple[str, str, str]]:
    """(model, task, doc) of every wrong primary answer whose ``method`` score is among the top tenth of its pair,
    recomputed from the records: a question is in when fewer than ⌈n / 10⌉ scores of its pair are strictly above it."""
    chosen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        pairs = load_pairs([runs], jobs=1)
        for pair, evaluation in zip(pairs, evaluate_pairs(pairs, jobs=1), strict=True):
            scores = pd.Series(evaluation.scores[method])
            cut = math.ceil(scores.notna().sum() / 10)
            in_top = scores.rank(ascending=False, method="min") <= cut
            for doc_id, top, label in zip(evaluation.doc_ids, in_top, evaluation.labels, strict=True):
                if top and not label:
                    chosen.add((pair.model, pair.task, str(doc_id)))
    return chosen


def rewrite_records(runs: Path, model: str, change) -> None:
    """Rewrite ``model``'s record file under ``runs`` (one task) with ``change(record)``'s fields replaced."""
    (path,) = runs.glob(f"{model}/trac_records/*.jsonl")
    records = list(iter_records(path))
    path.unlink()
    writer = RecordWriter(path)
    for record in records:
        writer.write_batch([dataclasses.replace(record, **change(record))])
