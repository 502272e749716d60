"""The paper's analyses in ``trac report``: ablations, consensus blind spot, transfer, label efficiency, decoding.

Each function reads a :class:`~trac_metrics.reporting.report_data.ReportData` and returns one
:class:`~trac_metrics.reporting.tables.ReportTable`; :func:`all_analyses` returns them in the report's order. The
per-pair values and macro intervals they share with the leaderboard come from ``numbers`` (:class:`Numbers`: the report
model passes its statistics, so each is computed once; by default the data's own). Every
number is a pair-equal macro (docs/method.md#pair-equal-macro-average) over the pairs that have the data; a pair or a
cell that cannot be computed is NaN or left out with the reason in the table's note, never silently. Tables
(docs/method.md#report-analyses):

- ablations (a)–(d) (docs/method.md#report-analyses): :func:`component_ablation`, :func:`trace_controls`,
  :func:`pce_decomposition`, :func:`p_true_fusion`: macro AUROC with its 95% hierarchical-bootstrap CI, and macro AURC;
- cue variants (docs/method.md#cue-variants): :func:`cue_variants`;
- consensus blind spot (docs/method.md#consensus-blind-spot): :func:`consensus_blind_spot`;
- transfer (docs/method.md#transfer-tables; heads: docs/method.md#transfer-heads): :func:`transfer_by_target` (top) and
  :func:`transfer_representations` (bottom);
- label efficiency (docs/method.md#label-efficiency): :func:`label_efficiency` (with :func:`label_split`);
- classifier capacity (docs/method.md#classifier-capacity), on request: :func:`classifier_capacity`;
- decoding symmetry (docs/method.md#decoding-symmetry): :func:`decoding_symmetry`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from trac_metrics import selective
from trac_metrics._warnings import TracWarning
from trac_metrics.heads import MIN_SAMPLES_PER_CLASS, fit_head, transfer_scores
from trac_metrics.heads.capacity import CLASSIFIERS, classifier_fitter
from trac_metrics.heads.cross_fitting import Fitter, cross_fit_many, oof_metric
from trac_metrics.methods import get
from trac_metrics.reporting.report_data import ReportData
from trac_metrics.reporting.runs import DEFAULT_DECODING, PairRun, decoding_label
from trac_metrics.reporting.tables import ReportTable
from trac_metrics.selective.bootstrap import mean_of_defined

METHOD_COLUMNS = ("AUROC", "CI lo", "CI hi", "AURC", "pairs")
REPRESENTATIONS = (("TUP", "tup"), ("PCE", "pce"), ("TrAC", "trac"))
"""Rows of the transfer table (docs/method.md#transfer-tables): label and registered head
(:mod:`trac_metrics.methods`)."""
CLASSIFIER_LABELS = {
    "logistic": "Logistic regression",
    "random_forest": "Random forest",
    "gradient_boosting": "Gradient-boosted trees",
    "mlp": "MLP",
}
"""Rows of the classifier-capacity table (docs/method.md#classifier-capacity)."""
LABEL_EFFICIENCY_COLUMNS = (
    ("Sequence only", "sequence_only"),
    ("Conv.+final", "convergence_final"),
    ("PCE", "pce"),
    ("TUP", "tup"),
    ("TrAC", "trac"),
)
"""Columns of the label-efficiency table (docs/method.md#label-efficiency): the paper's three, then TUP and TrAC."""

PROBE_VARIANTS_HOW_TO = (
    "add `trac: probe_variants: [trace, question_only, shuffled_trace, teacher_forced, after_answer]` to the "
    "task's generation_kwargs and rerun"
)
P_TRUE_HOW_TO = "add `trac: p_true: true` to the task's generation_kwargs and rerun"
CUE_VARIANTS_HOW_TO = (
    "add `trac: probe_variants: [trace, cue_answer, cue_therefore]` to the task's generation_kwargs and rerun"
)
PREFIX_PROBES_HOW_TO = "add `trac: prefix_probes: [0.25, 0.5, 0.75]` to the task's generation_kwargs and rerun"


# ----------------------------------------------------------------------------------------------- shared helpers


class Numbers(Protocol):
    """Where the analyses read a method's per-pair values and its macro's 95% interval (``ReportData`` has both)."""

    def per_pair(self, method: str, metric: str) -> np.ndarray: ...

    def ci(self, method: str, metric: str) -> tuple[float, float]: ...


def _auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """``selective.auroc``, NaN without a warning where it is undefined (NaN scores, one class): the callers count
    and report those pairs in their notes."""
    if np.isnan(scores).any() or labels.all() or not labels.any():
        return math.nan
    return selective.auroc(scores, labels)


def _names(indices: Sequence[int], data: ReportData, limit: int = 5) -> str:
    shown = [data.pairs[i].name for i in indices[:limit]]
    return ", ".join(shown) + (f" and {len(indices) - limit} more" if len(indices) > limit else "")


def _empty(columns: Sequence[str], index_name: str) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns), index=pd.Index([], name=index_name), dtype=np.float64)


