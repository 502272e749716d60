"""Heads of higher capacity than the logistic one, for the classifier-capacity analysis
(docs/method.md#classifier-capacity): each a :data:`~trac_metrics.heads.cross_fitting.Fitter`, so it is cross-fitted
on the very folds of the logistic head and transferred with the same source-only rule.

Every non-logistic head imputes a missing feature with its training mean and adds a missingness indicator (as the
logistic head's preprocessing does, docs/method.md#preprocessing); the MLP also standardizes. Each is seeded, so the
same rows give the same scores.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from trac_metrics.heads.cross_fitting import Fitter, Predictor, fit_head_predictor

CAPACITY_SEED = 0
"""The random state of every non-logistic head."""


def _forest() -> ClassifierMixin:
    return RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=CAPACITY_SEED, n_jobs=1)


def _boosting() -> ClassifierMixin:
    return GradientBoostingClassifier(n_estimators=100, max_depth=3, learning_rate=0.1, random_state=CAPACITY_SEED)


def _mlp() -> ClassifierMixin:
    return MLPClassifier(
        hidden_layer_sizes=(32,), alpha=1e-3, solver="lbfgs", max_iter=2000, random_state=CAPACITY_SEED
    )


_MODELS: dict[str, tuple[Callable[[], ClassifierMixin], bool]] = {
    "random_forest": (_forest, False),
    "gradient_boosting": (_boosting, False),
    "mlp": (_mlp, True),
}
"""Each non-logistic head: its model and whether it standardizes its inputs."""

CLASSIFIERS = ("logistic", *_MODELS)
"""The heads the classifier-capacity analysis compares, the paper's logistic head first."""


def _fit_model(features: np.ndarray, labels: np.ndarray, name: str) -> Predictor:
    model, scaled = _MODELS[name]
    steps = [SimpleImputer(strategy="mean", add_indicator=True, keep_empty_features=True)]
    pipeline = make_pipeline(*steps, *([StandardScaler()] if scaled else []), model())
    pipeline.fit(features, labels)
    return lambda rows: pipeline.predict_proba(rows)[:, 1]


def classifier_fitter(name: str) -> Fitter:
    """The :data:`Fitter` of head ``name`` (one of :data:`CLASSIFIERS`); a ValueError names the known ones."""
    if name == "logistic":
        return fit_head_predictor
    if name not in _MODELS:
        raise ValueError(f"unknown classifier {name!r}; known: {', '.join(CLASSIFIERS)}")
    return lambda features, labels: _fit_model(features, labels, name)
