"""Stored TrAC runs → one :class:`PairRun` per (model, task, decoding): the unit of every cross-run table
(docs/method.md#pair-equal-macro-average).

``lm_eval ... --output_path OUT`` writes the records of each TrAC task to ``OUT/trac_records/<task>.<stamp>.jsonl``.
:func:`find_record_files` finds them under any number of folders (or takes the files themselves);
:func:`load_pairs` streams every file once, turns each question into its evidence dict
(:func:`trac_metrics.features.evidence.question_evidence`) as soon as its K records have been read (records carry K),
and keeps only those small dicts and the timing sums: the per-token arrays of a question are dropped when it is
complete, so memory grows with the number of questions, not with the number of generated tokens. The trace probes'
token counts are summed on the way (:attr:`PairRun.probe_cache`, docs/method.md#probe-cache-share). A question with
fewer records than its K (a run cut short) is dropped with a warning: see :func:`load_pairs`. A caller that needs
more of each question than its evidence (the HTML report's primary trace) passes a ``details`` function of the
question's records; its small result is kept beside the evidence, computed in the same single pass.

Records of the same (model, task, decoding) found in several files are one pair (a run resumed into a new file);
a question met twice is an error naming both files (two generations of one pair cannot be told apart), and so is a
pair whose files hold both probes: records of schema ``trac-record/1`` (the probe read the answer it tests) beside
newer ones (the paper's Q(x, r), docs/method.md#probe-prompt), since every probe-based number of a pair must come from
one probe.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from trac_metrics._util.parallel import Progress, parallel_map
from trac_metrics._warnings import TracWarning
from trac_metrics.features.cache_share import ProbeCacheCounts, probe_cache_counts
from trac_metrics.features.cross_model import Judgement, judgements_beside
from trac_metrics.features.evidence import DEFAULT_OPTIONS, EvidenceOptions, question_evidence, undecided_total
from trac_metrics.features.probe_agreement import ProbeAgreement, probe_agreement, reads_answer
from trac_metrics.heads.calibration_maps import DEFAULT_CALIBRATION_MAP
from trac_metrics.heads.evaluate import TaskEvaluation, evaluate_task
from trac_metrics.methods import FeatureRow, get, head_features
from trac_metrics.records import BUILT_IN_LABELLER, DECODING_TOP_K, ResponseRecord, iter_records
from trac_metrics.reporting.wall_clock import QuestionWallClock, measured_latency, question_wall_clock
from trac_metrics.selective import DEFAULT_ECE_BINS

RECORDS_FOLDER = "trac_records"


class NoRecordsError(ValueError):
    """The paths given to a report hold no TrAC records: no record files, or files without one complete question."""


@dataclass(frozen=True)
class PairRun:
    """One (model, task, decoding) pair of stored runs, reduced to per-question evidence and timing sums.

    ``evidences`` are in document order (numeric ids numerically). ``seconds`` sums engine seconds over all
    responses: ``generation`` (all K samples), ``probe_<variant>`` (primary responses only, so that per-question
    costs compare; ``probe_prefix`` sums a primary's prefix probes) and ``p_true``; ``primary_responses`` and
    ``responses`` count what was summed. ``details`` holds, in the order of ``evidences``, what the ``details``
    function given to :func:`load_pairs` returned for each question (empty when none was given). ``probe_cache``
    sums the trace probes' token counts of all its responses (docs/method.md#probe-cache-share). ``wall_clock``
    holds the arrival times of the questions that stored them (docs/method.md#measured-latency).
    """

    model: str
    task: str
    decoding: Mapping[str, float]
    evidences: tuple[dict[str, Any], ...]
    seconds: Mapping[str, float] = field(default_factory=dict)
    responses: int = 0
    sources: tuple[Path, ...] = ()
    details: tuple[Any, ...] = ()
    probe_cache: ProbeCacheCounts = ProbeCacheCounts()
    wall_clock: tuple[QuestionWallClock, ...] = ()

    @property
    def name(self) -> str:
        """``model / task`` plus the decoding when it is not the paper's default (T = 0.7 → greedy probe)."""
        base = f"{self.model} / {self.task}"
        label = decoding_label(self.decoding)
        return base if label == decoding_label(DEFAULT_DECODING) else f"{base} [{label}]"

    @property
    def labels(self) -> np.ndarray:
        """1 where the primary answer is correct, one entry per question."""
        return np.asarray([evidence["correct"] for evidence in self.evidences], dtype=np.int64)

    @property
    def num_samples(self) -> int:
        """K, the responses per question: the K the records declare, since :func:`load_pairs` drops incomplete
        questions (the smallest K when the questions of a pair declare different ones)."""
        return min(evidence["num_samples"] for evidence in self.evidences)

    @property
    def accuracy(self) -> float:
        return float(self.labels.mean())

    @property
    def probe_agreement(self) -> ProbeAgreement:
        """How often the re-elicited answer agrees with the primary on correct and on wrong responses, and whether
        the probes read the answer they test (docs/method.md#probe-agreement)."""
        return probe_agreement(self.evidences)

    @property
    def undecided_comparisons(self) -> int:
        """Comparisons of its answers that ran out of the symbolic work budget while its questions were labelled
        (undecided, counted as not equivalent; docs/method.md#the-symbolic-work-budget)."""
        return undecided_total(self.evidences)

    @property
    def labellers(self) -> tuple[str, ...]:
        """The labellers of its questions' labels (docs/method.md#labels; evidence without one: trac-eval's
        checker)."""
        return tuple(sorted({evidence.get("labeller", BUILT_IN_LABELLER) for evidence in self.evidences}))

    def relative_latency(self, method: str) -> float:
        """Cost of ``method`` per question in units of one generation, from this run's own engine timings
        (docs/method.md#relative-latency): the registered method's :class:`~trac_metrics.methods.Cost`, one
        generation or K, plus its extra engine seconds (a probe, P(True)) over one generation's seconds. An extra
        share is NaN when the run stored no (or zero) generation timings; an unregistered method is a ValueError."""
        cost = get(method).cost
        per_generation = self.seconds.get("generation", math.nan) / max(self.responses, 1)
        questions = len(self.evidences)

        def extra(key: str) -> float:
            if not per_generation > 0:
                return math.nan
            return self.seconds.get(key, math.nan) / questions / per_generation

        return cost.relative_latency(self.num_samples, extra)

    def measured_latency(self, method: str) -> float:
        """The wall-clock seconds ``method`` waits for per question over those of one generation, from this run's
        arrival times (docs/method.md#measured-latency); NaN for runs that did not store them."""
        return measured_latency(self.wall_clock, get(method).cost, self.num_samples)


DEFAULT_DECODING: Mapping[str, float] = {"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0}


def decoding_label(decoding: Mapping[str, float]) -> str:
    """``T=0.7→greedy`` style label of a primary → probe decoding (``?`` for what the records did not store); a
    sampled primary's top-p is named when it is not the default 0.95, and its top-k when one limited it
    (``T=0.7,top-k=20→greedy``), so distinct decodings get distinct labels."""

    def temperature(value: float | None) -> str:
        if value is None:
            return "?"
        return "greedy" if value == 0 else f"T={value:g}"

    primary = temperature(decoding.get("temperature"))
    top_p = decoding.get("top_p")
    if decoding.get("temperature") and top_p is not None and top_p != DEFAULT_DECODING["top_p"]:
        primary += f",top-p={top_p:g}"
    if decoding.get("temperature") and DECODING_TOP_K in decoding:
        primary += f",top-k={decoding[DECODING_TOP_K]:g}"
    return f"{primary}→{temperature(decoding.get('probe_temperature'))}"


def find_record_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every TrAC record file under the given folders (any depth), or the given ``.jsonl`` files themselves.

    Raises :class:`NoRecordsError` naming each folder that has none (so a typo is not a silently smaller report).
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise NoRecordsError(f"{path}: no such file or folder")
        files = sorted(file for file in path.rglob("*.jsonl") if file.parent.name == RECORDS_FOLDER)
        if not files:
            raise NoRecordsError(
                f"{path}: no TrAC records (lm_eval writes them to <output_path>/{RECORDS_FOLDER}/<task>.<time>.jsonl "
                "when a trac_* task runs on the vllm or hf backend)"
            )
        found.extend(files)
    return list(dict.fromkeys(path.resolve() for path in found))


PairKey = tuple[str, str, tuple[tuple[str, float], ...]]
Details = Callable[[Sequence[ResponseRecord]], Any]
"""What :func:`load_pairs` may keep of each question besides its evidence: a picklable function of the question's
records (in file order) returning a small, picklable value."""

_LISTED = 10
"""Incomplete questions a warning names one by one."""


def _pair_key(record: ResponseRecord) -> PairKey:
    return (record.model, record.task, tuple(sorted(record.decoding.items())))


class _PairAccumulator:
    def __init__(self, key: PairKey, options: EvidenceOptions, details: Details | None = None) -> None:
        self.key = key
        self.options = options
        self.keep = details
        self.evidences: dict[str, dict[str, Any]] = {}
        self.details: dict[str, Any] = {}
        self.origin: dict[str, Path] = {}
        self.seconds: dict[str, float] = defaultdict(float)
        self.responses = 0
        self.probe_cache = ProbeCacheCounts()
        self.wall_clock: list[QuestionWallClock] = []
        self.without_reasoning_count = 0
        """Questions whose primary record has no ``reasoning_tokens`` (written before it existed)."""
        self.sources: list[Path] = []
        self.probe_files: dict[bool, list[Path]] = {True: [], False: []}
        """The files whose trace probes read the answer they test (True) and those whose probes did not."""

    def _add_timing(self, record: ResponseRecord) -> None:
        self.responses += 1
        timing = record.timing
        if "generation_seconds" in timing:
            self.seconds["generation"] += float(timing["generation_seconds"])
        if record.repeat != 0:
            return
        if "p_true_seconds" in timing:
            self.seconds["p_true"] += float(timing["p_true_seconds"])
        for variant, probe in record.probes.items():
            if probe.seconds is not None:
                self.seconds[f"probe_{variant}"] += float(probe.seconds)
        for probe in record.prefix_probes:  # all of them together: probe_prefix
            if probe.seconds is not None:
                self.seconds[f"probe_{probe.variant}"] += float(probe.seconds)

    def add_question(self, records: list[ResponseRecord], path: Path, judgement: Judgement | None = None) -> None:
        """Add one complete question: its evidence (with a judge's ``judgement`` of its primary, when there is one),
        its details (when asked for), the engine seconds of its responses and their trace probes' token counts."""
        doc_id = str(records[0].doc_id)
        evidence = question_evidence(records, self.options, judgement)
        self._add(doc_id, evidence, path)
        if self.keep is not None:
            self.details[doc_id] = self.keep(records)
        self.probe_cache += probe_cache_counts(records)
        if (wall_clock := question_wall_clock(records)) is not None:
            self.wall_clock.append(wall_clock)
        primary = next(record for record in records if record.repeat == 0)  # question_evidence checked 0..K-1
        self.without_reasoning_count += primary.reasoning_tokens is None
        for record in records:
            self._add_timing(record)

    def _add(self, doc_id: str, evidence: dict[str, Any], path: Path) -> None:
        if doc_id in self.evidences:
            raise ValueError(
                f"{self.key[0]} / {self.key[1]}: question {doc_id} appears in {self.origin[doc_id]} and in {path}; "
                "pass one generation per (model, task, decoding) to a report (a rerun into the same folder? delete "
                "the file of the run it replaces)"
            )
        self.evidences[doc_id] = evidence
        self.origin[doc_id] = path
        if path not in self.sources:
            self.sources.append(path)
        files = self.probe_files[reads_answer([evidence])]
        if path not in files:
            files.append(path)

    def merge(self, other: _PairAccumulator) -> None:
        """Add the questions, timings, probe token counts and sources of ``other`` (the same pair read from another
        file)."""
        for doc_id, evidence in other.evidences.items():
            self._add(doc_id, evidence, other.origin[doc_id])
        self.details.update(other.details)
        for key, value in other.seconds.items():
            self.seconds[key] += value
        self.responses += other.responses
        self.probe_cache += other.probe_cache
        self.wall_clock += other.wall_clock
        self.without_reasoning_count += other.without_reasoning_count


def load_pairs(
    paths: Iterable[str | os.PathLike[str]],
    progress: Progress | None = None,
    options: EvidenceOptions = DEFAULT_OPTIONS,
    jobs: int | None = None,
    details: Details | None = None,
) -> list[PairRun]:
    """Stream the record files under ``paths`` into pairs, sorted by model, task and decoding.

    Files are read on ``jobs`` processes (default: every CPU this process may use; the result does not depend on
    it). ``progress`` wraps the stream of finished files (e.g. ``tqdm``). ``options`` say how each question's
    evidence is computed (:class:`~trac_metrics.features.evidence.EvidenceOptions`; ``trac rescore``). ``details``
    (:data:`Details`), when given, is called on each complete question's records in the same pass; its results are
    :attr:`PairRun.details`.

    A question with fewer records in a file than the K (``num_samples``) its records declare — a run killed before
    it finished the question — is dropped, with a :class:`~trac_metrics._warnings.TracWarning` naming it and how
    many of K were found: the sampling methods are defined on K samples and a question without its primary cannot
    be scored, so every question of a pair has its K responses and :attr:`PairRun.num_samples` is the declared K.
    Records without ``num_samples`` (older runs) make a question of whatever the file holds. A line cut off at the
    end of a file is skipped with a warning (:func:`~trac_metrics.records.iter_records`); any other unreadable line
    raises :class:`~trac_metrics.records.RecordFormatError` naming the file and line. Paths without one complete
    question (empty record files included) raise :class:`NoRecordsError`.
    """
    files = find_record_files(paths)
    pairs: dict[PairKey, _PairAccumulator] = {}
    for per_file in parallel_map(partial(_read_file, options=options, details=details), files, jobs, progress):
        for key, accumulator in per_file.items():
            pairs.setdefault(key, _PairAccumulator(key, options, details)).merge(accumulator)
    complete = sorted(
        ((key, accumulator) for key, accumulator in pairs.items() if accumulator.evidences), key=lambda item: item[0]
    )
    if not complete:
        found = "no complete question (each has fewer records than its num_samples)" if pairs else "no records"
        raise NoRecordsError(f"{found} in {', '.join(str(file) for file in files)}")
    return [_finish(key, accumulator) for key, accumulator in complete]


def _read_file(path: Path, options: EvidenceOptions, details: Details | None = None) -> dict[PairKey, _PairAccumulator]:
    """The pairs of one record file, each question reduced to its evidence as soon as its K records are read;
    incomplete questions are dropped with a warning (see :func:`load_pairs`)."""
    pairs: dict[PairKey, _PairAccumulator] = {}
    pending: dict[tuple[PairKey, str], list[ResponseRecord]] = {}
    judged = judgements_beside(path)
    for record in iter_records(path):
        key = _pair_key(record)
        pairs.setdefault(key, _PairAccumulator(key, options, details))
        question = (key, str(record.doc_id))
        pending.setdefault(question, []).append(record)
        if record.num_samples is not None and len(pending[question]) == record.num_samples:
            pairs[key].add_question(pending.pop(question), path, judged.get((key[1], key[0], question[1])))
    incomplete = []
    for (key, doc_id), records in pending.items():
        if records[0].num_samples is None:
            pairs[key].add_question(records, path, judged.get((key[1], key[0], doc_id)))
        else:
            incomplete.append(f"{key[0]} / {key[1]} question {doc_id} ({len(records)} of {records[0].num_samples})")
    if incomplete:
        shown = "; ".join(incomplete[:_LISTED]) + (
            f"; and {len(incomplete) - _LISTED} more" if len(incomplete) > _LISTED else ""
        )
        warnings.warn(
            f"{path}: dropped {len(incomplete)} incomplete question(s), with fewer records than their "
            f"num_samples K (a run cut short?): {shown}",
            TracWarning,
            stacklevel=2,
        )
    return pairs


def _finish(key: PairKey, accumulator: _PairAccumulator) -> PairRun:
    model, task, decoding = key
    if 0 < accumulator.without_reasoning_count < len(accumulator.evidences):
        warnings.warn(
            f"{model} / {task}: trace length counts the reasoning tokens of "
            f"{len(accumulator.evidences) - accumulator.without_reasoning_count} question(s) and every generated "
            f"token of {accumulator.without_reasoning_count} whose records predate reasoning_tokens "
            "(docs/method.md#trace-length): two definitions in one pair; regenerate the older records to compare "
            "trace lengths on one",
            TracWarning,
            stacklevel=3,
        )
    if all(accumulator.probe_files.values()):
        after, paper = (", ".join(map(str, accumulator.probe_files[flag])) for flag in (True, False))
        raise ValueError(
            f"{model} / {task}: its records hold two different answer probes, which one pair cannot mix: the probe "
            f"after the answer (schema trac-record/1) in {after}, and the paper's Q(x, r) "
            f"(docs/method.md#probe-prompt) in {paper}; pass the files of one probe only, or regenerate the older ones"
        )
    ordered = sorted(accumulator.evidences.values(), key=lambda evidence: _doc_order(str(evidence["doc_id"])))
    kept = accumulator.details
    return PairRun(
        model=model,
        task=task,
        decoding=dict(decoding),
        evidences=tuple(ordered),
        seconds=dict(accumulator.seconds),
        responses=accumulator.responses,
        sources=tuple(accumulator.sources),
        details=tuple(kept[str(evidence["doc_id"])] for evidence in ordered) if kept else (),
        probe_cache=accumulator.probe_cache,
        wall_clock=tuple(accumulator.wall_clock),
    )


def _doc_order(doc_id: str) -> tuple[int, int, str]:
    return (0, int(doc_id), "") if doc_id.isdecimal() else (1, 0, doc_id)


def check_labellers(pairs: Sequence[PairRun], allow_mixed: bool = False) -> None:
    """Refuse to compare pairs whose labels come from different labellers (docs/method.md#labels): accuracy and
    every metric of a pair depend on its labeller, so a table mixing them would rank labellers, not methods.
    ``allow_mixed`` (``trac report --mix-labellers``) lets such a comparison through."""
    by_labeller: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        for labeller in pair.labellers:
            by_labeller[labeller].append(pair.name)
    if len(by_labeller) > 1 and not allow_mixed:
        listed = "; ".join(f"{labeller}: {', '.join(names)}" for labeller, names in sorted(by_labeller.items()))
        raise ValueError(
            f"the runs are labelled by different labellers ({listed}); compare runs of one labeller, relabel them "
            "all with --equivalence, or pass --mix-labellers"
        )


def with_min_errors(pairs: Sequence[PairRun], min_errors: int) -> tuple[list[PairRun], str | None]:
    """The pairs with at least ``min_errors`` wrong primary answers (``trac report --min-errors``: the paper keeps a
    BBH subtask pair when it has at least 15 errors, docs/method.md#dataset-sources), and the note naming those left
    out (None when none is). ValueError when no pair is left."""
    kept = [pair for pair in pairs if int((pair.labels == 0).sum()) >= min_errors]
    left = [f"{pair.name} ({int((pair.labels == 0).sum())})" for pair in pairs if pair not in kept]
    if not kept:
        raise ValueError(f"--min-errors {min_errors}: no pair has that many wrong answers ({', '.join(left)})")
    note = f"Left out, with fewer than {min_errors} wrong answers (--min-errors): {', '.join(left)}." if left else None
    return kept, note


def dropped_methods(pair: PairRun, heads: Mapping[str, FeatureRow]) -> dict[str, int]:
    """The methods some but not all questions of ``pair`` can be scored by, each with how many of its questions lack
    it: a baseline score a question does not have, or a head's features (of ``heads``) it does not have, as in a run
    resumed without the ``p_true`` or ``prefix_probes`` switch. The evaluation leaves such a method out of the pair
    (a method's metrics are defined on every question of a pair or not at all)."""
    evidences = pair.evidences
    lacking: dict[str, int] = {}
    for name in dict.fromkeys(name for evidence in evidences for name in evidence["baselines"]):
        count = sum(name not in evidence["baselines"] for evidence in evidences)
        if count:
            lacking[name] = count
    for method, row_of in heads.items():
        count = sum(row_of(evidence) is None for evidence in evidences)
        if 0 < count < len(evidences):
            lacking[method] = count
    return lacking


def evaluate_pairs(
    pairs: Sequence[PairRun],
    heads: Mapping[str, FeatureRow] | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    calibration_map: str = DEFAULT_CALIBRATION_MAP,
    ece_bins: int = DEFAULT_ECE_BINS,
) -> list[TaskEvaluation]:
    """:func:`~trac_metrics.heads.evaluate.evaluate_task` of every pair, on ``jobs`` processes (default: every CPU; the
    result does not depend on it): for the default ``heads`` (the registry's task heads), ``calibration_map`` and
    ``ece_bins`` exactly the numbers lm-eval's aggregation reports for that task (cross-fitted heads, baselines)."""
    heads = head_features() if heads is None else heads
    evaluate = partial(_evaluate_pair, heads=dict(heads), calibration_map=calibration_map, ece_bins=ece_bins)
    return parallel_map(evaluate, pairs, jobs, progress)


def _evaluate_pair(
    pair: PairRun, heads: Mapping[str, FeatureRow], calibration_map: str, ece_bins: int
) -> TaskEvaluation:
    return evaluate_task(pair.evidences, heads=heads, calibration_map=calibration_map, ece_bins=ece_bins)
