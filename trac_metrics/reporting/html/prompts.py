"""The question of each document, as the model saw it, for the HTML report.

Records do not store the prompt (docs/architecture.md#response-fields); lm-eval's samples file does, when the run used
``--log_samples``: ``<output_path>/<model>/samples_<task>_<time>.jsonl``, one line per document with the rendered
prompt in ``arguments.gen_args_0.arg_0``. :func:`question_prompts` reads a pair's prompts only from the samples files
of its own model and task (``<output_path>/<model>/samples_<task>_*.jsonl`` beside the ``<output_path>/trac_records/``
folder its record files sit in), never from another model's file with the same document ids; where they hold no
prompt for a question, or two of them different ones, the page says "prompt not stored".
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trac_metrics._warnings import TracWarning
from trac_metrics.reporting.runs import RECORDS_FOLDER, PairRun

_SURROGATE = re.compile("[\ud800-\udfff]")


def lm_eval_folder_name(model: str) -> str:
    """The folder lm-eval writes a model's results and samples to (its ``sanitize_model_name``)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model)


def _output_folders(record_files: Iterable[Path]) -> list[Path]:
    """The lm-eval output folders of record files (``<output_path>/trac_records/<task>.<stamp>.jsonl``)."""
    return list(dict.fromkeys(path.parent.parent for path in record_files if path.parent.name == RECORDS_FOLDER))


def readable_samples_files(record_files: Iterable[Path]) -> list[Path]:
    """Every lm-eval samples file the page may read a prompt from, for the runs of ``record_files``: what an output
    path must never replace (:func:`trac_metrics._util.files.check_output`)."""
    return [path for output in _output_folders(record_files) for path in sorted(output.glob("*/samples_*.jsonl"))]


def samples_files(task: str, model: str, record_files: Iterable[Path]) -> list[Path]:
    """lm-eval's samples files of ``model`` on ``task``: ``samples_<task>_<time>.jsonl`` in the model's own folder of
    the output folders ``record_files`` sit in."""
    pattern = re.compile(rf"samples_{re.escape(task)}_\d{{4}}-\d\d-\d\dT[\d.\-]+\.jsonl")
    own = lm_eval_folder_name(model)
    return [
        path
        for output in _output_folders(record_files)
        for path in sorted((output / own).glob("samples_*.jsonl"))
        if pattern.fullmatch(path.name)
    ]


def _prompt(line: Any) -> str | None:
    """The rendered prompt of a samples line; None when there is none or it is not Unicode text (a lone surrogate)."""
    arguments = line.get("arguments") if isinstance(line, dict) else None
    first = arguments.get("gen_args_0") if isinstance(arguments, dict) else None
    prompt = first.get("arg_0") if isinstance(first, dict) else None
    return prompt if isinstance(prompt, str) and not _SURROGATE.search(prompt) else None


def _doc_id(line: Any) -> str | None:
    doc_id = line.get("doc_id") if isinstance(line, dict) else None
    return str(doc_id) if isinstance(doc_id, (int, str)) and not isinstance(doc_id, bool) else None


def question_prompts(pair: PairRun) -> dict[str, str]:
    """Document id → its rendered prompt, for the questions of ``pair`` (:func:`run_prompts` of its model, task and
    record files)."""
    wanted = {str(evidence["doc_id"]) for evidence in pair.evidences}
    return run_prompts(pair.task, pair.model, pair.sources, wanted, pair.name)


def run_prompts(task: str, model: str, record_files: Iterable[Path], wanted: set[str], name: str) -> dict[str, str]:
    """Document id → its rendered prompt, for the ``wanted`` documents found in the samples files of ``model`` on
    ``task`` beside ``record_files`` (:func:`samples_files`). A document two files give different prompts is left
    out (which run the records come from cannot be told), with one warning naming ``name``; a line that is not a
    JSON object with a document id and a prompt is skipped, with one warning per file."""
    files = samples_files(task, model, record_files)
    prompts: dict[str, str] = {}
    conflicting: set[str] = set()
    for path in files:
        skipped = 0
        with path.open(encoding="utf-8", errors="replace") as lines:
            for text in lines:
                try:
                    line = json.loads(text)
                except ValueError:  # not JSON, or an integer too long to read
                    skipped += 1
                    continue
                prompt, doc_id = _prompt(line), _doc_id(line)
                if prompt is None or doc_id is None:
                    skipped += 1
                elif doc_id in wanted and prompts.setdefault(doc_id, prompt) != prompt:
                    conflicting.add(doc_id)
        if skipped:
            warnings.warn(f"{path}: skipped {skipped} line(s) without a readable prompt", TracWarning, stacklevel=2)
    if conflicting:
        warnings.warn(
            f"{name}: {len(conflicting)} question(s) have different prompts in its samples files "
            f"({', '.join(str(path) for path in files)}); they are left without one",
            TracWarning,
            stacklevel=2,
        )
    return {doc_id: prompt for doc_id, prompt in prompts.items() if doc_id not in conflicting}
