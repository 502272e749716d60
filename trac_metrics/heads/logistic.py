"""The logistic head every learned method shares, its JSON file and transfer heads (docs/method.md#learned-heads,
docs/method.md#preprocessing, docs/method.md#transfer-heads).

Every learned TrAC variant (PCE-only, TUP-only, TrAC, Consensus Fusion, Supervised Consensus) is the same head:
missingness indicators → mean imputation → standardization → L2 logistic regression (C = 1.0), fitted on a
training fold only ("Offline Preparation and Training": no test-fold statistic enters preprocessing). The steps
are sklearn's ``SimpleImputer(add_indicator=True, keep_empty_features=True)`` → ``StandardScaler`` →
``LogisticRegression(C=1.0)`` computed in numpy; the logistic objective (C·Σ log-loss + ½‖w‖², intercept not
penalized) is solved by Newton's method to convergence — the optimum lbfgs approaches (it stops at its tolerance,
~1e-4 away), at a small fraction of the cost, which matters for reports that fit thousands of heads. Cross-fitting
(out-of-fold scores) lives in :mod:`trac_metrics.heads.cross_fitting`; transfer heads (LODO / LOMO / global) fit
on source rows only (:func:`transfer_scores`).

A fitted head is stored as plain JSON (:class:`FittedHead`): the missing-value convention, the standardizer and the
logistic parameters are saved together, as the paper states, and scoring needs numpy only.
"""

from __future__ import annotations

import json
import math
import os
import reprlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from scipy.special import expit, log_expit

from trac_metrics._util.files import atomic_write
from trac_metrics._warnings import TracWarning

if TYPE_CHECKING:  # cross_fitting imports this module
    from trac_metrics.heads.cross_fitting import Fitter

T = TypeVar("T")

HEAD_KIND = "trac_metrics.FittedHead"
HEAD_FORMAT_VERSION = 1
"""``kind`` and ``version`` written into every saved head; :meth:`FittedHead.from_dict` accepts only these."""

SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)
"""The smallest positive normal float (about 2.2e-308): a divisor below it (a subnormal) has an infinite inverse."""

MIN_SAMPLES_PER_CLASS = 2
"""docs/method.md#degenerate-data: a training set with fewer samples of a class than this is degenerate (NaN +
warning)."""


# ----------------------------------------------------------------------------------------------- validation


def as_feature_matrix(X: Any, name: str = "X") -> np.ndarray:
    """``X`` as a 2-D float array with at least one row and column; NaN means missing, ±inf is rejected."""
    try:
        matrix = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a 2-D array of numbers (NaN = missing): {error}") from None
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows × features), got {matrix.ndim}-D with shape {matrix.shape}")
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {matrix.shape}")
    if np.isinf(matrix).any():
        raise ValueError(f"{name} contains ±inf; only finite values or NaN (= missing) are allowed")
    return matrix


def as_binary_labels(y: Any, n_rows: int | None = None) -> np.ndarray:
    """``y`` as a 1-D int array of 0/1 (with ``n_rows`` entries when given)."""
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.size == 0 or (n_rows is not None and labels.shape[0] != n_rows):
        expected = "one label per row" if n_rows is None else f"one label per row ({n_rows})"
        raise ValueError(f"y must be 1-D with {expected}, got shape {labels.shape}")
    try:
        numeric = labels.astype(float)
    except (TypeError, ValueError):
        raise ValueError("y must contain only 0/1 labels") from None
    if not np.isin(numeric, (0.0, 1.0)).all():
        bad = np.unique(labels[~np.isin(numeric, (0.0, 1.0))])[:5]
        raise ValueError(f"y must contain only 0/1 labels, found {bad.tolist()}")
    return numeric.astype(int)


def class_shortage(labels: np.ndarray) -> str | None:
    """Why ``labels`` cannot train a head (a class with fewer than 2 samples), or None when they can."""
    counts = np.bincount(labels, minlength=2)
    for label, count in enumerate(counts):
        if count < MIN_SAMPLES_PER_CLASS:
            return (
                f"{count} sample(s) of class {label} "
                f"(at least {MIN_SAMPLES_PER_CLASS} of each class are needed to fit a head)"
            )
    return None


# ----------------------------------------------------------------------------------------------- the head


