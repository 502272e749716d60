"""``trac``: command-line access to TrAC results without rerunning a model.

- ``trac summary OUT_DIR``: accuracy and the TrAC / baseline metrics of every task in the newest lm-eval results
  file under ``OUT_DIR`` (what ``lm_eval ... --output_path OUT_DIR`` wrote).
- ``trac evaluate RECORDS.jsonl ...``: recompute labels, features and every metric from stored TrAC records
  (``<OUT_DIR>/trac_records/*.jsonl``) with the installed answer normalizer; no model, no lm-eval run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from trac_metrics.evaluate import evaluate_task
from trac_metrics.evidence import question_evidence
from trac_metrics.records import ResponseRecord, iter_records
from trac_metrics.report import format_table, method_table


def newest_results_file(out_dir: Path) -> Path:
    """The most recent ``results_*.json`` lm-eval wrote under ``out_dir`` (it nests one folder per model)."""
    candidates = sorted(out_dir.rglob("results_*.json"), key=lambda path: path.stat().st_mtime)
    if not candidates:
        raise SystemExit(f"trac summary: no lm-eval results_*.json under {out_dir}")
    return candidates[-1]


def summary(out_dir: Path) -> str:
    path = newest_results_file(out_dir)
    results = json.loads(path.read_text())["results"]
    blocks = [f"results: {path}"]
    for task, values in sorted(results.items()):
        metrics = {key.split(",")[0]: value for key, value in values.items()
                   if "," in key and isinstance(value, (int, float))}
        if "trac_auroc" not in metrics:
            continue
        accuracy = f"acc = {metrics.get('acc', float('nan')):.4f}"
        if "maj_acc" in metrics:
            accuracy += f", majority-vote acc = {metrics['maj_acc']:.4f}"
        blocks.append(f"\n{task}: {accuracy}\n{format_table(method_table(metrics))}")
    if len(blocks) == 1:
        raise SystemExit(f"trac summary: {path} holds no TrAC task")
    return "\n".join(blocks)


def evaluate_records(paths: Sequence[Path]) -> dict[str, dict[str, float]]:
    """Metrics per task recomputed from record files (one question = all repeats of one doc id)."""
    by_question: dict[tuple[str, str], list[ResponseRecord]] = defaultdict(list)
    for path in paths:
        for record in iter_records(path):
            by_question[record.key[:2]].append(record)
    by_task: dict[str, list[dict]] = defaultdict(list)
    for (task, _), records in sorted(by_question.items(), key=lambda item: (item[0][0], _doc_order(item[0][1]))):
        by_task[task].append(question_evidence(records))
    return {task: evaluate_task(evidences).metrics for task, evidences in by_task.items()}


def _doc_order(doc_id: str) -> tuple[int, str]:
    return (int(doc_id), "") if doc_id.isdigit() else (sys.maxsize, doc_id)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="trac", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("summary", help="accuracy + TrAC metrics of an lm-eval output folder").add_argument(
        "out_dir", type=Path)
    evaluate = commands.add_parser("evaluate", help="recompute metrics from stored TrAC records")
    evaluate.add_argument("records", type=Path, nargs="+")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    args = parser.parse_args(argv)
    if args.command == "summary":
        print(summary(args.out_dir))
        return
    metrics = evaluate_records(args.records)
    if args.json:
        print(json.dumps(metrics, indent=2))
        return
    for task, values in metrics.items():
        print(f"{task}\n{format_table(method_table(values))}\n")


if __name__ == "__main__":
    main()
