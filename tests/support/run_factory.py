"""Seeded multi-run fixtures: lm-eval-like output folders holding TrAC records of several models × datasets.

Each (model, task) pair gets its own accuracy and signal strength, drawn from the seed, so tables built from the
folders can be checked against values computed independently from the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from record_factory import synthetic_question

from trac_metrics.records import RecordWriter


@dataclass(frozen=True)
class PairSpec:
    model: str
    task: str
    n_questions: int
    accuracy: float
    signal: float


def pair_specs(models: list[str], tasks: list[str], n_questions: int, seed: int) -> list[PairSpec]:
    """One spec per (model, task): accuracy in [0.3, 0.7], signal in [0.05, 0.35], both seeded."""
    rng = np.random.default_rng(seed)
    return [
        PairSpec(model, task, n_questions, float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.05, 0.35)))
        for model in models
        for task in tasks
    ]


def write_runs(
    root: Path, specs: list[PairSpec], k: int = 4, seed: int = 0, decoding: dict[str, float] | None = None
) -> list[Path]:
    """Write ``root/<model>/trac_records/<task>.2026-01-01T00-00-00.jsonl`` per spec; returns the model folders."""
    rng = np.random.default_rng(seed)
    folders = []
    for spec in specs:
        folder = root / spec.model.replace("/", "__")
        writer = RecordWriter(folder / "trac_records" / f"{spec.task}.2026-01-01T00-00-00.jsonl")
        for doc_id in range(spec.n_questions):
            writer.write_batch(
                synthetic_question(
                    rng,
                    doc_id,
                    rng.random() < spec.accuracy,
                    k=k,
                    signal=spec.signal,
                    task=spec.task,
                    model=spec.model,
                    decoding=decoding,
                )
            )
        if folder not in folders:
            folders.append(folder)
    return folders