def _preprocessing(features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Imputation means, indicator columns, scaler mean and scale learned from training rows
    (docs/method.md#preprocessing).

    As ``SimpleImputer(strategy="mean", add_indicator=True, keep_empty_features=True)``: the mean of the observed
    values (0 for a column with none, so the layout never depends on the fold), one 0/1 column per feature with a
    NaN in these rows, appended after the features. As ``StandardScaler``: population std, and scale 1 for a
    (numerically) constant column.
    """
    missing = np.isnan(features)
    observed = (~missing).sum(axis=0)
    sums = np.where(missing, 0.0, features).sum(axis=0)
    means = np.divide(sums, observed, out=np.zeros(features.shape[1]), where=observed > 0)
    indicators = np.flatnonzero(missing.any(axis=0))
    design = _design(features, means, indicators)
    center = design.mean(axis=0)
    variance = design.var(axis=0)
    n_rows = design.shape[0]
    eps = np.finfo(np.float64).eps
    constant = variance <= n_rows * eps * variance + (n_rows * center * eps) ** 2
    scale = np.where(constant, 1.0, np.sqrt(variance))
    return means, indicators, center, scale


def _design(features: np.ndarray, means: np.ndarray, indicators: np.ndarray) -> np.ndarray:
    """Imputed features followed by the missingness indicator columns."""
    missing = np.isnan(features)
    return np.hstack([np.where(missing, means, features), missing[:, indicators].astype(float)])


def _logistic_newton(design: np.ndarray, labels: np.ndarray, C: float, max_iter: int) -> tuple[np.ndarray, float]:
    """Minimize C·Σ_i log-loss + ½‖w‖² (intercept unpenalized; sklearn's L2 ``LogisticRegression`` objective) by
    Newton's method with backtracking; stops when the largest step is below 1e-10 or after ``max_iter`` steps."""
    augmented = np.hstack([design, np.ones((design.shape[0], 1))])
    penalty = np.full(augmented.shape[1], 1.0 / C)
    penalty[-1] = 0.0
    signs = 2.0 * labels - 1.0

    def objective(weights: np.ndarray) -> float:
        return float(-log_expit(signs * (augmented @ weights)).sum() + 0.5 * (penalty * weights**2).sum())

    weights = np.zeros(augmented.shape[1])
    current = objective(weights)
    for _ in range(max_iter):
        probabilities = expit(augmented @ weights)
        gradient = augmented.T @ (probabilities - labels) + penalty * weights
        hessian = (augmented * (probabilities * (1.0 - probabilities))[:, None]).T @ augmented + np.diag(penalty)
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        size = 1.0
        while size > 1e-8 and objective(weights - size * step) > current:
            size /= 2.0
        weights = weights - size * step
        current = objective(weights)
        if np.abs(size * step).max() < 1e-10:
            break
    return weights[:-1], float(weights[-1])


class HeadFormatError(ValueError):
    """A head (a saved file or a payload) that does not follow the :class:`FittedHead` schema. The message names the
    field, what was expected and what was found; :meth:`FittedHead.load` puts the file in front."""


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 2, 4, 4, 40, 40


def _shown(value: Any) -> str:
    """A value for an error message, abbreviated (a long or deeply nested value stays one short line)."""
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}: {_SHOWN.repr(list(value))}"
    return _SHOWN.repr(value)


def expect(valid: bool, field_name: str, expected: str, value: Any) -> None:
    """Raise :class:`HeadFormatError` "field 'F': expected E, got V" unless ``valid``."""
    if not valid:
        raise HeadFormatError(f"field {field_name!r}: expected {expected}, got {_shown(value)}")


def is_number(value: Any) -> bool:
    """A JSON number (int or float, not bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_float(value: int | float) -> float:
    """A JSON number as a float; an integer too large for a float becomes inf (so a finiteness check refuses it)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def is_finite_number(value: Any) -> bool:
    """A JSON number that is finite."""
    return is_number(value) and math.isfinite(as_float(value))


def check_fields(payload: dict[str, Any], names: Sequence[str], prefix: str = "") -> None:
    """Every field of ``names`` present in the JSON object ``payload``, and no other (reported as ``prefix`` + name)."""
    missing = [name for name in names if name not in payload]
    if missing:
        raise HeadFormatError(f"lacks the field {prefix + missing[0]!r} (expected the fields {', '.join(names)})")
    unknown = sorted(str(name) for name in payload if name not in names)
    if unknown:
        raise HeadFormatError(f"unknown field {prefix + unknown[0]!r} (expected only the fields {', '.join(names)})")


def json_list(payload: dict[str, Any], name: str, items: str, is_item: Callable[[Any], bool]) -> tuple[Any, ...]:
    """``payload[name]`` as a tuple, checked to be a JSON list whose every item passes ``is_item``."""
    value = payload[name]
    expect(isinstance(value, list) and all(is_item(item) for item in value), name, f"a list of {items}", value)
    return tuple(value)


def _check_version(version: Any) -> None:
    expect(
        is_number(version) and version == HEAD_FORMAT_VERSION,
        "version",
        f"{HEAD_FORMAT_VERSION} (the format this code reads)",
        version,
    )


HEAD_FIELDS = (
    "kind",
    "version",
    "feature_names",
    "impute_means",
    "indicator_features",
    "scaler_mean",
    "scaler_scale",
    "coef",
    "intercept",
    "metadata",
)
"""The fields of a saved head, all required (:meth:`FittedHead.to_dict`)."""


@dataclass(frozen=True)
class FittedHead:
    """A fitted head as plain numbers: scores new rows with numpy only, saves/loads as JSON
    (docs/method.md#saved-heads).

    Scoring a row x (columns in ``feature_names`` order): x̃_j = x_j, or ``impute_means[j]`` where x_j is NaN;
    z = [x̃, 1{x_j is NaN} for j in ``indicator_features``];
    u = σ(coef · (z − scaler_mean) / scaler_scale + intercept).
    """

    feature_names: tuple[str, ...]
    impute_means: tuple[float, ...]
    indicator_features: tuple[int, ...]
    scaler_mean: tuple[float, ...]
    scaler_scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    version: int = HEAD_FORMAT_VERSION
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        """Reject parameters that do not describe one consistent head (:class:`HeadFormatError` naming the field)."""
        _check_version(self.version)
        n_features = len(self.feature_names)
        expect(n_features > 0, "feature_names", "at least one name", self.feature_names)
        expect(
            len(self.impute_means) == n_features,
            "impute_means",
            f"{n_features} numbers (one per feature)",
            self.impute_means,
        )
        indicators = list(self.indicator_features)
        expect(
            indicators == sorted(set(indicators)) and all(0 <= j < n_features for j in indicators),
            "indicator_features",
            f"increasing feature indices in [0, {n_features})",
            self.indicator_features,
        )
        n_columns = n_features + len(indicators)
        for name in ("scaler_mean", "scaler_scale", "coef"):
            expect(
                len(getattr(self, name)) == n_columns,
                name,
                f"{n_columns} numbers ({n_features} features + {len(indicators)} missingness indicators)",
                getattr(self, name),
            )
        for name in ("impute_means", "scaler_mean", "scaler_scale", "coef", "intercept"):
            expect(
                np.isfinite(np.asarray(getattr(self, name), dtype=float)).all(),
                name,
                "finite numbers",
                getattr(self, name),
            )
        expect(
            min(self.scaler_scale) >= SMALLEST_NORMAL,
            "scaler_scale",
            f"positive normal numbers (at least {SMALLEST_NORMAL:.4g}, so that 1/scale is finite)",
            self.scaler_scale,
        )
        self._check_overflow()

    def _check_overflow(self) -> None:
        """Refuse finite parameters whose use in :meth:`predict` overflows, which would make every score NaN or a
        constant: a weight coef/scale, the offset of the centering, or the score of a row whose every value is
        missing (imputed) that is not finite."""
        mean = np.asarray(self.scaler_mean)
        imputed_row = np.concatenate([self.impute_means, np.ones(len(self.indicator_features))])
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow gives inf or NaN, refused below
            weights = np.asarray(self.coef) / np.asarray(self.scaler_scale)
            offset = self.intercept - weights @ mean
            missing_row_logit = weights @ (imputed_row - mean) + self.intercept
        expect(np.isfinite(weights).all(), "coef", "numbers whose ratio to scaler_scale is finite", self.coef)
        expect(
            np.isfinite(offset),
            "scaler_mean",
            "numbers with a finite offset intercept - sum(coef * scaler_mean / scaler_scale)",
            self.scaler_mean,
        )
        expect(
            np.isfinite(missing_row_logit),
            "impute_means",
            "numbers with a finite score of a row of missing values",
            self.impute_means,
        )

    def predict(self, X: Any) -> np.ndarray:
        """Probability of class 1 (correct) for each row of ``X`` (columns in ``feature_names`` order)."""
        features = as_feature_matrix(X)
        if features.shape[1] != len(self.feature_names):
            raise ValueError(
                f"X has {features.shape[1]} columns, expected {len(self.feature_names)}: {list(self.feature_names)}"
            )
        missing = np.isnan(features)
        imputed = np.where(missing, np.asarray(self.impute_means), features)
        design = np.hstack([imputed, missing[:, list(self.indicator_features)].astype(float)])
        standardized = (design - np.asarray(self.scaler_mean)) / np.asarray(self.scaler_scale)
        return expit(standardized @ np.asarray(self.coef) + self.intercept)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation, tagged with ``kind`` and ``version``."""
        return {
            "kind": HEAD_KIND,
            "version": self.version,
            "feature_names": list(self.feature_names),
            "impute_means": list(self.impute_means),
            "indicator_features": list(self.indicator_features),
            "scaler_mean": list(self.scaler_mean),
            "scaler_scale": list(self.scaler_scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: Any) -> FittedHead:
        """Inverse of :meth:`to_dict`, checked against the schema: every field of :data:`HEAD_FIELDS` present, no
        other, each of its JSON type, and together one consistent head (:meth:`__post_init__`). The first violation
        is a :class:`HeadFormatError` naming the field. ``metadata`` may be any JSON object."""
        if not isinstance(payload, dict):
            raise HeadFormatError(f"expected a JSON object (a FittedHead), got {_shown(payload)}")
        expect(
            payload.get("kind") == HEAD_KIND,
            "kind",
            f"{HEAD_KIND!r} (this file is not a FittedHead)",
            payload.get("kind"),
        )
        check_fields(payload, HEAD_FIELDS)
        _check_version(payload["version"])  # first: another version may have other fields
        expect(is_number(payload["intercept"]), "intercept", "a number", payload["intercept"])
        expect(isinstance(payload["metadata"], dict), "metadata", "a JSON object", payload["metadata"])

        def numbers(name: str) -> tuple[float, ...]:
            return tuple(as_float(value) for value in json_list(payload, name, "numbers", is_number))

        return cls(
            feature_names=json_list(payload, "feature_names", "strings", lambda value: isinstance(value, str)),
            impute_means=numbers("impute_means"),
            indicator_features=json_list(
                payload, "indicator_features", "integers", lambda value: is_number(value) and isinstance(value, int)
            ),
            scaler_mean=numbers("scaler_mean"),
            scaler_scale=numbers("scaler_scale"),
            coef=numbers("coef"),
            intercept=as_float(payload["intercept"]),
            version=HEAD_FORMAT_VERSION,
            metadata=payload["metadata"],
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the head as JSON, atomically (:func:`trac_metrics._util.files.atomic_write`: a failed save leaves the
        old file as it was). Metadata must hold JSON values; NaN/inf are refused."""
        atomic_write(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str], check: Callable[[FittedHead], None] | None = None) -> FittedHead:
        """Read a head written by :meth:`save`. Loading parses JSON and checks it (:meth:`from_dict`, then
        ``check``, e.g. :func:`trac_metrics.heads.saved_heads.check_head` for the metadata of ``trac fit``); it never
        imports or runs anything. Unusable content is one :class:`HeadFormatError` "<path>: field 'F': expected ...,
        got ..."; an unreadable file is an OSError."""
        return load_checked(path, cls.from_dict, check)


def load_checked(
    path: str | os.PathLike[str], from_dict: Callable[[Any], T], check: Callable[[T], None] | None = None
) -> T:
    """Parse the JSON file ``path`` with ``from_dict``, then ``check`` the result: a saved head or calibration map
    (:class:`FittedHead`, :class:`~trac_metrics.heads.calibration_maps.CalibrationMap`). Data only: nothing is
    imported or run. Unusable content is one :class:`HeadFormatError` "<path>: field 'F': expected ..., got ...";
    an unreadable file is an OSError."""
    data = Path(path).read_bytes()
    try:
        loaded = from_dict(_parse_json(data))
        if check is not None:
            check(loaded)
    except HeadFormatError as error:
        raise HeadFormatError(f"{path}: {error}") from None
    return loaded


def _parse_json(data: bytes) -> Any:
    """The JSON value of ``data``; anything that is not UTF-8 JSON is a :class:`HeadFormatError`."""
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise HeadFormatError("not a JSON head file: nested too deeply to read") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, an integer too long to convert
        raise HeadFormatError(f"not valid JSON ({error})") from None


def newton_memory(n_columns: int) -> int:
    """Bytes :func:`fit_head` holds for a head on ``n_columns`` design columns (features + missingness indicators +
    intercept), not counting the rows: the Newton step's Hessian and the temporaries of building and solving it,
    about 4 n×n float64 matrices (``trac --n-bins`` is checked against it)."""
    return 4 * 8 * n_columns**2


def fit_head(
    X: Any,
    y: Any,
    feature_names: Sequence[str],
    C: float = 1.0,
    max_iter: int = 1000,
    metadata: dict[str, Any] | None = None,
) -> FittedHead:
    """Fit the head of docs/method.md#learned-heads (preprocessing + L2 logistic, see the module docstring) on all rows.

    Raises ValueError when ``y`` has fewer than 2 samples of a class (no head can be fitted) or when
    ``feature_names`` does not name every column.
    """
    features = as_feature_matrix(X)
    labels = as_binary_labels(y, features.shape[0])
    if len(feature_names) != features.shape[1]:
        raise ValueError(f"{len(feature_names)} feature names for {features.shape[1]} columns")
    shortage = class_shortage(labels)
    if shortage is not None:
        raise ValueError(f"fit_head: the training rows have {shortage}")
    return fit_unchecked(features, labels, feature_names, C, max_iter, metadata or {})


def fit_unchecked(
    features: np.ndarray,
    labels: np.ndarray,
    feature_names: Sequence[str],
    C: float = 1.0,
    max_iter: int = 1000,
    metadata: dict[str, Any] | None = None,
) -> FittedHead:
    """:func:`fit_head` on rows already validated (cross-fitting checks its folds once for every head)."""
    means, indicators, center, scale = _preprocessing(features)
    coef, intercept = _logistic_newton(
        (_design(features, means, indicators) - center) / scale, labels.astype(float), C, max_iter
    )
    return FittedHead(
        feature_names=tuple(feature_names),
        impute_means=tuple(float(v) for v in means),
        indicator_features=tuple(int(j) for j in indicators),
        scaler_mean=tuple(float(v) for v in center),
        scaler_scale=tuple(float(v) for v in scale),
        coef=tuple(float(v) for v in coef),
        intercept=intercept,
        metadata=dict(metadata or {}),
    )


# ----------------------------------------------------------------------------------------------- transfer


def transfer_scores(
    X_source: Any, y_source: Any, X_target: Any, feature_names: Sequence[str], fit: Fitter | None = None
) -> np.ndarray:
    """Scores of the target rows by a head fitted on the source rows only (docs/method.md#transfer-heads): the
    logistic head, or the head ``fit`` fits (docs/method.md#classifier-capacity).

    Imputation means, missingness columns and the standardizer come from the source rows alone, so each target
    score depends on its own row only. A source with fewer than 2 samples of a class gives all-NaN scores and a
    TracWarning.
    """
    source = as_feature_matrix(X_source, "X_source")
    target = as_feature_matrix(X_target, "X_target")
    labels = as_binary_labels(y_source, source.shape[0])
    if not len(feature_names) == source.shape[1] == target.shape[1]:
        raise ValueError(
            f"column counts differ: {len(feature_names)} feature names, X_source has {source.shape[1]}, "
            f"X_target has {target.shape[1]}"
        )
    shortage = class_shortage(labels)
    if shortage is not None:
        warnings.warn(
            f"transfer_scores: the source rows have {shortage}; every target score is NaN", TracWarning, stacklevel=2
        )
        return np.full(target.shape[0], np.nan)
    if fit is not None:
        return fit(source, labels)(target)
    return fit_head(source, labels, feature_names).predict(target)
