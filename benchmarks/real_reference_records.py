"""Stored runs built from real reference answers, for ``trac rescore`` to show what an answer checker changes.

Per dataset of the real benchmark copies (``../shared/real-data`` beside the checkout, or ``--datasets-dir``;
MATH-500, Minerva, OlympiadBench single-answer rows, AIME 2024 + 2025, GSM8K), one question per distinct reference,
K = 2 responses each, written as TrAC records (``trac-record/2``) under ``OUT/<dataset>/trac_records/``. The primary
response of question i states, inside ``\\boxed{}``, one equivalent rewrite of its reference
(``tests/trac_metrics/answers/test_real_data.py``: ``\\dfrac`` ↔ ``\\frac`` ↔ ``a/b``, spacing, ``$…$``,
``\\left( \\right)``, a final period, a unit, thousands separators, 7-digit decimals of irrational constants; the
transforms taken in turn), except every third question, which states the next different reference (a wrong answer);
the second response states the reference as written. Token arrays and probes are synthetic
(``tests/support/record_factory.py``); only answers and references matter here. Answers are extracted from the texts
with the current extractor.

    python benchmarks/real_reference_records.py OUT [--datasets-dir ../shared/real-data]
    git show f801eb8:trac_metrics/answers.py > /tmp/answers_before.py  # the checker before this rework
    trac rescore OUT/* --equivalence /tmp/answers_before.py:equivalent  # labels the previous checker gives
    trac rescore OUT/* --equivalence math-verify                        # labels Math-Verify's default gives

Prints one JSON line: questions and wrong primaries per dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "tests" / "trac_metrics" / "answers")]

from record_factory import synthetic_question  # noqa: E402
from test_real_data import DATASETS, REAL_DATA, load_references, other_references, rewrites  # noqa: E402

from trac_metrics.answers import extract_answer  # noqa: E402
from trac_metrics.records import RecordWriter  # noqa: E402

WRONG_EVERY = 3
"""Every third question's primary states another question's reference."""


def _response(answer: str) -> str:
    return f"Working through the problem step by step gives the result. The final answer is $\\boxed{{{answer}}}$."


def write_dataset(out: Path, dataset: str, folder: Path) -> dict[str, int]:
    """Write one dataset's records; returns its question and wrong-primary counts."""
    references = load_references(dataset, folder)
    wrong = dict(other_references(references))
    writer = RecordWriter(out / dataset / "trac_records" / f"real_{dataset}.2026-01-01T00-00-00.jsonl")
    rng = np.random.default_rng(0)
    wrong_count = 0
    for doc_id, reference in enumerate(references):
        forms = [rewrite for _, rewrite in rewrites(reference)] or [reference]
        stated = forms[doc_id % len(forms)]
        if doc_id % WRONG_EVERY == WRONG_EVERY - 1 and reference in wrong:
            stated, wrong_count = wrong[reference], wrong_count + 1
        records = synthetic_question(rng, doc_id, True, k=2, task=f"real_{dataset}", model="references")
        texts = (_response(stated), _response(reference))
        writer.write_batch(
            [
                replace(record, text=text, answer=extract_answer(text, "math"), reference=reference)
                for record, text in zip(records, texts, strict=True)
            ]
        )
    return {"questions": len(references), "wrong_primaries": wrong_count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, metavar="OUT")
    parser.add_argument("--datasets-dir", type=Path, default=REAL_DATA)
    args = parser.parse_args()
    counts = {dataset: write_dataset(args.out, dataset, args.datasets_dir) for dataset in DATASETS}
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
