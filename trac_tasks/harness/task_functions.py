"""The functions TrAC task YAMLs name with ``!function``: filter, per-document results and the aggregation.

Per document, ``process_results`` returns ``acc`` (the primary sample is correct), ``maj_acc`` (the majority answer
of the K samples is correct, K > 1) and ``trac`` (the question's evidence dict, :mod:`trac_metrics.features.evidence`).
The ``trac`` aggregation cross-fits every head on the task's documents and returns all metrics at once
(``trac_auroc``, ``sc_modal_aurc`` ...: :mod:`trac_metrics.heads.evaluate`); it also writes each document's
out-of-fold scores and calibrated probabilities of correctness into its evidence dict (``scores``, ``p_correct``,
docs/method.md#calibration-maps), so lm-eval's samples file (``--log_samples``) carries the TrAC score and
probability, probe answer, agreement and primary answer of every document. A task none of whose primary responses
gave an answer (accuracy 0 by construction, typically a ``trac.marker`` the model never writes) gets one warning.

Each document's evidence also carries its trace probes' token counts (``probe_cache``), so the aggregation reports
the task's probe cache share as ``probe_cached_share`` and warns when it is below 50 %
(docs/method.md#probe-cache-share).

The aggregation also reports how often the re-elicited answer agrees with the primary on correct and on wrong
responses (``probe_agree_correct``, ``probe_agree_wrong``) and logs it beside the paper's figures, so a probe that
agrees on everything is visible at once (docs/method.md#probe-agreement).

Each document's evidence also counts its comparisons of answers that ran out of the symbolic work budget
(``undecided_comparisons``: undecided, counted as not equivalent, docs/method.md#the-symbolic-work-budget); the
aggregation reports the task's sum under the same key and logs it when it is not 0.

With trac-eval turned off (``TRAC_EVAL_DISABLE``, :func:`trac_tasks.harness.autoload.disabled`) no backend produces
records, so this module refuses to be imported: lm-eval imports it when it loads a TrAC task's YAML, so the run stops
there, before any generation, not in ``process_results`` after all of it
(docs/guide/reliability.md#turning-trac-eval-off).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trac_metrics.answers import UNDECIDED_KEY
from trac_metrics.features.cache_share import ProbeCacheCounts, low_share_warning, probe_cache_counts
from trac_metrics.features.evidence import document_accuracy, question_evidence, undecided_total
from trac_metrics.features.probe_agreement import probe_agreement
from trac_metrics.heads.evaluate import evaluate_task
from trac_tasks.generation.progress import LOGGER
from trac_tasks.harness.autoload import DISABLE_VARIABLE, disabled

if disabled():
    raise ImportError(
        f"{DISABLE_VARIABLE}={os.environ[DISABLE_VARIABLE]!r} turns trac-eval off, so no backend records what a TrAC "
        f"task scores: this task cannot run. Unset {DISABLE_VARIABLE} to run it "
        "(docs/guide/reliability.md#turning-trac-eval-off)"
    )

PROBE_CACHE_KEY = "probe_cache"
"""Evidence key of a document's trace-probe token counts (:class:`~trac_metrics.features.cache_share.ProbeCacheCounts`),
written by :func:`process_results` and summed by :func:`aggregate_trac`."""
CACHED_SHARE_METRIC = "probe_cached_share"
"""Results key of a task's probe cache share (docs/method.md#probe-cache-share)."""


class MultiMetricResult(dict):
    """An aggregation result holding several named numbers; expanded into one results key per number
    (:func:`trac_tasks.harness.lm_eval_hooks.expand_multi_metric_aggregations`)."""


class AllSamples(list):
    """The K responses of one document, as :func:`keep_all_samples` keeps them (a list lm-eval's own filters never
    produce, so ``process_results`` of an lm-eval task switched to TrAC knows its ``trac`` filter's input)."""


def keep_all_samples(resps: Iterable[Sequence[str]], docs: Iterable[Any]) -> list[AllSamples]:
    """lm-eval filter that keeps all K responses of each document (the default filter keeps only the first)."""
    return [AllSamples(responses) for responses in resps]


