"""The question of each document, as the model saw it, for the HTML report.

Records do not store the prompt (docs/architecture.md#response-fields); lm-eval's samples file does, when the run used
``--log_samples``: ``<output_path>/<model>/samples_<task>_<time>.jsonl``, one line per document with the rendered
prompt in ``arguments.gen_args_0.arg_0``. :func:`question_prompts` reads those of a pair from the output folders its
record files sit in (``<output_path>/trac_records/``), the model's own folder first; a question without one is shown
without its prompt.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from trac_metrics._warnings import TracWarning
from trac_metrics.reporting.runs import RECORDS_FOLDER, PairRun


def lm_eval_folder_name(model: str) -> str:
    """The folder lm-eval writes a model's results and samples to (its ``sanitize_model_name``)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model)


def samples_files(pair: PairRun) -> list[Path]:
    """lm-eval's samples files of ``pair``'s task under the output folders of its record files, those in the model's
    own folder first."""
    pattern = re.compile(rf"samples_{re.escape(pair.task)}_\d{{4}}-\d\d-\d\dT[\d.\-]+\.jsonl")
    own = lm_eval_folder_name(pair.model)
    outputs = dict.fromkeys(source.parent.parent for source in pair.sources if source.parent.name == RECORDS_FOLDER)
    found = [
        path for output in outputs for path in sorted(output.rglob("samples_*.jsonl")) if pattern.fullmatch(path.name)
    ]
    return sorted(found, key=lambda path: path.parent.name != own)


def _prompt(line: dict[str, Any]) -> str | None:
    arguments = line.get("arguments")
    first = arguments.get("gen_args_0") if isinstance(arguments, dict) else None
    prompt = first.get("arg_0") if isinstance(first, dict) else None
    return prompt if isinstance(prompt, str) else None


def question_prompts(pair: PairRun) -> dict[str, str]:
    """Document id → its rendered prompt, for the questions of ``pair`` found in lm-eval's samples files (the first
    file that has a document wins). A line that is not a JSON object with a prompt is skipped, with one warning per
    file."""
    wanted = {str(evidence["doc_id"]) for evidence in pair.evidences}
    prompts: dict[str, str] = {}
    for path in samples_files(pair):
        skipped = 0
        with path.open(encoding="utf-8") as lines:
            for text in lines:
                try:
                    line = json.loads(text)
                except ValueError:
                    skipped += 1
                    continue
                prompt = _prompt(line) if isinstance(line, dict) else None
                doc_id = str(line.get("doc_id")) if isinstance(line, dict) else None
                if prompt is None or doc_id is None:
                    skipped += 1
                elif doc_id in wanted:
                    prompts.setdefault(doc_id, prompt)
        if skipped:
            warnings.warn(f"{path}: skipped {skipped} line(s) without a readable prompt", TracWarning, stacklevel=2)
        if wanted <= prompts.keys():
            break
    return prompts
