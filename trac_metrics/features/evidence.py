"""Per-question evidence: the label, features and baseline scores of one question's K responses
(docs/architecture.md#evidence); the baselines are those of the method registry (:func:`baseline_scores`).

:func:`question_evidence` turns the records of one question (repeat 0 is the primary response) into a plain,
JSON-serializable dict. It is the unit every consumer works on: the lm-eval aggregation (one per document, also
written to lm-eval's samples file) and ``trac report`` / ``trac rescore`` on stored records alike. The reference
answer enters only the label, never a feature or a baseline score.

:class:`EvidenceOptions` changes how the evidence is computed from the same records (``trac rescore``): the answer
kind used by the normalizer, a user equivalence relation, and TUP's J / W / τ (docs/method.md#trace-uncertainty-profile,
docs/method.md#hyperparameters). The default options
are the paper's configuration and give exactly the evidence of a plain call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from trac_metrics.answers import (
    ANSWER_KINDS,
    UNDECIDED_KEY,
    Equivalence,
    answer_classes,
    counting_undecided,
    extract_answer,
    matches_reference,
    reference_aliases,
    use_equivalence,
)
from trac_metrics.answers.math_verify_reference import math_verify_equivalent, math_verify_label
from trac_metrics.features.cross_model import Judgement
from trac_metrics.features.leakage import answer_in_reasoning
from trac_metrics.features.vectors import (
    LOW_THRESHOLD,
    N_BINS,
    PCE_FEATURE_NAMES,
    TAIL_WINDOW,
    consensus_features,
    pce_features,
    tup_features,
)
from trac_metrics.heads import is_finite_number
from trac_metrics.methods import Question, scored_methods
from trac_metrics.records import BUILT_IN_LABELLER, MATH_VERIFY_LABELLER, RESPONSE_CONTEXTS, ResponseRecord

EVIDENCE_VERSION = 1
REASONING_SPAN, GENERATION_SPAN = "reasoning", "generation"
TUP_SPANS = (REASONING_SPAN, GENERATION_SPAN)
"""The spans TUP may profile (docs/method.md#tup-span): the reasoning body r, or the whole generation y."""
MATH_VERIFY = MATH_VERIFY_LABELLER
"""The ``--equivalence`` name of Math-Verify's default verdict (and the labeller a record names for it)."""


def resolve_equivalence(spec: str) -> Equivalence:
    """The function named by ``"package.module:function"`` or ``"path/to/file.py:function"`` (the argument of
    ``trac rescore --equivalence``; a module must be importable, a file is loaded once per process).

    ``"math-verify"`` names Math-Verify's own default verdict
    (:func:`trac_metrics.answers.math_verify_reference.math_verify_equivalent`).

    Raises ValueError naming the problem: no colon, a module or file that does not load, a missing attribute, or an
    attribute that is not callable.
    """
    if spec == MATH_VERIFY:
        return math_verify_equivalent
    source, colon, attribute = spec.rpartition(":")
    if not colon or not source or not attribute:
        raise ValueError(
            f"equivalence {spec!r} must be written MODULE:FUNCTION or FILE.py:FUNCTION, e.g. my_checks:same_answer"
        )
    try:
        target: Any = _module_from_file(source) if source.endswith(".py") else importlib.import_module(source)
    except (ImportError, OSError) as error:
        raise ValueError(f"equivalence {spec!r}: cannot load {source!r} ({error})") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"equivalence {spec!r}: {source} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"equivalence {spec!r} is not callable")  # noqa: TRY004 (a bad argument, like the others)
    return target


@functools.cache
def _module_from_file(path: str) -> ModuleType:
    location = Path(path).resolve()
    spec = importlib.util.spec_from_file_location(f"trac_equivalence_{abs(hash(str(location)))}", location)
    if spec is None or spec.loader is None or not location.is_file():
        raise ImportError(f"no Python file at {location}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class EvidenceOptions:
    """How :func:`question_evidence` computes a question's evidence; the defaults are the configuration of
    docs/method.md#hyperparameters.

    ``answer_kind``: None keeps each record's stored kind; one of ``answers.ANSWER_KINDS`` replaces it wherever
    answers are normalized and compared (label z, majority label, agreement e, answer classes, vote statistics).
    ``re_extract``: False keeps the stored extracted answers; True reads each response's answer again from its stored
    text with the current extractor (docs/method.md#answer-extraction), so a changed extractor needs no
    regeneration. A stored None (no answer: a cut-off box or a thinking section still open) stays None; the probe's
    answer, cut at the cue's closing brace, is kept.
    ``equivalence``: None, or ``"module:function"`` / ``"file.py:function"`` (:func:`resolve_equivalence`) naming
    ``f(answer, other, kind) -> bool`` that replaces :func:`trac_metrics.answers.equivalent` (through
    :func:`trac_metrics.answers.use_equivalence`).
    ``n_bins``, ``tail_window``, ``low_threshold``: TUP's J, W and τ (docs/method.md#trace-uncertainty-profile); φ_P has
    2·J + 11 numbers.
    ``tup_span``: the tokens TUP profiles (docs/method.md#tup-span): ``reasoning``, the reasoning body r the probe
    reads (the paper's Algorithm 1, ``TraceProfile(r)``), or ``generation``, every generated token (the answer
    statement and end-of-sequence included).

    Building options with an equivalence imports (runs) the code it names, so an equivalence must come from the
    command line, never from a file's content: a saved head stores its spec as data only
    (:func:`trac_metrics.heads.saved_heads.head_options` compares it with the command line's before anything is built).
    """

    answer_kind: str | None = None
    equivalence: str | None = None
    n_bins: int = N_BINS
    tail_window: int = TAIL_WINDOW
    low_threshold: float = LOW_THRESHOLD
    re_extract: bool = False
    tup_span: str = REASONING_SPAN

    def __post_init__(self) -> None:
        if self.tup_span not in TUP_SPANS:
            raise ValueError(f"tup_span must be one of {TUP_SPANS}, got {self.tup_span!r}")
        if self.answer_kind is not None and self.answer_kind not in ANSWER_KINDS:
            raise ValueError(f"answer kind must be one of {ANSWER_KINDS}, got {self.answer_kind!r}")
        for name in ("n_bins", "tail_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.re_extract, bool):
            raise ValueError(f"re_extract must be true or false, got {self.re_extract!r}")
        if not is_finite_number(self.low_threshold):
            raise ValueError(f"low_threshold must be a finite number, got {self.low_threshold!r}")
        if self.equivalence is not None:
            if not isinstance(self.equivalence, str):
                raise ValueError(f"equivalence must be a MODULE:FUNCTION string, got {self.equivalence!r}")
            resolve_equivalence(self.equivalence)

    def changes(self) -> dict[str, Any]:
        """The fields that differ from the default configuration (empty for the default)."""
        return {
            item.name: getattr(self, item.name) for item in fields(self) if getattr(self, item.name) != item.default
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (stored in a saved head's metadata)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> EvidenceOptions:
        """Inverse of :meth:`to_dict`; unknown keys are a ValueError."""
        unknown = set(payload) - {item.name for item in fields(cls)}
        if unknown:
            raise ValueError(f"unknown evidence options {sorted(unknown)}")
        return cls(**payload)


DEFAULT_OPTIONS = EvidenceOptions()


def _pce_of(primary: ResponseRecord, variant: str, kind: str) -> list[float] | None:
    """φ_A of the primary response's probe ``variant`` (None when that probe was not run)."""
    probe = primary.probes.get(variant)
    if probe is None:
        return None
    values = pce_features(primary.answer, probe.answer, probe.answer_logprobs, probe.first_token_logprob, kind=kind)
    return values.tolist()


def reasoning_span(primary: ResponseRecord) -> int:
    """How many leading generated tokens are the reasoning body r TUP profiles by default (docs/method.md#tup-span):
    those the trace probe read (its ``context_tokens``: the reasoning before the last end-of-thinking marker, a
    response without one cut before its answer statement, the whole of one with no answer); without that count (no
    trace probe, a record of schema trac-record/1) its ``reasoning_tokens``, else every generated token."""
    probe = primary.probes.get("trace")
    if probe is not None and probe.context in RESPONSE_CONTEXTS and probe.context_tokens is not None:
        return min(probe.context_tokens, primary.num_tokens)
    return primary.num_tokens if primary.reasoning_tokens is None else primary.reasoning_tokens


def _check_question(records: Sequence[ResponseRecord]) -> list[ResponseRecord]:
    if not records:
        raise ValueError("question_evidence needs at least one record")
    ordered = sorted(records, key=lambda record: record.repeat)
    keys = {(record.task, str(record.doc_id)) for record in ordered}
    if len(keys) != 1:
        raise ValueError(f"records of several questions were passed together: {sorted(keys)}")
    repeats = [record.repeat for record in ordered]
    if repeats != list(range(len(ordered))):
        raise ValueError(
            f"question {ordered[0].key[:2]} has repeats {repeats}; expected 0..{len(ordered) - 1} (with lm-eval's "
            "--use_cache, all K samples come back as one cached response: run TrAC tasks without it)"
        )
    if len({record.answer_kind for record in ordered}) != 1:
        raise ValueError(f"question {ordered[0].key[:2]} mixes answer kinds")
    if ordered[0].reference is None:
        raise ValueError(f"question {ordered[0].key[:2]} has no reference answer: it cannot be labelled")
    if len({record.labeller or BUILT_IN_LABELLER for record in ordered}) != 1:
        raise ValueError(f"question {ordered[0].key[:2]} mixes labellers: its records were written by different runs")
    return ordered


def question_evidence(
    records: Sequence[ResponseRecord], options: EvidenceOptions = DEFAULT_OPTIONS, judgement: Judgement | None = None
) -> dict[str, Any]:
    """Label, features and baseline scores of one question, computed as ``options`` say (with a judge's ``judgement``
    of the primary, the cross-model score among the baselines: docs/method.md#cross-model-score); see the module
    docstring.

    Keys: ``task``, ``doc_id``, ``num_samples`` (K), ``correct`` (primary answer ≡ reference, 0/1),
    ``majority_correct`` (modal answer ≡ reference), ``primary_answer``, ``reference``, ``probe_answer``,
    ``probe_context`` (what of the response the trace probe read, docs/method.md#probe-prompt; None without a probe),
    ``answer_in_reasoning`` (the reasoning already states the primary answer, docs/method.md#answer-leakage; None
    without an answer or for multiple choice),
    ``answers`` (the K answers, the primary first) and ``answer_classes`` (the equivalence class of each,
    docs/method.md#answer-classes-and-vote-shares), ``agree`` (e, NaN when missing), ``features`` (``pce``: φ_A,
    ``tup``: φ_P over ``options.tup_span``, ``tup_generation``: φ_P over the whole generation, ``consensus``: q_K,
    h_K, vote margin, q_K(a) when K > 1, ``pce_<variant>`` for ablation probes),
    ``baselines`` (score per method, higher = more likely correct, docs/method.md#baselines), ``metadata`` of the
    primary record, ``labeller`` (the relation that compared the answers: ``options.equivalence`` when given, else
    the labeller the records name, ``trac`` for trac-eval's checker; docs/method.md#labels), ``undecided_comparisons``
    (answer comparisons that ran out of work budget and were judged not equivalent; docs/method.md#labels).
    """
    ordered = _check_question(records)
    if options.re_extract:
        ordered = [_re_extracted(record, options.answer_kind or record.answer_kind) for record in ordered]
    labeller = options.equivalence if options.equivalence is not None else ordered[0].labeller or BUILT_IN_LABELLER
    relation = None if labeller == BUILT_IN_LABELLER else resolve_equivalence(labeller)
    relation_used = use_equivalence(relation) if relation is not None else contextlib.nullcontext()
    with relation_used, counting_undecided() as undecided:
        evidence = _evidence(ordered, options, labeller, judgement)
    evidence[UNDECIDED_KEY] = undecided.comparisons
    return evidence


def undecided_total(evidences: Sequence[dict[str, Any]]) -> int:
    """Comparisons that ran out of the symbolic work budget (docs/method.md#the-symbolic-work-budget), summed over
    the questions' evidence (:func:`question_evidence`)."""
    return sum(int(evidence.get(UNDECIDED_KEY, 0)) for evidence in evidences)


def _re_extracted(record: ResponseRecord, kind: str) -> ResponseRecord:
    """The record with its answer read again from its stored text (:attr:`EvidenceOptions.re_extract`)."""
    if record.answer is None:
        return record
    return dataclasses.replace(record, answer=extract_answer(record.text, kind, marker=record.marker or None))


def document_accuracy(evidence: dict[str, Any]) -> dict[str, int]:
    """The accuracy metrics lm-eval reports for one question of a TrAC task: ``acc`` (the primary answer is
    correct) and, when K > 1, ``maj_acc`` (the modal answer of the K samples is correct)."""
    metrics = {"acc": evidence["correct"]}
    if evidence["num_samples"] > 1:
        metrics["maj_acc"] = evidence["majority_correct"]
    return metrics


def task_accuracy(evidences: Sequence[dict[str, Any]]) -> dict[str, float]:
    """``acc`` and ``maj_acc`` of a task as lm-eval aggregates them: the mean of :func:`document_accuracy` over the
    questions that report each (no ``maj_acc`` when every question has K = 1)."""
    values: dict[str, list[int]] = {}
    for evidence in evidences:
        for name, value in document_accuracy(evidence).items():
            values.setdefault(name, []).append(value)
    return {name: float(np.mean(found)) for name, found in values.items()}


def _evidence(
    ordered: list[ResponseRecord], options: EvidenceOptions, labeller: str, judgement: Judgement | None = None
) -> dict[str, Any]:
    primary = ordered[0]
    kind = options.answer_kind or primary.answer_kind
    answers = [record.answer for record in ordered]
    classes = answer_classes(answers, kind=kind)
    profiles = {
        span: tup_features(
            primary.token_logprobs[:length].astype(np.float64),
            primary.topk_entropy[:length].astype(np.float64),
            n_bins=options.n_bins,
            tail_window=options.tail_window,
            low_threshold=options.low_threshold,
        ).tolist()
        for span, length in (
            (GENERATION_SPAN, primary.num_tokens),
            (REASONING_SPAN, reasoning_span(primary)),
        )
    }
    features: dict[str, Any] = {
        # a primary whose probe could not run (prompt beyond the context) has all of φ_A missing
        "pce": _pce_of(primary, "trace", kind) or [float("nan")] * len(PCE_FEATURE_NAMES),
        "tup": profiles[options.tup_span],
        "tup_generation": profiles[GENERATION_SPAN],
    }
    for variant in primary.probes:
        if variant != "trace":
            features[f"pce_{variant}"] = _pce_of(primary, variant, kind)
    majority = 0
    if len(ordered) > 1:
        features["consensus"] = consensus_features(answers, kind=kind)
        majority = _modal_index(classes)
    probe = primary.probes.get("trace")
    return {
        "version": EVIDENCE_VERSION,
        "task": primary.task,
        "doc_id": primary.doc_id,
        "num_samples": len(ordered),
        "correct": _label(primary, primary, kind, options, labeller),
        "majority_correct": _label(ordered[majority], primary, kind, options, labeller),
        "primary_answer": primary.answer,
        "reference": list(reference_aliases(primary.reference))
        if isinstance(primary.reference, tuple)
        else primary.reference,
        "probe_answer": None if probe is None else probe.answer,
        "probe_context": None if probe is None else probe.context,
        "answer_in_reasoning": answer_in_reasoning(primary, kind),
        "answers": answers,
        "answer_classes": classes,
        "agree": None if features["pce"] is None else features["pce"][0],
        "answer_token_logprob": answer_token_logprob(primary),
        "features": features,
        "baselines": baseline_scores(ordered, kind, judgement),
        "metadata": dict(primary.metadata),
        "labeller": labeller,
    }


def answer_token_logprob(record: ResponseRecord) -> float | None:
    """The mean log-probability of the tokens that spell the record's answer (its ``answer_tokens``,
    docs/method.md#answer-token-log-probability); None where the record locates none (no answer, an answer the
    extraction rewrote, a record written before the field): the heads that read it see NaN and add a missingness
    indicator."""
    if record.answer_tokens is None:
        return None
    start, end = record.answer_tokens
    return float(np.mean(record.token_logprobs[start:end].astype(np.float64)))


def baseline_scores(
    responses: Sequence[ResponseRecord], kind: str, judgement: Judgement | None = None
) -> dict[str, float]:
    """The score of every registered baseline (:func:`trac_metrics.methods.scored_methods`) on one question's
    responses, the primary first, oriented so that higher = more likely correct (docs/method.md#baselines); a
    baseline whose input the records lack (P(True) switched off) is left out."""
    question = Question(tuple(responses), kind, judgement)
    scores = {}
    for method in scored_methods(len(responses)):
        value = method.score(question)
        if value is not None:
            scores[method.name] = value if method.higher_is_confident else -value
    return scores


def _modal_index(classes: Sequence[int]) -> int:
    """The position of the first-seen representative of the largest equivalence class (ties: the class seen
    first), from the class of each answer (:func:`trac_metrics.answers.answer_classes`)."""
    counts = np.bincount(classes)
    return classes.index(int(np.argmax(counts)))


def _label(record: ResponseRecord, primary: ResponseRecord, kind: str, options: EvidenceOptions, labeller: str) -> int:
    """Whether ``record``'s answer is correct, 0/1: its stored task-scored label (docs/method.md#task-scored-labels)
    unless the options re-label (an equivalence, an answer kind or re-extraction given), else its answer ≡ the
    question's reference (or any of its aliases). Math-Verify labels a math response as lm-eval's
    Math-Verify-labelled tasks do: by the whole text lm-eval scores, read by its own extraction
    (docs/method.md#labels)."""
    relabel = options.equivalence is not None or options.answer_kind is not None or options.re_extract
    if record.label is not None and not relabel:
        return int(record.label)
    if labeller == MATH_VERIFY and kind == "math":
        return int(any(math_verify_label(record.text, alias) for alias in reference_aliases(primary.reference)))
    return int(matches_reference(record.answer, primary.reference, kind=kind))
