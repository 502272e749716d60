"""Online use of a TrAC head or a calibrated baseline: fit once on labelled runs, save it, score the records of new
runs (``trac fit`` / ``trac score``; docs/method.md#saved-heads, docs/method.md#abstention-threshold: the saved
preprocessing and head score a response without the reference answer, and the score can support abstention).

A baseline (``trac fit --method mean_logprob``) is saved as its calibration map fitted on every training question
(:class:`~trac_metrics.heads.calibration_maps.CalibrationMap`, docs/method.md#calibration-maps): it turns the
baseline's score into a probability of correctness. Either model predicts that probability for new runs, and
``trac score`` reports its calibration there (ECE, Brier, log loss) next to AUROC / AURC of the method's score.

:func:`fit_online_head` fits one method's head (``heads.fit_head``: imputation with missingness indicators, scaler,
L2 logistic regression) on every question of the training runs; the feature rows are those of
:func:`trac_metrics.methods.head_features`, so the saved head reads exactly what the cross-fitted evaluation reads. With
calibration runs it also chooses an abstention threshold (:func:`choose_threshold`). The head's metadata records
the method, the evidence options the rows were computed with, the training (and calibration) pairs and the
threshold, so :func:`score_pairs` can read new runs the same way and compare realized coverage and risk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from trac_metrics import selective
from trac_metrics.features.evidence import DEFAULT_OPTIONS, GENERATION_SPAN, EvidenceOptions
from trac_metrics.heads import (
    FittedHead,
    HeadFormatError,
    check_fields,
    expect,
    fit_head,
    is_finite_number,
    is_number,
)
from trac_metrics.heads.calibration_maps import (
    DEFAULT_CALIBRATION_MAP,
    MAP_KIND,
    CalibrationMap,
    fit_calibration_map,
)
from trac_metrics.heads.logistic import load_checked
from trac_metrics.methods import Method, calibrated_methods, get, saved_head_methods
from trac_metrics.reporting.runs import PairRun

DEFAULT_TARGET_RISK = 0.1
"""The target risk ``trac fit --calibration`` uses when none is given."""

SavedModel = FittedHead | CalibrationMap
"""What ``trac fit`` saves: a head, or a baseline's calibration map."""


def saved_methods() -> tuple[str, ...]:
    """The methods ``trac fit`` can save: the heads whose columns are named, then the calibrated baselines."""
    return saved_head_methods() + calibrated_methods()


def _saved_head(method: str) -> Method:
    """The registered head ``method`` when ``trac fit`` can save it (its columns are named), else a ValueError."""
    if method not in saved_head_methods():
        raise ValueError(f"online heads are {saved_head_methods()}, got {method!r}")
    return get(method)


def head_feature_names(method: str, n_bins: int) -> tuple[str, ...]:
    """Column names of ``method``'s feature rows with TUP's J = ``n_bins`` (``Method.feature_names``): φ_A, φ_P,
    [φ_A; φ_P], [φ_A; φ_P; q_K; h_K] for the built-in pce, tup, trac and cf heads."""
    return _saved_head(method).feature_names(n_bins)


def feature_rows(pair: PairRun, method: str) -> np.ndarray:
    """``method``'s feature row of every question of ``pair`` (NaN = missing value); a question without the row
    (``cf`` with K = 1) is a ValueError naming the pair."""
    row_of = _saved_head(method).features
    rows = [row_of(evidence) for evidence in pair.evidences]
    missing = [str(evidence["doc_id"]) for evidence, row in zip(pair.evidences, rows, strict=True) if row is None]
    if missing:
        raise ValueError(
            f"{pair.name}: {len(missing)} of {len(rows)} questions have no {method} features (e.g. doc "
            f"{missing[0]}; cf needs K > 1 samples per question)"
        )
    return np.asarray(rows, dtype=np.float64)


def baseline_scores(pair: PairRun, method: str) -> np.ndarray:
    """The baseline ``method``'s score of every question of ``pair``; a missing or non-finite score (P(True) not
    recorded, no tokens) is a ValueError naming the pair."""
    values = [evidence["baselines"].get(method) for evidence in pair.evidences]
    scores = np.asarray([np.nan if value is None else value for value in values], dtype=np.float64)
    if not np.isfinite(scores).all():
        bad = int((~np.isfinite(scores)).sum())
        raise ValueError(f"{pair.name}: {bad} of {scores.size} questions have no finite {method} score")
    return scores


def _inputs(pair: PairRun, method: str) -> np.ndarray:
    """What ``method``'s saved model reads of each question: a head's feature rows, a baseline's scores."""
    return feature_rows(pair, method) if method in saved_head_methods() else baseline_scores(pair, method)