class KeepAllSamples:
    """:func:`keep_all_samples` as an lm-eval filter class: the filter ``trac_all_samples`` of trac-eval's
    ``lm_eval.filters`` entry point (``filter: [{function: trac_all_samples}]`` on an lm-eval that reads it,
    :data:`trac_tasks.harness.compat.ENTRY_POINTS`)."""

    def apply(self, resps: Iterable[Sequence[str]], docs: Iterable[Any]) -> list[AllSamples]:
        return keep_all_samples(resps, docs)


def process_results(doc: Mapping[str, Any], results: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Per-document metrics of a TrAC task from the K responses carrying their records."""
    responses = results[0]
    records = [getattr(response, "record", None) for response in responses]
    if any(record is None for record in records):
        raise RuntimeError(
            "a TrAC task received responses without TrAC records: run it with --model vllm or --model hf (the "
            "backends trac-eval hooks), with trac-eval installed in the same environment as lm-eval, and without "
            "a --use_cache database written by a run without trac-eval"
        )
    evidence = question_evidence(records)
    evidence[PROBE_CACHE_KEY] = probe_cache_counts(records).to_dict()
    return {**document_accuracy(evidence), "trac": evidence}


def aggregate_trac(items: Sequence[dict[str, Any]]) -> MultiMetricResult:
    """All TrAC and baseline metrics of a task (docs/method.md#selective-prediction-metrics), cross-fitted over its
    documents (docs/method.md#cross-fitting-protocol)."""
    warn_if_no_answer(items)
    cache = task_probe_cache(items)
    agreement = probe_agreement(items)
    if items:
        LOGGER.info("trac-eval: task %s: %s", items[0]["task"], agreement.line())
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        evaluation = evaluate_task(items)
    p_correct = evaluation.p_correct  # averaged over the repetitions once
    for position, evidence in enumerate(items):
        evidence["scores"] = {method: float(values[position]) for method, values in evaluation.scores.items()}
        evidence["p_correct"] = {method: float(values[position]) for method, values in p_correct.items()}
    return MultiMetricResult(
        {
            **evaluation.metrics,
            **agreement.results(),
            CACHED_SHARE_METRIC: cache.share,
            UNDECIDED_KEY: task_undecided(items),
        }
    )


def task_undecided(items: Sequence[dict[str, Any]]) -> int:
    """The task's comparisons that ran out of the symbolic work budget (docs/method.md#the-symbolic-work-budget),
    summed over its documents' evidence; logged once for the task when not 0."""
    undecided = undecided_total(items)
    if undecided:
        LOGGER.warning(
            "trac-eval: task %s: %d comparison(s) of answers ran out of the symbolic work budget: undecided, counted "
            "as not equivalent (docs/method.md#the-symbolic-work-budget)",
            items[0]["task"],
            undecided,
        )
    return undecided


def task_probe_cache(items: Sequence[dict[str, Any]]) -> ProbeCacheCounts:
    """The task's trace-probe token counts, summed over its documents' evidence; logs the low-share warning of
    :func:`~trac_metrics.features.cache_share.low_share_warning` once for the task."""
    counts = sum((ProbeCacheCounts.from_dict(evidence[PROBE_CACHE_KEY]) for evidence in items), ProbeCacheCounts())
    message = low_share_warning(f"task {items[0]['task']}", counts) if items else None
    if message is not None:
        LOGGER.warning(message)
    return counts


def warn_if_no_answer(items: Sequence[dict[str, Any]]) -> None:
    """Warn once for a task whose primary responses all lack an answer (docs/method.md#end-of-thinking-marker: an
    answer is read only after the end-of-thinking marker, so a fixed ``trac.marker`` the model never writes leaves
    every answer missing and the accuracy 0 without any error)."""
    if not items or any(evidence["primary_answer"] is not None for evidence in items):
        return
    LOGGER.warning(
        "trac-eval: task %s: no answer was read from any of its %d primary responses, so every one counts as wrong. "
        "An answer is read only after the end-of-thinking marker: check that the model writes the task's "
        'trac.marker (or set it to auto, or "" for none), then trac.answer_kind and max_gen_toks.',
        items[0]["task"],
        len(items),
    )