def _has(data: ReportData, method: str) -> list[int]:
    """Indices of the pairs whose evaluation scored ``method``."""
    return [i for i, evaluation in enumerate(data.evaluations) if method in evaluation.scores]


# -------------------------------------------------------------------------- ablations (docs/method.md#report-analyses)


def _auroc_intervals(
    data: ReportData, numbers: Numbers, indices: Sequence[int], methods: Sequence[str]
) -> dict[str, tuple]:
    """95% CI of each method's macro AUROC over the pairs ``indices``: the report's shared bootstrap when they are
    all pairs, else the same hierarchical bootstrap (same resamples count and seed) restricted to them."""
    if len(indices) == len(data.pairs):
        return {method: numbers.ci(method, "auroc") for method in methods}
    result = data.bootstrap_subset(indices, methods, ("auroc",))["auroc"]
    return {method: result.ci(method) for method in methods}


def _method_table(
    data: ReportData,
    numbers: Numbers | None,
    name: str,
    title: str,
    rows: Sequence[tuple[str, str]],
    how_to: str = "",
) -> ReportTable:
    """Rows ``(label, method)`` × AUROC, its CI, AURC and the number of pairs with a defined AUROC.

    Rows whose method no run has are left out and named in the note with ``how_to``; with fewer than two rows left
    there is nothing to compare and the table is empty. The macro covers the pairs that have every shown method.
    """
    shown = [(label, method) for label, method in rows if _has(data, method)]
    absent = [label for label, method in rows if not _has(data, method)]
    lacking = f"Not in these runs: {', '.join(absent)}; {how_to}." if absent else ""
    methods = [method for _, method in shown]
    indices = [i for i, evaluation in enumerate(data.evaluations) if all(m in evaluation.scores for m in methods)]
    if len(shown) < 2 or not indices:
        why = "no pair has all of its methods" if len(shown) >= 2 else "the runs lack the methods to compare"
        return ReportTable(
            name, title, _empty(METHOD_COLUMNS, "representation"), note=f"Empty: {why}. {lacking}".strip()
        )
    numbers = numbers or data
    intervals = _auroc_intervals(data, numbers, indices, methods)
    records = []
    for method in methods:
        auroc = numbers.per_pair(method, "auroc")[indices]
        aurc = numbers.per_pair(method, "aurc")[indices]
        records.append(
            [mean_of_defined(auroc), *intervals[method], mean_of_defined(aurc), int((~np.isnan(auroc)).sum())]
        )
    frame = pd.DataFrame(
        records, columns=list(METHOD_COLUMNS), index=pd.Index([label for label, _ in shown], name="representation")
    )
    left_out = sorted(set(range(len(data.pairs))) - set(indices))
    scope = (
        f"Pair-equal macro over {len(indices)} of {len(data.pairs)} pair(s), those with every method of this "
        f"table ('pairs': those with a defined AUROC). 95% CI: hierarchical bootstrap, {data.n_resamples} "
        f"resamples (seed {data.seed})."
    )
    note = [scope, f"Left out (a method missing): {_names(left_out, data)}." if left_out else "", lacking]
    return ReportTable(name, title, frame, {"AUROC": True, "AURC": False}, " ".join(part for part in note if part))


