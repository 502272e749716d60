"""The cross-model score (docs/method.md#cross-model-score): a second model — the judge — reads the first model's
question and reasoning exactly as TrAC's trace probe did, is cued for the answer, and scores the first model's primary
answer: the mean log-probability of its tokens under the judge (ℓ_judge), plus the judge's own greedy re-statement
and whether it agrees with the primary answer.

This module is the judge's data: what it reads (:func:`judge_context`, from a record and its prompt), and the
judgements file it writes beside the run's records (``<output_path>/trac_judgements/<task>.<judge>.jsonl``, one line
per primary response, :class:`Judgement`), read back with the same checks it was written with. The judge itself runs
in ``trac_tasks.engines.judge`` (a Hugging Face model; ``python -m trac_tasks.engines.judge``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from trac_metrics.answers.extraction import answer_statement_start
from trac_metrics.records import CUT_BEFORE_ANSWER, REASONING, WHOLE, RecordFormatError, ResponseRecord

JUDGEMENT_SCHEMA = "trac-judgement/1"
JUDGEMENTS_FOLDER = "trac_judgements"
"""The folder beside ``trac_records/`` that holds a run's judgements."""
JUDGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A judge's name: it names the judgements file."""


def judge_context(record: ResponseRecord, prompt: str) -> str | None:
    """What the judge reads before the primary answer: the question's rendered ``prompt``, the part of the response
    the record's trace probe read (its reasoning before the last end-of-thinking marker, the response cut before its
    answer statement, or the whole response: docs/method.md#probe-prompt), then what that probe appended (the marker
    and the cue). None when the record has no trace probe."""
    probe = record.probes.get("trace")
    if probe is None:
        return None
    text = record.generated_text if record.generated_text is not None else record.text
    if probe.context == REASONING and record.marker and record.marker in text:
        body = text[: text.rindex(record.marker)]
    elif probe.context == CUT_BEFORE_ANSWER:
        start = answer_statement_start(text, record.answer_kind, record.marker or None)
        body = text if start is None else text[:start]
    elif probe.context in (REASONING, WHOLE):
        body = text
    else:
        return None
    return prompt + body + probe.appended_text


@dataclass(frozen=True)
class Judgement:
    """One primary response as a judge saw it: ``answer_logprob`` is ℓ_judge, the mean log-probability of the
    ``answer_tokens`` tokens of the primary answer under the judge after :func:`judge_context` (a primary without an
    answer: ``answer_tokens`` 0 and the log-probability of the closing brace right after the cue, the empty answer);
    ``restated`` the judge's greedy re-statement (cut at the cue's closing brace) and ``agrees`` whether it equals the
    primary answer (never, for a primary without one); ``seconds`` the judge's time for this response."""

    task: str
    model: str
    doc_id: int | str
    judge: str
    answer_logprob: float
    answer_tokens: int
    restated: str | None
    agrees: bool
    seconds: float

    def __post_init__(self) -> None:
        if not JUDGE_NAME.fullmatch(self.judge):
            raise RecordFormatError(f"judge name {self.judge!r}: letters, digits, '.', '_' and '-' only")
        if not (
            isinstance(self.answer_tokens, int) and not isinstance(self.answer_tokens, bool) and self.answer_tokens >= 0
        ):
            raise RecordFormatError(f"answer_tokens must be an integer >= 0, got {self.answer_tokens!r}")
        if (
            not (isinstance(self.answer_logprob, float) and math.isfinite(self.answer_logprob))
            or self.answer_logprob > 0
        ):
            raise RecordFormatError(
                f"answer_logprob must be a finite log-probability (<= 0), got {self.answer_logprob!r}"
            )
        if not isinstance(self.agrees, bool) or not (self.restated is None or isinstance(self.restated, str)):
            raise RecordFormatError(f"agrees must be true or false and restated a string or null, got {self!r}")
        if not (isinstance(self.seconds, float) and 0 <= self.seconds < 1e12):
            raise RecordFormatError(f"seconds must be a finite number >= 0, got {self.seconds!r}")

    def to_json(self) -> str:
        return json.dumps({"schema": JUDGEMENT_SCHEMA, **asdict(self)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Judgement:
        payload = json.loads(line)
        if not isinstance(payload, dict) or payload.pop("schema", None) != JUDGEMENT_SCHEMA:
            raise RecordFormatError(f"not a {JUDGEMENT_SCHEMA} line")
        fields = {name: payload.get(name) for name in cls.__dataclass_fields__}
        for name in ("answer_logprob", "seconds"):
            if isinstance(fields[name], int) and not isinstance(fields[name], bool):
                fields[name] = float(fields[name])
        if not isinstance(fields["doc_id"], (int, str)) or isinstance(fields["doc_id"], bool):
            raise RecordFormatError(f"doc_id must be an integer or a string, got {fields['doc_id']!r}")
        for name in ("task", "model"):
            if not isinstance(fields[name], str):
                raise RecordFormatError(f"{name} must be a string, got {fields[name]!r}")
        return cls(**fields)


def judgements_file(output_folder: Path, task: str, judge: str) -> Path:
    """Where the judgements of ``judge`` on ``task``'s records of an lm-eval output folder live."""
    return output_folder / JUDGEMENTS_FOLDER / f"{task}.{judge}.jsonl"


def write_judgements(path: Path, judgements: Iterable[Judgement]) -> None:
    """Write ``judgements`` (each line read back first, as the reader reads it); an existing file is refused: a
    judgement is recomputed by deleting its file."""
    lines = []
    for judgement in judgements:
        line = judgement.to_json()
        Judgement.from_json(line)
        lines.append(line + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as handle:
        handle.writelines(lines)


def read_judgements(path: Path) -> Iterator[Judgement]:
    """The judgements of a file, each line checked; an unreadable line raises :class:`RecordFormatError` naming
    ``path:line``."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                yield Judgement.from_json(line)
            except (RecordFormatError, ValueError, TypeError) as error:
                raise RecordFormatError(f"{path}:{number}: {error}") from None


def judgements_beside(record_file: Path) -> dict[tuple[str, str, str], Judgement]:
    """The judgements in the lm-eval output folder a record file sits in (``<output>/trac_judgements/*.jsonl``, for
    ``<output>/trac_records/<file>``), keyed by (task, model, document id as text). A response two judgements cover
    is refused naming both files: one judge per run (docs/method.md#cross-model-score)."""
    folder = record_file.parent.parent / JUDGEMENTS_FOLDER
    found: dict[tuple[str, str, str], Judgement] = {}
    origin: dict[tuple[str, str, str], Path] = {}
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        for judgement in read_judgements(path):
            key = (judgement.task, judgement.model, str(judgement.doc_id))
            if key in found:
                raise RecordFormatError(
                    f"{path}: {judgement.model} / {judgement.task} document {key[2]} is judged in {origin[key]} too; "
                    "keep one judge's file per run"
                )
            found[key], origin[key] = judgement, path
    return found
