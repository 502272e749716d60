"""The judge of the cross-model score (docs/method.md#cross-model-score): a Hugging Face causal LM that reads each
primary response's question and reasoning as TrAC's trace probe did and scores the first model's answer.

    python -m trac_tasks.engines.judge RUN_FOLDER... --judge MODEL_DIR [--name NAME] [--batch 16]

For every run folder (an lm-eval ``--output_path`` with ``trac_records/`` and, from ``--log_samples``, the samples
files that hold each question's rendered prompt) it writes ``trac_judgements/<task>.<NAME>.jsonl`` beside
``trac_records/``; ``trac report`` / ``trac evaluate`` then show the method ``cross_model``. A question without a
stored prompt or a trace probe is skipped (counted in a warning); an existing judgements file is refused.
The judge reads the prompt as the run rendered it (the first model's chat template): pair models that share one, or
accept that the judge reads another's.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trac_metrics._warnings import TracWarning
from trac_metrics.answers.equivalence import equivalent
from trac_metrics.features.cross_model import JUDGE_NAME, Judgement, judge_context, judgements_file, write_judgements
from trac_metrics.records import iter_records
from trac_metrics.reporting.html.prompts import run_prompts
from trac_metrics.reporting.runs import find_record_files

RESTATEMENT_TOKENS = 16
"""The judge's greedy re-statement is cut at this many tokens, as TrAC's probe is
(docs/method.md#probe-decoding-and-cutting)."""
CLOSING = "}"


@dataclass(frozen=True)
class _Item:
    output: Path
    """The lm-eval output folder the record file sits in: its judgements go beside its ``trac_records/``."""
    task: str
    model: str
    doc_id: int | str
    kind: str
    context: str
    answer: str | None


def judge_items(folders: Sequence[Path]) -> tuple[list[_Item], int]:
    """The primary responses under ``folders`` the judge can score, and how many it cannot (no prompt stored, no
    trace probe). A response's prompt is the one its own run stored (the samples file of its model and task beside
    its record file)."""
    items, skipped = [], 0
    for path in find_record_files(folders):
        primaries = [record for record in iter_records(path) if record.repeat == 0]
        prompts = {
            (task, model): run_prompts(
                task,
                model,
                [path],
                {str(record.doc_id) for record in primaries if (record.task, record.model) == (task, model)},
                f"{path} ({model} on {task})",
            )
            for task, model in dict.fromkeys((record.task, record.model) for record in primaries)
        }
        for record in primaries:
            prompt = prompts[record.task, record.model].get(str(record.doc_id))
            context = None if prompt is None else judge_context(record, prompt)
            if context is None:
                skipped += 1
                continue
            items.append(
                _Item(
                    path.parent.parent,
                    record.task,
                    record.model,
                    record.doc_id,
                    record.answer_kind,
                    context,
                    record.answer,
                )
            )
    return items, skipped


@dataclass(frozen=True)
class Judge:
    """A loaded judge: its model, tokenizer and device."""

    model: object
    tokenizer: object
    device: str

    @classmethod
    def load(cls, folder: Path) -> Judge:
        """The model in ``folder`` in float32, on a CUDA device when there is one, else the CPU."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
        return cls(model, AutoTokenizer.from_pretrained(folder), device)


def score(items: Sequence[_Item], judge: Judge, name: str, batch: int = 16) -> list[Judgement]:
    """ℓ_judge of each item's answer after its context (teacher-forced, one forward pass) and the judge's greedy
    re-statement, ``batch`` items at a time."""
    import torch

    model, tokenizer, device = judge.model, judge.tokenizer, judge.device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    judgements = []
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        began = time.perf_counter()
        contexts = [tokenizer(item.context, add_special_tokens=False)["input_ids"] for item in chunk]
        # a primary without an answer: the empty answer, the closing brace right after the cue
        answers = [tokenizer(item.answer or CLOSING, add_special_tokens=False)["input_ids"] for item in chunk]
        with torch.no_grad():
            logprobs = _answer_logprobs(model, contexts, answers, pad, device)
            restated = _restatements(model, tokenizer, contexts, pad, device)
        seconds = (time.perf_counter() - began) / len(chunk)
        for item, answer_ids, value, text in zip(chunk, answers, logprobs, restated, strict=True):
            judgements.append(
                Judgement(
                    item.task,
                    item.model,
                    item.doc_id,
                    name,
                    min(0.0, float(value)),
                    len(answer_ids) if item.answer is not None else 0,
                    text,
                    item.answer is not None and equivalent(text, item.answer, item.kind),
                    seconds,
                )
            )
    return judgements


def _left_padded(rows: list[list[int]], pad: int, device: str):
    import torch

    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row)
        mask[i, width - len(row) :] = 1
    return ids.to(device), mask.to(device)


def _answer_logprobs(model, contexts, answers, pad, device) -> list[float]:
    """The mean log-probability of each answer's tokens after its context (left-padded batch, one forward pass)."""
    import torch

    ids, mask = _left_padded([c + a for c, a in zip(contexts, answers, strict=True)], pad, device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.float()
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    values = []
    for row, answer in enumerate(answers):
        values.append(float(logprobs[row, ids.shape[1] - 1 - len(answer) :].mean()))
    return values


def _restatements(model, tokenizer, contexts, pad, device) -> list[str | None]:
    """The judge's greedy continuation of each context, cut at the cue's closing brace (None when it never closes
    within :data:`RESTATEMENT_TOKENS`)."""
    ids, mask = _left_padded(contexts, pad, device)
    out = model.generate(
        input_ids=ids, attention_mask=mask, max_new_tokens=RESTATEMENT_TOKENS, do_sample=False, pad_token_id=pad
    )
    texts = tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
    return [text.split(CLOSING, 1)[0].strip() if CLOSING in text else None for text in texts]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trac_tasks.engines.judge", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="lm-eval output folders (with trac_records/ and samples)")
    parser.add_argument("--judge", type=Path, required=True, help="the judge: a Hugging Face model folder")
    parser.add_argument("--name", help="the judge's name in the judgements file (default: its folder's name)")
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args(argv)
    name = args.name or args.judge.name
    if not JUDGE_NAME.fullmatch(name):
        parser.error(f"--name {name!r}: letters, digits, '.', '_' and '-' only (it names a file)")
    items, skipped = judge_items(args.runs)
    if skipped:
        warnings.warn(
            f"{skipped} primary response(s) without a stored prompt or a trace probe are not judged",
            TracWarning,
            stacklevel=1,
        )
    groups: dict[Path, list[_Item]] = {}
    for item in items:
        groups.setdefault(judgements_file(item.output, item.task, name), []).append(item)
    existing = [str(path) for path in groups if path.exists()]
    if existing:  # refused before any judging
        parser.error(f"{', '.join(existing)} exist(s): delete to judge again")
    judge = Judge.load(args.judge)
    for path, group in groups.items():
        write_judgements(path, score(group, judge, name, args.batch))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