def component_ablation(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Component ablation (docs/method.md#component-ablation): TUP only, PCE only, TUP + PCE (= TrAC)."""
    return _method_table(
        data,
        numbers,
        "ablation_components",
        "Component ablation",
        [("TUP only", "tup"), ("PCE only", "pce"), ("PCE + TUP (= TrAC)", "trac")],
    )


def trace_controls(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Trace-conditioning controls (docs/method.md#trace-conditioning-controls): the probe-variant heads
    (docs/method.md#probe-variants) against PCE."""
    return _method_table(
        data,
        numbers,
        "ablation_trace_controls",
        "Trace-conditioning controls",
        [
            ("Question-only probe", "pce_question_only"),
            ("Shuffled-trace probe", "pce_shuffled_trace"),
            ("Teacher-forced support", "pce_teacher_forced"),
            ("PCE + answer support", "pce_answer_support"),
            ("Restatement after the answer (control, not the paper's probe)", "pce_after_answer"),
            ("PCE with completed trace", "pce"),
        ],
        PROBE_VARIANTS_HOW_TO,
    )


def tup_span(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """TUP's span (docs/method.md#tup-span): TUP and TrAC with the profile of the reasoning body r (the paper's
    Algorithm 1, the default) and of the whole generation y."""
    return _method_table(
        data,
        numbers,
        "ablation_tup_span",
        "TUP span: the reasoning or the whole generation",
        [
            ("TUP, the span in force (default: the reasoning r)", "tup"),
            ("TUP on the whole generation y", "tup_generation"),
            ("TrAC, the span in force (default: r)", "trac"),
            ("TrAC, TUP on y", "trac_tup_generation"),
        ],
    )


def cue_variants(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Cue variants (docs/method.md#cue-variants): PCE with the task's cue and with two equivalent wordings, and the
    spread of their macro AUROC in the note."""
    table = _method_table(
        data,
        numbers,
        "robustness_cue_variants",
        "Cue variants: three equivalent answer cues",
        [
            ('PCE, the task\'s cue (default "The final answer is")', "pce"),
            ('PCE, cue "The answer is"', "pce_cue_answer"),
            ('PCE, cue "Therefore, the final answer is"', "pce_cue_therefore"),
        ],
        CUE_VARIANTS_HOW_TO,
    )
    macro = table.frame["AUROC"].dropna()
    if len(macro) < 2:
        return table
    spread = f"Spread of the macro AUROC over the cues (max − min): {macro.max() - macro.min():.3f}."
    return dataclasses.replace(table, note=f"{spread} {table.note}")


def pce_decomposition(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """PCE decomposition (docs/method.md#pce-decomposition): agreement e alone, likelihoods alone, both (= PCE)."""
    return _method_table(
        data,
        numbers,
        "ablation_pce_decomposition",
        "PCE feature decomposition",
        [
            ("Agreement only (the paper's AC)", "pce_agreement"),
            ("Likelihood only", "pce_likelihood"),
            ("Agreement + likelihood (= PCE)", "pce"),
        ],
    )


def p_true_fusion(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Comparison with self-verification (docs/method.md#comparison-with-self-verification): P(True), PCE, and a head on
    [φ_A; P(True)]."""
    return _method_table(
        data,
        numbers,
        "ablation_p_true",
        "Comparison with self-verification",
        [("P(True)", "p_true"), ("PCE", "pce"), ("P(True) + PCE", "p_true_pce")],
        P_TRUE_HOW_TO,
    )


# --------------------------------------------------------------------------------- docs/method.md#consensus-blind-spot

VOTE_TOLERANCE = 1e-9
"""q_K is a share of K answers (e.g. 5/8); a subset is q_K ≥ threshold − this, so float rounding never drops one."""


def consensus_blind_spot(data: ReportData, thresholds: Sequence[float] = (0.625, 0.75, 0.875, 1.0)) -> ReportTable:
    """Consensus blind spot (docs/method.md#consensus-blind-spot): AUROC of SC@K (modal vote share q_K) and of PCE on
    the questions whose q_K ≥ threshold.

    Per threshold, a pair enters when its subset holds at least one correct and one wrong primary answer; ``n`` and
    ``wrong`` count the subset questions of those pairs. SC scores are q_K itself, so at 1.0 (unanimous) every
    score ties and SC's AUROC is 0.5 by construction; PCE scores are the pair's cross-fitted out-of-fold scores
    (mean over repetitions) restricted to the subset. Pairs without votes (K = 1) are left out and named.
    """
    columns = ("pairs", "n", "wrong", "SC", "PCE")
    voted = [
        i
        for i in _has(data, "sc_modal")
        if all("consensus" in evidence["features"] for evidence in data.pairs[i].evidences)
    ]
    unvoted = sorted(set(range(len(data.pairs))) - set(voted))
    lacking = f"Left out (no SC@K votes, K = 1): {_names(unvoted, data)}." if unvoted else ""
    if not voted:
        return ReportTable(
            "consensus_blind_spot",
            "Consensus blind spot",
            _empty(columns, "vote ≥"),
            note=f"Empty: no run sampled K > 1 responses per question. {lacking}",
        )
    votes = {
        i: np.asarray([evidence["features"]["consensus"]["q_K"] for evidence in data.pairs[i].evidences]) for i in voted
    }
    records = []
    for threshold in thresholds:
        n = wrong = 0
        sc, pce = [], []
        for i in voted:
            evaluation = data.evaluations[i]
            subset = votes[i] >= threshold - VOTE_TOLERANCE
            labels = evaluation.labels[subset]
            if labels.all() or not labels.any():
                continue
            n += labels.size
            wrong += int((labels == 0).sum())
            sc.append(_auroc(evaluation.scores["sc_modal"][subset], labels))
            pce.append(_auroc(evaluation.scores["pce"][subset], labels))
        records.append([len(sc), n, wrong, mean_of_defined(sc), mean_of_defined(pce)])
    frame = pd.DataFrame(records, columns=list(columns), index=pd.Index(list(thresholds), name="vote ≥"))
    frame[["pairs", "n", "wrong"]] = frame[["pairs", "n", "wrong"]].astype(int)
    note = (
        "Pairs: those whose subset (q_K ≥ threshold) holds both correct and wrong primary answers; n and wrong "
        "count their subset questions; SC and PCE are pair-equal macros of AUROC over them (a pair with a "
        "degenerate PCE cross-fit is skipped in the PCE macro). SC scores are q_K: constant at 1.0, so its "
        "AUROC there is 0.5 by construction."
    )
    return ReportTable(
        "consensus_blind_spot", "Consensus blind spot", frame, {"SC": True, "PCE": True}, f"{note} {lacking}".strip()
    )


def answer_leakage(data: ReportData) -> ReportTable:
    """Answer leakage (docs/method.md#answer-leakage): PCE and TrAC AUROC on the questions whose reasoning already
    states the primary answer and on those whose reasoning does not.

    Per subset, a pair enters when the subset holds at least one correct and one wrong primary answer; ``n`` and
    ``wrong`` count its questions; scores are the pair's cross-fitted out-of-fold scores restricted to the subset.
    """
    columns = ("pairs", "n", "wrong", "PCE", "TrAC")
    subsets = (("answer stated in the reasoning", True), ("answer not stated in the reasoning", False))
    records, share = [], []
    for _, stated in subsets:
        n = wrong = 0
        pce, trac = [], []
        for pair, evaluation in zip(data.pairs, data.evaluations, strict=True):
            flags = np.asarray([evidence.get("answer_in_reasoning") is stated for evidence in pair.evidences])
            labels = evaluation.labels[flags]
            if labels.all() or not labels.any() or not {"pce", "trac"} <= set(evaluation.scores):
                continue
            n += labels.size
            wrong += int((labels == 0).sum())
            pce.append(_auroc(evaluation.scores["pce"][flags], labels))
            trac.append(_auroc(evaluation.scores["trac"][flags], labels))
        records.append([len(pce), n, wrong, mean_of_defined(pce), mean_of_defined(trac)])
    for pair in data.pairs:
        known = [evidence.get("answer_in_reasoning") for evidence in pair.evidences]
        share.extend(flag for flag in known if flag is not None)
    frame = pd.DataFrame(records, columns=list(columns), index=pd.Index([label for label, _ in subsets], name="subset"))
    frame[["pairs", "n", "wrong"]] = frame[["pairs", "n", "wrong"]].astype(int)
    stated = f"{np.mean(share):.0%}" if share else "—"
    note = (
        f"The reasoning (what the probe reads) states the primary answer in {stated} of the questions with an answer "
        "(its text as a token of its own, or an equal number; multiple-choice questions and those without an answer "
        "are in neither subset). Pairs: those whose subset holds both correct and wrong primary answers; PCE and "
        "TrAC are pair-equal macros of their out-of-fold AUROC restricted to the subset."
    )
    return ReportTable("answer_leakage", "Answer leakage", frame, {"PCE": True, "TrAC": True}, note)


# -------------------------------------------------------------------------------------- docs/method.md#transfer-tables

MAX_TRANSFER_FOLDS = 10
"""Held-out groups per transfer scheme at most (docs/method.md#transfer-heads): more keys are dealt into this many
folds."""

SchemeKey = Callable[[PairRun], object]
SCHEMES: dict[str, tuple[SchemeKey, str]] = {
    "LODO": (lambda pair: pair.task, "at least 2 tasks"),
    "Global": (lambda pair: (pair.model, pair.task), "at least 2 (model, task) pairs"),
    "LOMO": (lambda pair: pair.model, "at least 2 models"),
}
"""Transfer schemes (docs/method.md#transfer-heads): the key a target holds out; a head scoring a target is fitted on
the pairs whose key differs. Global is leave-one-pair-out; its key (model, task) also holds out the target's other
decodings, which share its questions."""


def _feature_rows(data: ReportData, method: str) -> list[np.ndarray | None]:
    """Each pair's feature matrix of the registered head ``method``, None where a question lacks it."""
    row_of = get(method).features
    matrices: list[np.ndarray | None] = []
    for pair in data.pairs:
        rows = [row_of(evidence) for evidence in pair.evidences]
        matrices.append(None if any(row is None for row in rows) else np.asarray(rows, dtype=np.float64))
    return matrices


def _transfer_aurocs(
    data: ReportData, method: str, matrices: Sequence[np.ndarray | None], scheme: str, fit: Fitter | None = None
) -> np.ndarray:
    """AUROC of each pair scored by a ``method`` head fitted on the pairs ``scheme`` allows
    (docs/method.md#transfer-heads: source rows only, ``heads.transfer_scores``; ``fit``: another head fitted on the
    source rows, docs/method.md#classifier-capacity); NaN where the pair has no source, lacks the features, or one
    class only.

    The targets holding out the same key share one fitted head (one fit per task for LODO, per model for LOMO, per
    (model, task) for Global); each target score depends on its own row only, so this equals scoring every target
    on its own. With more than :data:`MAX_TRANSFER_FOLDS` keys, the keys are dealt into that many folds in order of
    first appearance and a fold is held out together, so the number of fits, and the report's time, stays linear in
    the number of pairs. Targets and sources are grouped in one pass over the pairs.
    """
    key_of, _ = SCHEMES[scheme]
    usable = [j for j, matrix in enumerate(matrices) if matrix is not None]
    targets_by_key: dict[object, list[int]] = defaultdict(list)
    for j in usable:
        targets_by_key[key_of(data.pairs[j])].append(j)
    values = np.full(len(data.pairs), math.nan)
    if len(targets_by_key) < 2:
        return values
    folds = min(len(targets_by_key), MAX_TRANSFER_FOLDS)
    fold_of = {key: number % folds for number, key in enumerate(targets_by_key)}
    targets_by_fold: list[list[int]] = [[] for _ in range(folds)]
    for key, targets in targets_by_key.items():
        targets_by_fold[fold_of[key]].extend(targets)
    # every usable row once, in pair order (the order of a source's rows), tagged with its pair's fold
    rows = np.vstack([matrices[j] for j in usable])
    labels = np.concatenate([data.evaluations[j].labels for j in usable])
    owner = np.repeat([fold_of[key_of(data.pairs[j])] for j in usable], [len(matrices[j]) for j in usable])
    with threadpool_limits(limits=1, user_api="blas"):
        for number, targets in enumerate(targets_by_fold):
            source = owner != number
            target_rows = np.vstack([matrices[i] for i in targets])
            names = [f"{method}[{c}]" for c in range(rows.shape[1])]
            scores = transfer_scores(rows[source], labels[source], target_rows, names, fit)
            for i, part in zip(targets, np.split(scores, np.cumsum([len(matrices[i]) for i in targets])[:-1])):
                values[i] = _auroc(part, data.evaluations[i].labels)
    return values


def _scheme_reason(data: ReportData, scheme: str) -> str | None:
    """Why ``scheme`` has no source for any pair (e.g. LODO with one task), or None."""
    key_of, needs = SCHEMES[scheme]
    if len({key_of(pair) for pair in data.pairs}) > 1:
        return None
    return f"{scheme} is NaN: it needs {needs}"


def transfer_by_target(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Transfer table, top (docs/method.md#transfer-tables): per held-out task, the leave-one-dataset-out PCE head
    (fitted on every pair of the other tasks, all models) against the pairs' in-domain cross-fitted PCE AUROC; Δ =
    transfer − in-domain, paired over the pairs where both are defined."""
    transfer = _transfer_aurocs(data, "pce", _feature_rows(data, "pce"), "LODO")
    in_domain = (numbers or data).per_pair("pce", "auroc")
    tasks = sorted({pair.task for pair in data.pairs})
    records = []
    for task in tasks:
        indices = [i for i, pair in enumerate(data.pairs) if pair.task == task]
        delta, both = _paired_mean(transfer[indices], in_domain[indices])
        records.append([mean_of_defined(transfer[indices]), mean_of_defined(in_domain[indices]), delta, both])
    frame = pd.DataFrame(
        records, columns=["Transfer", "In-domain", "Δ", "pairs"], index=pd.Index(tasks, name="held-out task")
    )
    note = (
        "PCE head: Transfer = fitted on all pairs of the other tasks (source rows only) and scored on the task's "
        "pairs; In-domain = 5×5-fold cross-fitted AUROC; both pair-equal macros over the task's pairs; Δ and "
        "'pairs' over the pairs where both are defined."
    )
    reason = _scheme_reason(data, "LODO")
    return ReportTable(
        "transfer_lodo", "Leave-one-dataset-out transfer (PCE)", frame, note=f"{note} {reason}." if reason else note
    )


def classifier_capacity(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Classifier capacity (docs/method.md#classifier-capacity): PCE's features under the logistic head and under
    higher-capacity heads, in-domain (cross-fitted on the report's folds) and leave-one-dataset-out, each with its
    difference to the logistic head over the pairs where both are defined."""
    matrices = _feature_rows(data, "pce")
    logistic = (numbers or data).per_pair("pce", "auroc")
    in_domain, lodo = {}, {}
    for name in CLASSIFIERS:
        fit = classifier_fitter(name)
        in_domain[name] = logistic if name == "logistic" else _cross_fitted_aurocs(data, matrices, fit)
        lodo[name] = _transfer_aurocs(data, "pce", matrices, "LODO", None if name == "logistic" else fit)
    records = [
        [
            mean_of_defined(in_domain[name]),
            _paired_mean(in_domain[name], in_domain["logistic"])[0],
            mean_of_defined(lodo[name]),
            _paired_mean(lodo[name], lodo["logistic"])[0],
            int((~np.isnan(in_domain[name])).sum()),
        ]
        for name in CLASSIFIERS
    ]
    frame = pd.DataFrame(
        records,
        columns=["In-domain AUROC", "Δ LR in-domain", "LODO AUROC", "Δ LR LODO", "pairs"],
        index=pd.Index([CLASSIFIER_LABELS[name] for name in CLASSIFIERS], name="classifier"),
    )
    reason = _scheme_reason(data, "LODO")
    note = (
        "The same PCE features under each head. In-domain: cross-fitted on the report's folds (5 repetitions × 5 "
        "question-grouped folds), pair-equal macro AUROC; LODO: fitted on every pair of the other tasks, scored on "
        "the task's pairs. Δ LR: the mean difference to the logistic head over the pairs where both are defined."
    )
    return ReportTable(
        "classifier_capacity",
        "Classifier capacity (same PCE features)",
        frame,
        {"In-domain AUROC": True, "LODO AUROC": True},
        f"{note} {reason}." if reason else note,
    )


def _cross_fitted_aurocs(data: ReportData, matrices: Sequence[np.ndarray | None], fit: Fitter) -> np.ndarray:
    """Each pair's AUROC of ``fit``'s heads cross-fitted on the pair's own folds (the mean over repetitions, as the
    report's per-pair values are); NaN where the pair lacks the features or cannot be split."""
    values = np.full(len(data.pairs), math.nan)
    for i, matrix in enumerate(matrices):
        if matrix is None:
            continue
        labels = data.evaluations[i].labels
        groups = np.arange(labels.size)
        scores = cross_fit_many({"pce": matrix}, labels, groups, fitters={"pce": fit})["pce"]
        values[i] = oof_metric(scores, labels, _auroc)
    return values


def _paired_mean(values: np.ndarray, reference: np.ndarray) -> tuple[float, int]:
    """The mean of ``values − reference`` over the pairs where both are defined, and how many pairs those are."""
    both = ~(np.isnan(values) | np.isnan(reference))
    return mean_of_defined(values[both] - reference[both]), int(both.sum())


def transfer_representations(data: ReportData) -> ReportTable:
    """Transfer table, bottom (docs/method.md#transfer-tables): macro AUROC of TUP, PCE and TrAC heads under
    leave-one-dataset-out, one global head per held-out pair (leave-one-pair-out) and leave-one-model-out."""
    matrices = {method: _feature_rows(data, method) for _, method in REPRESENTATIONS}
    values = {
        (label, scheme): _transfer_aurocs(data, method, matrices[method], scheme)
        for label, method in REPRESENTATIONS
        for scheme in SCHEMES
    }
    frame = pd.DataFrame(
        [[mean_of_defined(values[label, scheme]) for scheme in SCHEMES] for label, _ in REPRESENTATIONS],
        columns=list(SCHEMES),
        index=pd.Index([label for label, _ in REPRESENTATIONS], name="representation"),
    )
    counts = ", ".join(f"{scheme} over {int((~np.isnan(values['TrAC', scheme])).sum())} pair(s)" for scheme in SCHEMES)
    reasons = [reason for scheme in SCHEMES if (reason := _scheme_reason(data, scheme))]
    note = (
        f"Pair-equal macro AUROC of each target pair scored by a head fitted on source pairs only ({counts}; "
        "pairs with one class or no usable source are NaN and skipped). Global holds out the target's "
        f"(model, task), all decodings. {'. '.join(reasons)}{'.' if reasons else ''}"
    )
    return ReportTable(
        "transfer_representations",
        "Transfer: representation comparison",
        frame,
        dict.fromkeys(SCHEMES, True),
        note.strip(),
    )


# ----------------------------------------------------------------------------------------------- label efficiency


@dataclass(frozen=True)
class LabelSplit:
    """A fixed stratified test split of one pair and its training questions per class in a seeded order.

    ``training(f)`` takes the first max(⌈f·n_c⌉, 2) training questions of each class c (all of them when it has fewer):
    stratified, nested (a smaller fraction's set is inside a larger one's), all of them at f = 1, and never too few
    of a class for a head to be fitted (docs/method.md#label-efficiency).
    """

    test: np.ndarray
    train_by_class: tuple[np.ndarray, np.ndarray]

    def training(self, fraction: float) -> np.ndarray:
        return np.sort(
            np.concatenate(
                [order[: max(math.ceil(fraction * order.size), MIN_SAMPLES_PER_CLASS)] for order in self.train_by_class]
            )
        )


def label_split(labels: np.ndarray, test_fraction: float, seed: int, key: str) -> LabelSplit:
    """Per class, a permutation seeded by (``seed``, crc32(``key``)); its first round(test_fraction · n_c)
    questions form the test split, the rest the training order. Same inputs → same split, whatever the other
    pairs of the report are."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    test, train = [], []
    for label in (0, 1):
        order = rng.permutation(np.flatnonzero(labels == label))
        n_test = math.floor(test_fraction * order.size + 0.5)
        test.append(order[:n_test])
        train.append(order[n_test:])
    return LabelSplit(np.sort(np.concatenate(test)), (train[0], train[1]))


def _split_problem(labels: np.ndarray, split: LabelSplit, fraction: float) -> str | None:
    """Why the pair gives no AUROC at ``fraction`` (too few training labels of a class, one-class test), or None."""
    counts = np.bincount(labels[split.training(fraction)], minlength=2)
    if counts.min() < MIN_SAMPLES_PER_CLASS:
        return f"training labels per class {counts.tolist()} (at least {MIN_SAMPLES_PER_CLASS} of each needed)"
    if len(np.unique(labels[split.test])) < 2:
        return "the test split has one class only"
    return None


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _retention(data: ReportData, label: str, at: np.ndarray, full: np.ndarray) -> float:
    """Macro AUROC ``at`` a fraction / macro at 100% over the pairs defined at the fraction
    (docs/method.md#label-efficiency); NaN when none is, and NaN with a TracWarning naming the pairs when the
    100% macro is 0 (every such pair's full-label AUROC is 0: the ratio is undefined)."""
    defined = ~np.isnan(at)
    if not defined.any():
        return math.nan
    denominator = mean_of_defined(full[defined])
    if denominator == 0:
        zero = [int(i) for i in np.flatnonzero(defined & (full == 0))]
        warnings.warn(
            f"label efficiency: {label} retention is NaN: the full-label AUROC is 0 on {_names(zero, data)}",
            TracWarning,
            stacklevel=3,
        )
        return math.nan
    return mean_of_defined(at[defined]) / denominator


def label_efficiency(
    data: ReportData, fractions: Sequence[float] = (0.01, 0.05, 0.25, 1.0), test_fraction: float = 0.4, seed: int = 0
) -> ReportTable:
    """Label efficiency (docs/method.md#label-efficiency): heads fitted on a fraction of each pair's training labels
    (fixed stratified 40% test split, :func:`label_split`), AUROC on the test split, pair-equal macro; ``retention`` =
    macro at the fraction / macro at 100% on the same pairs."""
    if not fractions or any(not 0 < fraction <= 1 for fraction in fractions):
        raise ValueError(f"fractions must lie in (0, 1], got {tuple(fractions)!r}")
    columns = [(label, method) for label, method in LABEL_EFFICIENCY_COLUMNS if _has(data, method)]
    matrices = {label: _feature_rows(data, method) for label, method in columns}
    splits = [label_split(pair.labels, test_fraction, seed, pair.name) for pair in data.pairs]
    steps = sorted(set(fractions) | {1.0})
    aurocs = {(label, fraction): np.full(len(data.pairs), math.nan) for label, _ in columns for fraction in steps}
    problems: dict[float, list[tuple[int, str]]] = defaultdict(list)
    with threadpool_limits(limits=1, user_api="blas"):
        for i, (pair, split) in enumerate(zip(data.pairs, splits, strict=True)):
            labels = pair.labels
            for fraction in steps:
                problem = _split_problem(labels, split, fraction)
                if problem:
                    problems[fraction].append((i, problem))
                    continue
                train = split.training(fraction)
                for label, _ in columns:
                    features = matrices[label][i]
                    if features is None:
                        continue
                    head = fit_head(features[train], labels[train], [f"x{c}" for c in range(features.shape[1])])
                    aurocs[label, fraction][i] = _auroc(head.predict(features[split.test]), labels[split.test])
    records = []
    for fraction in fractions:
        row, ratios = [], []
        for label, _ in columns:
            at, full = aurocs[label, fraction], aurocs[label, 1.0]
            row.append(mean_of_defined(at))
            ratios.append(_retention(data, label, at, full))
        records.append([*row, *ratios, len(data.pairs) - len(problems[fraction])])
    names = [label for label, _ in columns] + [f"{label} retention" for label, _ in columns]
    frame = pd.DataFrame(
        records,
        columns=[*names, "pairs"],
        index=pd.Index([_percent(fraction) for fraction in fractions], name="labels"),
    )
    left_out = [
        f"{_percent(fraction)}: {len(found)} of {len(data.pairs)} pair(s) NaN "
        f"({_names([i for i, _ in found], data)}; e.g. {found[0][1]})."
        for fraction in fractions
        if (found := problems[fraction])
    ]
    absent = [label for label, method in LABEL_EFFICIENCY_COLUMNS if not _has(data, method)]
    lacking = f"Not in these runs: {', '.join(absent)}; {PREFIX_PROBES_HOW_TO}." if absent else ""
    note = (
        f"Fixed stratified {test_fraction:.0%} test split per pair (seed {seed}); heads fitted on the stated share "
        f"of each class's training questions (rounded up, at least {MIN_SAMPLES_PER_CLASS} of each class, nested). "
        "Sequence only: a head on the mean token log-probability; Conv.+final: a head on the prefix probes' answer "
        "convergence and agreement and the completed trace's agreement e. Retention: macro AUROC at the share / at "
        "100% on the same pairs. " + " ".join([*left_out, lacking])
    )
    return ReportTable(
        "label_efficiency", "Label efficiency", frame, {label: True for label, _ in columns}, note.strip()
    )


# ------------------------------------------------------------------------------------ docs/method.md#decoding-symmetry


def decoding_symmetry(data: ReportData, numbers: Numbers | None = None) -> ReportTable:
    """Decoding symmetry (docs/method.md#decoding-symmetry): the same (model, task) under different primary / probe
    temperatures.

    Agreement is the mean of e (probe answer ≡ primary answer) over the questions whose probe gave one.
    """
    columns = ("n", "Acc", "Agreement", "PCE AUROC", "TrAC AUROC")
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, pair in enumerate(data.pairs):
        groups[pair.task, pair.model].append(i)
    varied = {key: indices for key, indices in sorted(groups.items()) if len(indices) > 1}
    if not varied:
        return ReportTable(
            "decoding_symmetry",
            "Decoding-symmetry matrix",
            _empty(columns, "task / model / decoding"),
            note="Empty: no (model, task) was run under more than one primary/probe decoding (run the "
            "same task with other temperature / probe_temperature to fill it).",
        )
    numbers = numbers or data
    pce, trac = numbers.per_pair("pce", "auroc"), numbers.per_pair("trac", "auroc")
    default = decoding_label(DEFAULT_DECODING)
    rows, records = [], []
    for (task, model), indices in varied.items():
        for i in sorted(indices, key=lambda i: decoding_label(data.pairs[i].decoding) != default):
            pair = data.pairs[i]
            label = decoding_label(pair.decoding)
            agree = [math.nan if evidence["agree"] is None else evidence["agree"] for evidence in pair.evidences]
            rows.append(f"{task} / {model} / {label}{' (default)' if label == default else ''}")
            records.append([len(pair.evidences), pair.accuracy, mean_of_defined(agree), pce[i], trac[i]])
    frame = pd.DataFrame(records, columns=list(columns), index=pd.Index(rows, name="task / model / decoding"))
    return ReportTable(
        "decoding_symmetry",
        "Decoding-symmetry matrix",
        frame,
        note="Rows: (model, task) pairs run under several primary → probe decodings. Acc: primary "
        "accuracy; Agreement: share of questions whose probe re-states the primary answer; PCE / "
        "TrAC: cross-fitted AUROC of the pair.",
    )


def all_analyses(
    data: ReportData, numbers: Numbers | None = None, classifier_capacity_table: bool = False
) -> list[ReportTable]:
    """Every analysis table of ``trac report``, in the paper's order; shared numbers read from ``numbers`` (default:
    ``data``). The classifier-capacity table, which fits 75 heads of higher capacity per pair, only when asked for
    (``trac report --classifier-capacity``)."""
    capacity = [classifier_capacity(data, numbers)] if classifier_capacity_table else []
    return [
        component_ablation(data, numbers),
        tup_span(data, numbers),
        trace_controls(data, numbers),
        pce_decomposition(data, numbers),
        p_true_fusion(data, numbers),
        cue_variants(data, numbers),
        consensus_blind_spot(data),
        answer_leakage(data),
        transfer_by_target(data, numbers),
        transfer_representations(data),
        label_efficiency(data),
        *capacity,
        decoding_symmetry(data, numbers),
    ]