def _stacked(pairs: Sequence[PairRun], method: str) -> tuple[np.ndarray, np.ndarray]:
    if not pairs:
        raise ValueError("no runs given")
    inputs = [_inputs(pair, method) for pair in pairs]
    stacked = np.vstack(inputs) if inputs[0].ndim == 2 else np.concatenate(inputs)
    return stacked, np.concatenate([pair.labels for pair in pairs])


class NoThresholdError(ValueError):
    """No score threshold reaches the target risk on the calibration questions."""


@dataclass(frozen=True)
class Threshold:
    """Accept a question when its score ≥ ``value``; ``coverage`` and ``risk`` are those on the calibration set."""

    value: float
    target_risk: float
    coverage: float
    risk: float


def choose_threshold(scores: Any, labels: Any, target_risk: float) -> Threshold:
    """The lowest threshold t among the calibration scores whose accepted set {score ≥ t} has empirical risk
    (share of wrong answers among the accepted) ≤ ``target_risk``: of all feasible thresholds the one with the
    largest coverage. Tied scores are accepted or refused together. Raises :class:`NoThresholdError` when no
    threshold is feasible (not even accepting only the top-scored tie group), naming the smallest risk reached.
    """
    if not 0.0 <= target_risk < 1.0:
        raise ValueError(f"target risk must be in [0, 1), got {target_risk}")
    values = np.asarray(scores, dtype=np.float64)
    correct = selective.as_binary_labels(labels)
    if values.ndim != 1 or values.size != correct.size or values.size == 0 or np.isnan(values).any():
        raise ValueError(
            f"need one finite score per calibration label, got {values.shape} scores for {correct.size} labels"
        )
    order = np.argsort(-values, kind="stable")
    ranked, errors = values[order], np.cumsum(~correct[order])
    group_ends = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))
    accepted = group_ends + 1
    risks = errors[group_ends] / accepted
    feasible = np.flatnonzero(risks <= target_risk)
    if not feasible.size:
        best = int(np.argmin(risks))
        raise NoThresholdError(
            f"no score threshold reaches risk <= {target_risk:g} on the {values.size} calibration questions; the "
            f"lowest risk is {risks[best]:.4f} (accepting the top {accepted[best]})"
        )
    chosen = feasible[-1]
    return Threshold(
        float(ranked[group_ends[chosen]]),
        float(target_risk),
        float(accepted[chosen] / values.size),
        float(risks[chosen]),
    )


