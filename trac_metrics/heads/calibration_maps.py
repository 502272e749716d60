"""Monotone calibration maps: a baseline's score → a probability of correctness (docs/method.md#calibration-maps).

A map is fitted on (score, label) pairs of training questions only: inside the cross-fitting folds for the
in-domain evaluation (:mod:`trac_metrics.heads.cross_fitting`, the same folds and repetitions as the heads), or on
every question of training runs for ``trac fit --method <baseline>``. Two forms:

- ``isotonic`` (the default): scikit-learn's ``IsotonicRegression`` (non-decreasing), predicted by linear
  interpolation between its knots and held constant beyond the first and last knot;
- ``platt``: the project's logistic head (docs/method.md#logistic-regression-and-the-newton-solver) on the one
  column u, i.e. σ(a·u + b) (monotone; decreasing when the score ranks backwards).

Both are clipped to [1/(n + 2), 1 − 1/(n + 2)], n the number of training questions: n labels never justify certainty
(the rule-of-succession bound), and the log loss of a map stays finite. A map is stored as plain JSON
(:class:`CalibrationMap`) and predicts with numpy only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression

from trac_metrics._util.files import atomic_write
from trac_metrics.heads.logistic import (
    HEAD_FORMAT_VERSION,
    SMALLEST_NORMAL,
    HeadFormatError,
    as_binary_labels,
    as_float,
    check_fields,
    expect,
    fit_unchecked,
    is_finite_number,
    is_number,
    json_list,
    load_checked,
)

CALIBRATION_MAPS = ("isotonic", "platt")
"""The forms of a calibration map (``--calibration-map``)."""
DEFAULT_CALIBRATION_MAP = "isotonic"
MAP_KIND = "trac_metrics.CalibrationMap"
MAP_FIELDS = ("kind", "version", "form", "knots_x", "knots_p", "slope", "intercept", "bound", "metadata")
"""The fields of a saved map, all required (:meth:`CalibrationMap.to_dict`); the ones a form does not use are
empty lists (``knots_x``, ``knots_p`` of a Platt map) or null (``slope``, ``intercept`` of an isotonic map)."""


def check_form(form: str) -> str:
    """``form`` when it is a calibration map form, else a ValueError naming the forms."""
    if form not in CALIBRATION_MAPS:
        raise ValueError(f"calibration maps are {CALIBRATION_MAPS}, got {form!r}")
    return form


def probability_bound(n_questions: int) -> float:
    """The smallest probability a map fitted on ``n_questions`` questions gives: 1/(n + 2)."""
    return 1.0 / (n_questions + 2)


@dataclass(frozen=True)
class CalibrationMap:
    """A fitted monotone map u → P(correct) as plain numbers (docs/method.md#calibration-maps).

    ``isotonic``: p(u) = the linear interpolation of (``knots_x``, ``knots_p``), constant beyond the ends; ``platt``:
    p(u) = σ(``slope``·u + ``intercept``); both clipped to [``bound``, 1 − ``bound``]. A NaN score predicts NaN.
    """

    form: str
    knots_x: tuple[float, ...]
    knots_p: tuple[float, ...]
    slope: float | None
    intercept: float | None
    bound: float
    version: int = HEAD_FORMAT_VERSION
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        """Reject parameters that do not describe one monotone map (:class:`HeadFormatError` naming the field)."""
        expect(self.version == HEAD_FORMAT_VERSION, "version", f"{HEAD_FORMAT_VERSION}", self.version)
        expect(self.form in CALIBRATION_MAPS, "form", f"one of {CALIBRATION_MAPS}", self.form)
        expect(is_finite_number(self.bound) and 0.0 < self.bound < 0.5, "bound", "a number in (0, 0.5)", self.bound)
        isotonic = self.form == "isotonic"
        x, p = np.asarray(self.knots_x, dtype=float), np.asarray(self.knots_p, dtype=float)
        if isotonic:
            with np.errstate(over="ignore", invalid="ignore"):  # an overflowing gap is inf, refused below
                gaps = np.diff(x)
            expect(  # interpolation divides by each gap: a subnormal gap overflows, an infinite one flattens
                x.size > 0 and np.isfinite(x).all() and np.isfinite(gaps).all() and (gaps >= SMALLEST_NORMAL).all(),
                "knots_x",
                f"increasing finite numbers, each gap finite and at least {SMALLEST_NORMAL:.4g}",
                self.knots_x,
            )
            expect(
                p.size == x.size and ((p >= 0) & (p <= 1)).all() and (np.diff(p) >= 0).all(),
                "knots_p",
                f"{x.size} non-decreasing numbers in [0, 1] (one per knot)",
                self.knots_p,
            )
        else:
            expect(x.size == 0, "knots_x", "an empty list (a Platt map has no knots)", self.knots_x)
            expect(p.size == 0, "knots_p", "an empty list (a Platt map has no knots)", self.knots_p)
        for name in ("slope", "intercept"):
            value = getattr(self, name)
            if isotonic:
                expect(value is None, name, "null (an isotonic map has no logistic parameters)", value)
            else:
                expect(is_finite_number(value), name, "a finite number", value)

    def predict(self, scores: Any) -> np.ndarray:
        """P(correct) of each score (a 1-D array of numbers; NaN gives NaN)."""
        values = np.asarray(scores, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"scores must be a 1-D array, got shape {values.shape}")
        if self.form == "isotonic":
            raw = np.interp(values, self.knots_x, self.knots_p)
        else:
            raw = expit(self.slope * values + self.intercept)
        return np.clip(raw, self.bound, 1.0 - self.bound)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation, tagged with ``kind`` and ``version``."""
        return {
            "kind": MAP_KIND,
            "version": self.version,
            "form": self.form,
            "knots_x": list(self.knots_x),
            "knots_p": list(self.knots_p),
            "slope": self.slope,
            "intercept": self.intercept,
            "bound": self.bound,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: Any) -> CalibrationMap:
        """Inverse of :meth:`to_dict`, checked: every field of :data:`MAP_FIELDS` and no other, each of its JSON type,
        together one monotone map (:meth:`__post_init__`); the first violation is a :class:`HeadFormatError`."""
        if not isinstance(payload, dict):
            raise HeadFormatError(f"expected a JSON object (a CalibrationMap), got {type(payload).__name__}")
        expect(payload.get("kind") == MAP_KIND, "kind", f"{MAP_KIND!r}", payload.get("kind"))
        check_fields(payload, MAP_FIELDS)
        expect(isinstance(payload["metadata"], dict), "metadata", "a JSON object", payload["metadata"])
        for name in ("slope", "intercept"):
            expect(payload[name] is None or is_number(payload[name]), name, "null or a number", payload[name])

        def optional(name: str) -> float | None:
            return None if payload[name] is None else as_float(payload[name])

        return cls(
            form=payload["form"],
            knots_x=tuple(map(as_float, json_list(payload, "knots_x", "numbers", is_number))),
            knots_p=tuple(map(as_float, json_list(payload, "knots_p", "numbers", is_number))),
            slope=optional("slope"),
            intercept=optional("intercept"),
            bound=payload["bound"],
            version=payload["version"],
            metadata=payload["metadata"],
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the map as JSON, atomically; metadata must hold JSON values (NaN / inf are refused)."""
        atomic_write(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], check: Callable[[CalibrationMap], None] | None = None
    ) -> CalibrationMap:
        """Read a map written by :meth:`save` (:func:`~trac_metrics.heads.logistic.load_checked`)."""
        return load_checked(path, cls.from_dict, check)


def fit_calibration_map(scores: Any, labels: Any, form: str = DEFAULT_CALIBRATION_MAP) -> CalibrationMap:
    """The ``form`` map fitted on finite ``scores`` with their 0/1 ``labels`` (docs/method.md#calibration-maps)."""
    values = np.asarray(scores, dtype=np.float64)
    correct = as_binary_labels(labels, values.shape[0] if values.ndim == 1 else None)
    if values.ndim != 1 or not np.isfinite(values).all():
        raise ValueError("a calibration map is fitted on a 1-D array of finite scores")
    bound = probability_bound(values.size)
    if check_form(form) == "platt":
        head = fit_unchecked(values[:, None], correct, ["score"])
        slope = head.coef[0] / head.scaler_scale[0]
        intercept = head.intercept - slope * head.scaler_mean[0]
        return CalibrationMap("platt", (), (), float(slope), float(intercept), bound)
    isotonic = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(values, correct.astype(np.float64))
    return CalibrationMap(
        "isotonic",
        tuple(float(x) for x in isotonic.X_thresholds_),
        tuple(float(p) for p in isotonic.y_thresholds_),
        None,
        None,
        bound,
    )


__all__ = [
    "CALIBRATION_MAPS",
    "DEFAULT_CALIBRATION_MAP",
    "MAP_FIELDS",
    "MAP_KIND",
    "CalibrationMap",
    "check_form",
    "fit_calibration_map",
    "probability_bound",
]
