"""Per-question evidence: the label, features and baseline scores of one question's K responses (SPEC §1–5).

:func:`question_evidence` turns the records of one question (repeat 0 is the primary response) into a plain,
JSON-serializable dict. It is the unit every consumer works on: the lm-eval aggregation (one per document, also
written to lm-eval's samples file) and ``trac report`` / ``trac rescore`` on stored records alike. The reference
answer enters only the label, never a feature or a baseline score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trac_metrics import baselines
from trac_metrics.answers import answer_classes, equivalent
from trac_metrics.features import PCE_FEATURE_NAMES, consensus_features, pce_features, tup_features
from trac_metrics.records import ResponseRecord

EVIDENCE_VERSION = 1


def _pce_of(primary: ResponseRecord, variant: str) -> list[float] | None:
    """φ_A of the primary response's probe ``variant`` (None when that probe was not run)."""
    probe = primary.probes.get(variant)
    if probe is None:
        return None
    values = pce_features(primary.answer, probe.answer, probe.answer_logprobs, probe.first_token_logprob,
                          kind=primary.answer_kind)
    return values.tolist()


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
            "--use_cache, all K samples come back as one cached response: run TrAC tasks without it)")
    if len({record.answer_kind for record in ordered}) != 1:
        raise ValueError(f"question {ordered[0].key[:2]} mixes answer kinds")
    if ordered[0].reference is None:
        raise ValueError(f"question {ordered[0].key[:2]} has no reference answer: it cannot be labelled")
    return ordered


def question_evidence(records: Sequence[ResponseRecord]) -> dict[str, Any]:
    """Label, features and baseline scores of one question; see the module docstring.

    Keys: ``task``, ``doc_id``, ``num_samples`` (K), ``correct`` (primary answer ≡ reference, 0/1),
    ``majority_correct`` (modal answer ≡ reference), ``primary_answer``, ``reference``, ``probe_answer``,
    ``agree`` (e, NaN when missing), ``features`` (``pce``: φ_A, ``tup``: φ_P, ``consensus``: q_K, h_K, vote
    margin, q_K(a) when K > 1, ``pce_<variant>`` for ablation probes), ``baselines`` (score per method, higher =
    more likely correct, SPEC §5), ``metadata`` of the primary record.
    """
    ordered = _check_question(records)
    primary = ordered[0]
    kind = primary.answer_kind
    answers = [record.answer for record in ordered]
    features: dict[str, Any] = {
        # a primary whose probe could not run (prompt beyond the context) has all of φ_A missing
        "pce": _pce_of(primary, "trace") or [float("nan")] * len(PCE_FEATURE_NAMES),
        "tup": tup_features(primary.token_logprobs.astype(np.float64),
                            primary.topk_entropy.astype(np.float64)).tolist(),
    }
    for variant in primary.probes:
        if variant != "trace":
            features[f"pce_{variant}"] = _pce_of(primary, variant)
    topk_mean = primary.topk_mean_logprob.astype(np.float64)
    scores: dict[str, float] = {
        "mean_logprob": baselines.mean_logprob(primary.token_logprobs),
        "self_certainty": baselines.self_certainty(topk_mean, primary.top_k),
        "deepconf_bottom": baselines.deepconf_bottom(topk_mean),
        "selfdoubt": baselines.selfdoubt(primary.text),
    }
    if primary.p_true is not None:
        scores["p_true"] = float(primary.p_true)
    majority_answer = primary.answer
    if len(ordered) > 1:
        consensus = consensus_features(answers, kind=kind)
        features["consensus"] = consensus
        confidences = [baselines.mean_logprob(record.token_logprobs) for record in ordered]
        scores.update({
            "sc_modal": consensus["q_K"],
            "sc_primary": consensus["q_primary"],
            "semantic_entropy": -consensus["h_K"],
            "selfcheck": baselines.selfcheck_unigram(primary.text, [record.text for record in ordered[1:]]),
            "cw_vote": (float("nan") if np.isnan(confidences).any()
                        else baselines.confidence_weighted_vote(answers, confidences, kind=kind)),
        })
        majority_answer = _modal_answer(answers, kind)
    probe = primary.probes.get("trace")
    return {
        "version": EVIDENCE_VERSION,
        "task": primary.task,
        "doc_id": primary.doc_id,
        "num_samples": len(ordered),
        "correct": int(equivalent(primary.answer, primary.reference, kind=kind)),
        "majority_correct": int(equivalent(majority_answer, primary.reference, kind=kind)),
        "primary_answer": primary.answer,
        "reference": primary.reference,
        "probe_answer": None if probe is None else probe.answer,
        "agree": None if features["pce"] is None else features["pce"][0],
        "features": features,
        "baselines": scores,
        "metadata": dict(primary.metadata),
    }


def _modal_answer(answers: Sequence[str | None], kind: str) -> str | None:
    """The first-seen representative of the largest equivalence class (ties: the class seen first)."""
    classes = answer_classes(answers, kind=kind)
    counts = np.bincount(classes)
    return answers[classes.index(int(np.argmax(counts)))]