def realized(accept: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(coverage, risk) of an accept mask: share accepted, share wrong among the accepted (NaN if none is)."""
    accept, labels = np.asarray(accept, dtype=bool), np.asarray(labels)
    coverage = float(accept.mean())
    return coverage, float(1.0 - labels[accept].mean()) if accept.any() else math.nan


def _pair_summary(pair: PairRun) -> dict[str, Any]:
    return {
        "model": pair.model,
        "task": pair.task,
        "decoding": dict(pair.decoding),
        "questions": len(pair.evidences),
        "accuracy": pair.accuracy,
    }


def _fitted(method: str, X: np.ndarray, y: np.ndarray, options: EvidenceOptions, form: str) -> SavedModel:
    """A head on the feature rows ``X``, or a baseline's ``form`` calibration map on its scores ``X``."""
    if method not in saved_head_methods():
        return fit_calibration_map(X, y, form)
    names = head_feature_names(method, options.n_bins)
    if X.shape[1] != len(names):
        raise ValueError(
            f"{method} rows have {X.shape[1]} columns but n_bins={options.n_bins} gives {len(names)}: "
            "read the runs with the same options"
        )
    return fit_head(X, y, names)


def fit_online_head(
    pairs: Sequence[PairRun],
    method: str = "trac",
    options: EvidenceOptions = DEFAULT_OPTIONS,
    calibration: Sequence[PairRun] = (),
    target_risk: float | None = None,
    calibration_map: str = DEFAULT_CALIBRATION_MAP,
) -> SavedModel:
    """``method``'s model fitted on every question of ``pairs`` (read with ``options``), with its metadata: the head
    of a learned method, the ``calibration_map`` map of a baseline (:func:`saved_methods`).

    With ``calibration`` pairs (read with the same options) and ``target_risk``, the metadata also holds the
    abstention threshold of :func:`choose_threshold` on the model's calibration probabilities and its calibration
    coverage and risk. Metadata keys: ``method``, ``evidence_options``, ``training_pairs``, ``training_questions``,
    ``threshold``, ``target_risk``, ``calibration_coverage``, ``calibration_risk``, ``calibration_pairs``
    (the last five None without calibration).
    """
    if bool(calibration) != (target_risk is not None):
        raise ValueError("an abstention threshold needs both calibration runs and a target risk")
    if method not in saved_methods():
        raise ValueError(f"trac fit saves {saved_methods()}, got {method!r}")
    X, y = _stacked(pairs, method)
    head = _fitted(method, X, y, options, calibration_map)
    metadata: dict[str, Any] = {
        "method": method,
        "evidence_options": options.to_dict(),
        "training_pairs": [_pair_summary(pair) for pair in pairs],
        "training_questions": int(y.size),
        "threshold": None,
        "target_risk": None,
        "calibration_coverage": None,
        "calibration_risk": None,
        "calibration_pairs": None,
    }
    if calibration:
        X_cal, y_cal = _stacked(calibration, method)
        threshold = choose_threshold(head.predict(X_cal), y_cal, target_risk)
        metadata.update(
            threshold=threshold.value,
            target_risk=threshold.target_risk,
            calibration_coverage=threshold.coverage,
            calibration_risk=threshold.risk,
            calibration_pairs=[_pair_summary(pair) for pair in calibration],
        )
    return replace(head, metadata=metadata)


METADATA_FIELDS = (
    "method",
    "evidence_options",
    "training_pairs",
    "training_questions",
    "threshold",
    "target_risk",
    "calibration_coverage",
    "calibration_risk",
    "calibration_pairs",
)
"""The metadata of a head written by :func:`fit_online_head` (all required)."""
_CALIBRATION_FIELDS = ("target_risk", "calibration_coverage", "calibration_risk", "calibration_pairs")
"""The metadata that a threshold comes with, and that is null without one."""
_PAIR_FIELDS = ("model", "task", "decoding", "questions", "accuracy")
_OPTION_FIELDS = tuple(item.name for item in fields(EvidenceOptions))


def _is_count(value: Any) -> bool:
    return is_number(value) and isinstance(value, int) and value >= 1


def _is_share(value: Any) -> bool:
    """A number in [0, 1] (a coverage, risk, accuracy or score)."""
    return is_finite_number(value) and 0 <= value <= 1


def _check_pairs(pairs: Any, name: str) -> None:
    """``pairs`` is a non-empty list of :func:`_pair_summary` objects."""
    expect(isinstance(pairs, list) and len(pairs) > 0, name, "a non-empty list of pair summaries", pairs)
    for index, pair in enumerate(pairs):
        where = f"{name}[{index}]"
        expect(isinstance(pair, dict), where, "a JSON object", pair)
        check_fields(pair, _PAIR_FIELDS, f"{where}.")
        for key in ("model", "task"):
            expect(isinstance(pair[key], str), f"{where}.{key}", "a string", pair[key])
        decoding = pair["decoding"]
        expect(
            isinstance(decoding, dict)
            and all(value is None or isinstance(value, str) or is_finite_number(value) for value in decoding.values()),
            f"{where}.decoding",
            "a JSON object of finite numbers, strings or nulls",
            decoding,
        )
        expect(_is_count(pair["questions"]), f"{where}.questions", "a positive integer", pair["questions"])
        expect(_is_share(pair["accuracy"]), f"{where}.accuracy", "a number in [0, 1]", pair["accuracy"])


def check_head(head: SavedModel) -> None:
    """Check that ``head`` is what :func:`fit_online_head` writes: every field of :data:`METADATA_FIELDS` and no
    other, each of its JSON type and range, a threshold together with its calibration fields (or none of them), a
    head's method a saved head's and its feature names the method's columns for the stored ``n_bins``, a map's
    method a calibrated baseline. The first violation is a :class:`~trac_metrics.heads.HeadFormatError` naming the
    field. Data only: a stored equivalence is never imported (:func:`head_options`)."""
    metadata = head.metadata
    method = metadata.get("method")
    is_map = isinstance(head, CalibrationMap)
    methods = calibrated_methods() if is_map else saved_head_methods()
    expect(
        method in methods,
        "metadata.method",
        f"one of {methods} (the {'map' if is_map else 'head'} was not written by trac fit)",
        method,
    )
    check_fields(metadata, METADATA_FIELDS, "metadata.")
    options = metadata["evidence_options"]
    expect(isinstance(options, dict), "metadata.evidence_options", "a JSON object", options)
    options = _with_span(options)
    check_fields(options, _OPTION_FIELDS, "metadata.evidence_options.")
    expect(
        options["equivalence"] is None or isinstance(options["equivalence"], str),
        "metadata.evidence_options.equivalence",
        "null or a MODULE:FUNCTION string",
        options["equivalence"],
    )
    try:
        EvidenceOptions.from_dict({**options, "equivalence": None})  # the other options, without importing anything
    except ValueError as error:
        raise HeadFormatError(f"field 'metadata.evidence_options': {error}") from None
    if not is_map:
        n_bins = options["n_bins"]  # a head with TUP columns has more than 2·J: never build the names of a huge J
        plausible = method == "pce" or 2 * n_bins < len(head.feature_names)
        columns = head_feature_names(method, n_bins) if plausible else None
        expect(
            head.feature_names == columns,
            "feature_names",
            f"the columns of a {method} head with n_bins={n_bins}",
            head.feature_names,
        )
    _check_pairs(metadata["training_pairs"], "metadata.training_pairs")
    expect(
        _is_count(metadata["training_questions"]),
        "metadata.training_questions",
        "a positive integer",
        metadata["training_questions"],
    )
    if metadata["threshold"] is None:
        for name in _CALIBRATION_FIELDS:
            expect(metadata[name] is None, f"metadata.{name}", "null, as the threshold is null", metadata[name])
        return
    expect(_is_share(metadata["threshold"]), "metadata.threshold", "null or a number in [0, 1]", metadata["threshold"])
    for name in _CALIBRATION_FIELDS[:-1]:
        expect(
            _is_share(metadata[name]),
            f"metadata.{name}",
            "a number in [0, 1], as the head has a threshold",
            metadata[name],
        )
    _check_pairs(metadata["calibration_pairs"], "metadata.calibration_pairs")


def _model_from_dict(payload: Any) -> SavedModel:
    """A calibration map when the payload says so (its ``kind``), else a head (whose check names a wrong kind)."""
    is_map = isinstance(payload, dict) and payload.get("kind") == MAP_KIND
    return CalibrationMap.from_dict(payload) if is_map else FittedHead.from_dict(payload)


def load_head(path: str | os.PathLike[str]) -> SavedModel:
    """A head or calibration map saved by ``trac fit``, read and checked (:func:`check_head`): a file that is not
    one is a one-line :class:`~trac_metrics.heads.HeadFormatError` naming the file and the field."""
    return load_checked(path, _model_from_dict, check_head)


def _spec(equivalence: str | None) -> str:
    return "the built-in equivalence" if equivalence is None else f"--equivalence {equivalence!r}"


def head_options(head: SavedModel, equivalence: str | None = None) -> EvidenceOptions:
    """The evidence options the head's training rows were computed with, to read new runs the same way.

    A head is data: its ``equivalence`` is only a spec string, compared with ``equivalence``, the spec the caller
    was given on the command line (``trac score --equivalence``). A head fitted with a custom equivalence needs
    the same spec, a head fitted without one accepts none; a mismatch either way is a ValueError naming both. The
    options (which load the equivalence) are built only when both agree, so a head file never makes code run.
    """
    check_head(head)
    stored = head.metadata["evidence_options"]
    if stored["equivalence"] != equivalence:
        raise ValueError(
            f"the head was fitted with {_spec(stored['equivalence'])} but scoring was given "
            f"{_spec(equivalence)}: give trac score the equivalence the head was fitted with (a head "
            "file never names code to run by itself)"
        )
    return EvidenceOptions.from_dict(_with_span(stored))


def _with_span(options: dict[str, Any]) -> dict[str, Any]:
    """Stored evidence options with TUP's span: a head saved before the span was a switch profiled the whole
    generation (docs/method.md#tup-span)."""
    return {"tup_span": GENERATION_SPAN, **options}


@dataclass(frozen=True)
class PairScores:
    """A target pair scored by a saved model: the method's score and probability of correctness per question (the
    same for a head; a baseline's raw score and its calibrated probability), and the accept mask when it has a
    threshold (on the probability)."""

    pair: PairRun
    scores: np.ndarray
    probabilities: np.ndarray
    accept: np.ndarray | None

    @property
    def labels(self) -> np.ndarray:
        return self.pair.labels

    def auroc(self) -> float:
        return selective.auroc(self.scores, self.labels)

    def aurc(self) -> float:
        return selective.aurc(self.scores, self.labels)

    def calibration(self) -> dict[str, float]:
        """ECE, Brier and log loss of the probabilities on this pair (docs/method.md#calibration)."""
        values, labels = self.probabilities, self.labels
        return {
            "ece": selective.ece(values, labels),
            "brier": selective.brier(values, labels),
            "log_loss": selective.log_loss(values, labels),
        }


def score_pairs(head: SavedModel, pairs: Sequence[PairRun]) -> list[PairScores]:
    """Score every question of ``pairs`` (read with :func:`head_options`) with a model from :func:`fit_online_head`.

    Rows of another width than the head's (another TUP J, another method) are refused with a ValueError.
    """
    check_head(head)
    method, threshold = head.metadata["method"], head.metadata["threshold"]
    scored = []
    for pair in pairs:
        inputs = _inputs(pair, method)
        if isinstance(head, FittedHead) and inputs.shape[1] != len(head.feature_names):
            raise ValueError(
                f"{pair.name}: the {method} rows have {inputs.shape[1]} features but the head was fitted on "
                f"{len(head.feature_names)} (evidence options {head.metadata.get('evidence_options')}): read the "
                "target runs with the feature configuration the head was fitted with"
            )
        probabilities = head.predict(inputs)
        scores = probabilities if isinstance(head, FittedHead) else inputs
        accept = None if threshold is None else probabilities >= threshold
        scored.append(PairScores(pair, scores, probabilities, accept))
    return scored


def _finite_or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def score_lines(scored: Sequence[PairScores]) -> Iterator[dict[str, Any]]:
    """One JSON-ready dict per question: model, task, decoding, doc_id, score and p_correct (None where NaN; the
    same for a head), accept (None without a threshold), correct."""
    for item in scored:
        for index, evidence in enumerate(item.pair.evidences):
            yield {
                "model": item.pair.model,
                "task": item.pair.task,
                "decoding": dict(item.pair.decoding),
                "doc_id": evidence["doc_id"],
                "score": _finite_or_none(float(item.scores[index])),
                "p_correct": _finite_or_none(float(item.probabilities[index])),
                "accept": None if item.accept is None else bool(item.accept[index]),
                "correct": int(evidence["correct"]),
            }


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def format_scores(head: SavedModel, scored: Sequence[PairScores]) -> str:
    """Per pair AUROC / AURC of the method's score and ECE / Brier / log loss of its probability, and with a threshold
    the realized coverage / risk per pair and over all target questions next to the calibration values."""
    metadata = head.metadata
    threshold = metadata.get("threshold")
    model = f"{head.form} calibration map" if isinstance(head, CalibrationMap) else "head"
    lines = [
        (
            f"{metadata['method']} {model} fitted on {metadata['training_questions']} questions of "
            f"{len(metadata['training_pairs'])} pair(s)"
        )
    ]
    if threshold is not None:
        lines.append(
            f"abstention threshold {threshold:.4f} (target risk {metadata['target_risk']:g}; calibration "
            f"coverage {metadata['calibration_coverage']:.4f}, risk {metadata['calibration_risk']:.4f})"
        )
    header = f"{'pair':<40} | {'questions':>9} | {'accuracy':>8} | {'AUROC':>7} | {'AURC':>7}"
    header += f" | {'ECE':>7} | {'Brier':>7} | {'log loss':>8}"
    lines.append(header + (f" | {'coverage':>8} | {'risk':>7}" if threshold is not None else ""))
    for item in scored:
        calibration = item.calibration()
        line = (
            f"{item.pair.name:<40} | {len(item.scores):>9} | {_number(item.pair.accuracy):>8} | "
            f"{_number(item.auroc()):>7} | {_number(item.aurc()):>7} | {_number(calibration['ece']):>7} | "
            f"{_number(calibration['brier']):>7} | {_number(calibration['log_loss']):>8}"
        )
        if item.accept is not None:
            coverage, risk = realized(item.accept, item.labels)
            line += f" | {_number(coverage):>8} | {_number(risk):>7}"
        lines.append(line)
    training = {
        (item["model"], item["task"], tuple(sorted(item["decoding"].items()))) for item in metadata["training_pairs"]
    }
    in_sample = [
        item.pair.name
        for item in scored
        if (item.pair.model, item.pair.task, tuple(sorted(item.pair.decoding.items()))) in training
    ]
    if in_sample:
        lines.append(f"note: {', '.join(in_sample)} were training pairs of this head: their scores are in-sample")
    if threshold is not None and scored:
        coverage, risk = realized(
            np.concatenate([item.accept for item in scored]), np.concatenate([item.labels for item in scored])
        )
        lines.append(
            f"all target questions: coverage {_number(coverage)} (calibration "
            f"{metadata['calibration_coverage']:.4f}), risk {_number(risk)} (calibration "
            f"{metadata['calibration_risk']:.4f}, target {metadata['target_risk']:g})"
            + ("; no question accepted, so the risk is undefined" if math.isnan(risk) else "")
        )
    return "\n".join(lines)
