"""The method registry: every uncertainty method declared once (docs/architecture.md#method-registry).

A :class:`Method` says what a method is called and shown as, how its score is computed (a function of one
question's responses, or the feature row of a learned head), which way its score points, what it costs, where the
leaderboard shows it and whether a task switch must enable it. Everything else is derived from the registry, in
registry order: the baseline scores of the evidence dict, the heads that are cross-fitted, the columns of a saved
head, the relative latency, the leaderboard rows and labels, the ``trac summary`` order, the results keys
``<method>_<metric>`` (every metric of :data:`~trac_metrics.selective.METRIC_NAMES`: selective prediction, rejection
and calibration), the baselines' calibration maps and the ``trac_math`` group's metric list.

Results keys are unique by construction: :func:`register` and :func:`register_all` refuse a method one of whose
``<name>_<metric>`` keys is another registered method's key or an accuracy key (``trac_e`` would write
``trac_e_aurc``, TrAC's E-AURC), and a method that reads another method's score by name declares it
(:attr:`Method.requires`), so the dependency cannot be unregistered under it.

The built-in methods are declared in :mod:`trac_metrics.methods.builtin`; :func:`register` adds one more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from trac_metrics.features.cross_model import Judgement
from trac_metrics.records import ResponseRecord
from trac_metrics.selective import METRIC_NAMES


class Family(Enum):
    """How a method computes its score (docs/method.md#baselines, docs/method.md#learned-heads)."""

    SINGLE_TRACE = "single-trace"
    """An unsupervised score of the primary response alone."""
    SAMPLING = "sampling@K"
    """An unsupervised score of the K responses of a question; computed only when K > 1."""
    HEAD = "learned head"
    """A logistic head on a feature row of the evidence dict, cross-fitted within each task."""


class Scope(Enum):
    """Where a method is evaluated."""

    TASK = "task"
    """Everywhere: lm-eval's per-task results, ``trac summary``, ``trac evaluate`` and ``trac report``."""
    REPORT = "report"
    """Only in a cross-run report (the ablation diagnostics of docs/method.md#report-analyses)."""


@dataclass(frozen=True)
class Cost:
    """A method's cost per question in generations (docs/method.md#relative-latency): one generation, the K of
    the question, or a fixed number of them (``samples``: SC@2 reads 2 of the K), plus the engine seconds recorded under
    each ``extra_seconds`` timing key (``probe_<variant>``, ``p_true``) in units of one generation's seconds."""

    k_samples: bool = False
    extra_seconds: tuple[str, ...] = ()
    samples: int | None = None

    def responses_read(self, k: int) -> int:
        """How many of a question's ``k`` responses the method reads (the first ones, the primary first)."""
        return self.samples if self.samples else k if self.k_samples else 1

    def relative_latency(self, k: int, extra: Callable[[str], float]) -> float:
        """The cost of a question with ``k`` samples; ``extra(key)`` converts the seconds of one timing key."""
        latency = float(self.responses_read(k))
        for key in self.extra_seconds:
            latency += extra(key)
        return latency


ONE_GENERATION = Cost()
K_GENERATIONS = Cost(k_samples=True)


def with_probe(cost: Cost, variant: str = "trace") -> Cost:
    """``cost`` plus the probe ``variant`` of the primary response."""
    return Cost(cost.k_samples, (*cost.extra_seconds, f"probe_{variant}"), cost.samples)


@dataclass(frozen=True)
class Question:
    """What a baseline's score function reads: one question's responses in repeat order (the primary first), the
    answer kind every comparison uses (the records' kind unless ``trac rescore --answer-kind`` overrides it) and, where
    a judge scored the primary, its judgement (docs/method.md#cross-model-score)."""

    responses: tuple[ResponseRecord, ...]
    kind: str
    judgement: Judgement | None = None

    @property
    def primary(self) -> ResponseRecord:
        return self.responses[0]

    @property
    def answers(self) -> list[str | None]:
        return [response.answer for response in self.responses]


Score = Callable[[Question], "float | None"]
"""A baseline's score of one question; None when the records do not hold what it needs (P(True) switched off)."""
FeatureRow = Callable[[Mapping[str, Any]], "list[float] | None"]
"""A head's feature row of one evidence dict; None when the question lacks it (an ablation probe not run)."""

LAST_ROW = math.inf
"""The default :attr:`Method.leaderboard_row`: after the paper's rows of the block."""
_DOC = re.compile(r"docs/[\w/-]+\.md#[\w-]+")
_NAME = re.compile(r"[a-z][a-z0-9_]*")
ACCURACY_KEYS = ("acc", "maj_acc")
"""The results keys of a TrAC task that are no method's (docs/method.md#metric-names): the accuracy of the primary
answer and of the majority answer. They share the results namespace with every ``<method>_<metric>``."""


@dataclass(frozen=True)
class Method:
    """One uncertainty method.

    ``name``: its key in evidence dicts and results (``<name>_<metric>``). ``label``: how tables and figures show it,
    ``{k}`` standing for K. ``score`` (baselines) or ``features`` (heads) computes it; a head's ``feature_names(J)``,
    when given, names its columns for TUP's J and lets ``trac fit`` save it. ``higher_is_confident``: False when a
    larger raw score means a less likely correct answer; the evidence then stores the negated score, so every stored
    score and every metric reads higher = more confident. ``leaderboard_row``: its place in its leaderboard block
    (the paper's Table 1 order; None keeps it out of the leaderboard); the block is single-trace or sampling by its
    cost. ``switch``: the task switch that enables it (None: every TrAC task computes it, so the ``trac_math`` group
    averages it). ``requires``: the methods whose scores its ``score`` or ``features`` reads by name (e.g.
    ``evidence["baselines"]["mean_logprob"]``); each must be registered before it and cannot be unregistered while
    it is. ``summary``: what it measures in one line and ``doc``: the docs section defining it
    (``docs/method.md#<heading>``), shown beside its name in the HTML report (empty: none given).
    """

    name: str
    label: str
    family: Family
    cost: Cost
    score: Score | None = None
    features: FeatureRow | None = None
    feature_names: Callable[[int], tuple[str, ...]] | None = None
    higher_is_confident: bool = True
    leaderboard_row: float | None = LAST_ROW
    scope: Scope = Scope.TASK
    switch: str | None = None
    requires: tuple[str, ...] = ()
    summary: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"method name {self.name!r} must be lowercase letters, digits and '_'")
        if not self.label:
            raise ValueError(f"method {self.name!r} needs a display label")
        is_head = self.family is Family.HEAD
        if is_head != (self.features is not None) or is_head == (self.score is not None):
            raise ValueError(
                f"method {self.name!r}: a head has features and no score, a baseline a score and no features"
            )
        if is_head and not self.higher_is_confident:
            raise ValueError(f"method {self.name!r}: a head's score is P(correct), higher is always more confident")
        if self.feature_names is not None and not is_head:
            raise ValueError(f"method {self.name!r}: only a head has feature names")
        if self.name in self.requires:
            raise ValueError(f"method {self.name!r} cannot require itself")
        if self.doc and not _DOC.fullmatch(self.doc):
            raise ValueError(f"method {self.name!r}: doc {self.doc!r} must read docs/<page>.md#<heading>")

    @property
    def results_keys(self) -> tuple[str, ...]:
        """Its keys in lm-eval's results and every metrics dict: ``<name>_<metric>`` for each metric of
        :data:`~trac_metrics.selective.METRIC_NAMES` (docs/method.md#metric-names)."""
        return tuple(f"{self.name}_{metric}" for metric in METRIC_NAMES)

    @property
    def block(self) -> str | None:
        """Its leaderboard block: ``single-trace`` or ``sampling`` (None when it is not in the leaderboard)."""
        if self.leaderboard_row is None:
            return None
        return "sampling" if self.cost.k_samples else "single-trace"

    def display(self, k: str) -> str:
        """:attr:`label` with K filled in."""
        return self.label.format(k=k)


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` after the methods registered so far (:func:`register_all` of one method); returns it."""
    register_all((method,))
    return method


def register_all(methods: Sequence[Method]) -> None:
    """Add ``methods`` in order after the methods registered so far, all or none. ValueError when a name is taken,
    when a results key (:attr:`Method.results_keys`) is another method's key or an accuracy key
    (:data:`ACCURACY_KEYS`), or when a method requires one that is neither registered nor among ``methods``."""
    owners = dict.fromkeys(ACCURACY_KEYS, "the accuracy metrics")
    known = dict(_REGISTRY)
    for method in methods:
        if method.name in known:
            raise ValueError(f"a method named {method.name!r} is registered already")
        known[method.name] = method
    for method in known.values():
        for key in method.results_keys:
            if key in owners:
                raise ValueError(
                    f"methods {owners[key]!r} and {method.name!r} would both write the results key {key!r}: "
                    "results keys <method>_<metric> must be unique, rename one"
                )
            owners[key] = method.name
    for method in methods:
        missing = [name for name in method.requires if name not in known]
        if missing:
            raise ValueError(f"method {method.name!r} requires {', '.join(map(repr, missing))}: not registered")
    _REGISTRY.update((method.name, method) for method in methods)


def unregister(name: str) -> Method:
    """Remove a method added by :func:`register` (tests and experiments); returns it. ValueError naming the
    methods that require it (:attr:`Method.requires`) while they are registered."""
    method = get(name)
    dependants = [other.name for other in _REGISTRY.values() if method.name in other.requires]
    if dependants:
        raise ValueError(
            f"cannot unregister {method.name!r}: required by {', '.join(map(repr, dependants))} (reading its score "
            "by name); unregister those first"
        )
    return _REGISTRY.pop(method.name)


def get(name: str) -> Method:
    """The registered method ``name``; ValueError naming the registered ones when there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"no registered method {name!r} (registered: {', '.join(_REGISTRY)})") from None


def all_methods() -> tuple[Method, ...]:
    """Every registered method, in registry order: the ``trac summary`` order."""
    return tuple(_REGISTRY.values())


def task_methods() -> tuple[Method, ...]:
    """The methods of lm-eval's per-task results, ``trac summary`` and ``trac evaluate``, in registry order."""
    return tuple(method for method in _REGISTRY.values() if method.scope is Scope.TASK)


def scored_methods(k: int) -> tuple[Method, ...]:
    """The baselines a question with ``k`` responses is scored by (sampling methods need k > 1)."""
    families = (Family.SINGLE_TRACE, Family.SAMPLING) if k > 1 else (Family.SINGLE_TRACE,)
    return tuple(method for method in _REGISTRY.values() if method.family in families)


def head_features(*scopes: Scope) -> dict[str, FeatureRow]:
    """Name → feature row of the heads evaluated in ``scopes`` (default: the task's), in registry order."""
    wanted = scopes or (Scope.TASK,)
    return {
        method.name: method.features
        for method in _REGISTRY.values()
        if method.family is Family.HEAD and method.scope in wanted
    }


def saved_head_methods() -> tuple[str, ...]:
    """The heads ``trac fit`` can save: those whose columns are named."""
    return tuple(method.name for method in _REGISTRY.values() if method.feature_names is not None)


def calibrated_methods() -> tuple[str, ...]:
    """The baselines, each turned into a probability of correctness by a calibration map
    (docs/method.md#calibration-maps) that ``trac fit`` can save."""
    return tuple(method.name for method in _REGISTRY.values() if method.family is not Family.HEAD)


def leaderboard_rows() -> list[Method]:
    """The leaderboard's methods: the single-trace block, then the sampling block, each in its row order (ties and
    :data:`LAST_ROW` in registry order)."""
    ranked = [method for method in _REGISTRY.values() if method.leaderboard_row is not None]
    order = ("single-trace", "sampling")
    return sorted(ranked, key=lambda method: (order.index(method.block), method.leaderboard_row))


def group_methods() -> tuple[Method, ...]:
    """The methods every TrAC task reports without a switch: the ``trac_math`` group averages their metrics."""
    return tuple(method for method in task_methods() if method.switch is None)
