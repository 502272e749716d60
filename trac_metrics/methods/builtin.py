"""The built-in uncertainty methods, each declared once (docs/architecture.md#method-registry): TrAC and its
components, the baselines of docs/method.md#baselines, the probe-variant ablation heads, the prefix-probe methods
(docs/method.md#prefix-probes) and the report's diagnostic heads. Registry order is the ``trac summary`` order;
``leaderboard_row`` is the paper's Table 1 order.

A baseline is a function of one :class:`~trac_metrics.methods.registry.Question` returning a float (or None when
the records lack its input); a head is a function of one evidence dict returning its feature row
(docs/method.md#head-feature-sets). Every function is module-level, so worker processes can receive it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from trac_metrics.features import baselines, prefix_probes
from trac_metrics.features.vectors import PCE_FEATURE_NAMES, tup_feature_names
from trac_metrics.methods.registry import (
    K_GENERATIONS,
    ONE_GENERATION,
    Cost,
    Family,
    Method,
    Question,
    Scope,
    register_all,
    with_probe,
)
from trac_metrics.records import CUE_VARIANTS, PREFIX_VARIANT

CONSENSUS_FUSION_NAMES = ("consensus_q_K", "consensus_h_K")
"""Names of the two vote statistics Consensus Fusion @K appends to [φ_A; φ_P] (docs/method.md#consensus-fusion)."""
PROBE_VARIANTS_SWITCH = "trac: probe_variants: [trace, question_only, shuffled_trace, teacher_forced, after_answer]"
CUE_VARIANTS_SWITCH = "trac: probe_variants: [trace, cue_answer, cue_therefore]"
PREFIX_PROBES_SWITCH = "trac: prefix_probes: [0.25, 0.5, 0.75]"
PREFIX_PROBE_SCORES = ("answer_convergence", "prefix_agreement", "prefix_agreement_weighted")
"""The prefix-probe scores TrAC + prefix probes appends to [φ_A; φ_P], as the evidence stores them (higher = more
confident; docs/method.md#trac-with-prefix-probes)."""
P_TRUE_SWITCH = "trac: p_true: true"
JUDGE_SWITCH = "python -m trac_tasks.engines.judge RUN_FOLDER --judge MODEL (after the run)"
FULL_VOCABULARY_SWITCH = "--model hf (the engine that gives the full next-token distribution)"

# ------------------------------------------------------------------------------ baselines (docs/method.md#baselines)


def _mean_logprob(question: Question) -> float:
    return baselines.mean_logprob(question.primary.token_logprobs)


def _self_certainty(question: Question) -> float:
    primary = question.primary
    return baselines.self_certainty(primary.topk_mean_logprob.astype(np.float64), primary.top_k)


def _full_self_certainty(question: Question) -> float | None:
    """Self-certainty over the whole vocabulary (docs/method.md#self-certainty); None where the engine gave only the
    top-k (vLLM, a served model)."""
    means = question.primary.vocabulary_mean_logprob
    return None if means is None else baselines.full_self_certainty(means.astype(np.float64))


def _deepconf_bottom(question: Question) -> float:
    return baselines.deepconf_bottom(question.primary.topk_mean_logprob.astype(np.float64))


def _p_true(question: Question) -> float | None:
    """P(True) of the primary, stored at generation time (docs/method.md#ptrue); None when it was not asked for."""
    return None if question.primary.p_true is None else float(question.primary.p_true)


def _cross_model(question: Question) -> float | None:
    """ℓ_judge, a second model's mean log-probability of the primary answer after the first one's reasoning
    (docs/method.md#cross-model-score); None where no judge scored the question."""
    return None if question.judgement is None else question.judgement.answer_logprob


def _selfdoubt(question: Question) -> float:
    return baselines.selfdoubt(question.primary.text)


def _trace_length(question: Question) -> float:
    primary = question.primary
    return baselines.trace_length(primary.num_tokens if primary.reasoning_tokens is None else primary.reasoning_tokens)


def _sc_modal(question: Question) -> float:
    return baselines.sc_modal(question.answers, kind=question.kind)


def _sc_modal_of_first(question: Question, n: int) -> float | None:
    """SC@n on the modal answer from the first n of the K samples, the primary first (docs/method.md#self-consistency);
    None for a question with fewer than n samples."""
    answers = question.answers
    return None if len(answers) < n else baselines.sc_modal(answers[:n], kind=question.kind)


def _sc_primary(question: Question) -> float:
    return baselines.sc_primary(question.answers, kind=question.kind)


def _semantic_entropy(question: Question) -> float:
    return baselines.semantic_entropy(question.answers, kind=question.kind)


def _selfcheck(question: Question) -> float:
    return baselines.selfcheck_unigram(question.primary.text, [response.text for response in question.responses[1:]])


def _mean_logprobs(question: Question) -> list[float] | None:
    """Each response's mean token logprob; None when a response has none (no tokens, warned by mean_logprob)."""
    confidences = [baselines.mean_logprob(response.token_logprobs) for response in question.responses]
    return None if np.isnan(confidences).any() else confidences


def _cw_vote(question: Question) -> float:
    """The confidence-weighted vote; NaN when a sample has no mean logprob (no tokens)."""
    confidences = _mean_logprobs(question)
    if confidences is None:
        return math.nan
    return baselines.confidence_weighted_vote(question.answers, confidences, kind=question.kind)


def _cisc(question: Question) -> float:
    """CISC's weighted vote share of the primary answer; NaN when a sample has no mean logprob (no tokens)."""
    confidences = _mean_logprobs(question)
    return math.nan if confidences is None else baselines.cisc(question.answers, confidences, kind=question.kind)


def _cocoa(question: Question) -> float:
    return baselines.cocoa(question.primary.token_logprobs, question.answers, kind=question.kind)


def _prefix_score(question: Question, score: Callable[..., float]) -> float | None:
    """A prefix-probe score of the primary (:mod:`trac_metrics.features.prefix_probes`); None when its record holds
    no prefix probe (the ``prefix_probes`` switch off)."""
    primary = question.primary
    return score(primary.answer, primary.prefix_probes, question.kind) if primary.prefix_probes else None


# ------------------------------------------------------------ head feature rows (docs/method.md#head-feature-sets)


def _pce(evidence: Mapping[str, Any]) -> list[float] | None:
    return evidence["features"]["pce"]


def _tup(evidence: Mapping[str, Any]) -> list[float]:
    return evidence["features"]["tup"]


def _consensus(evidence: Mapping[str, Any]) -> Mapping[str, float] | None:
    return evidence["features"].get("consensus")


def _trac(evidence: Mapping[str, Any]) -> list[float] | None:
    pce = _pce(evidence)
    return None if pce is None else [*pce, *_tup(evidence)]


def _consensus_fusion(evidence: Mapping[str, Any]) -> list[float] | None:
    """[φ_A; φ_P; q_K; h_K] (docs/method.md#consensus-fusion)."""
    trac, consensus = _trac(evidence), _consensus(evidence)
    return None if trac is None or consensus is None else [*trac, consensus["q_K"], consensus["h_K"]]


def _supervised_consensus(evidence: Mapping[str, Any]) -> list[float] | None:
    """[q_K, h_K, vote margin, trace mean logprob, φ_P, answer likelihood ℓ] (docs/method.md#supervised-consensus)."""
    consensus, pce = _consensus(evidence), _pce(evidence)
    if consensus is None or pce is None:
        return None
    return [
        consensus["q_K"],
        consensus["h_K"],
        consensus["vote_margin"],
        evidence["baselines"]["mean_logprob"],
        *_tup(evidence),
        pce[1],
    ]


def _variant(evidence: Mapping[str, Any], name: str) -> list[float] | None:
    """φ_A of the primary's probe variant ``name`` (docs/method.md#probe-variants)."""
    return evidence["features"].get(f"pce_{name}")


def _pce_answer_support(evidence: Mapping[str, Any]) -> list[float] | None:
    """[φ_A; ℓ, ℓ_min, ℓ_head, c1 of the teacher-forced a] (docs/method.md#trace-conditioning-controls): PCE plus the
    support the model gives the primary answer forced after the same prompt (its e is 1 by construction)."""
    pce, forced = _pce(evidence), _variant(evidence, "teacher_forced")
    return None if pce is None or forced is None else [*pce, *forced[1:]]


def _trac_prefix(evidence: Mapping[str, Any]) -> list[float] | None:
    """[φ_A; φ_P; the three prefix-probe scores] (docs/method.md#trac-with-prefix-probes)."""
    trac, scores = _trac(evidence), evidence["baselines"]
    if trac is None or not all(name in scores for name in PREFIX_PROBE_SCORES):
        return None
    return [*trac, *(scores[name] for name in PREFIX_PROBE_SCORES)]


def _tup_generation(evidence: Mapping[str, Any]) -> list[float] | None:
    """φ_P over the whole generation (docs/method.md#tup-span); None in evidence written before it was kept."""
    return evidence["features"].get("tup_generation")


def _trac_tup_generation(evidence: Mapping[str, Any]) -> list[float] | None:
    """[φ_A; φ_P over the whole generation] (docs/method.md#tup-span)."""
    pce, profile = _pce(evidence), _tup_generation(evidence)
    return None if pce is None or profile is None else [*pce, *profile]


def _sequence_only(evidence: Mapping[str, Any]) -> list[float]:
    """The mean token log-probability of the response, alone (docs/method.md#label-efficiency: "sequence only")."""
    return [evidence["baselines"]["mean_logprob"]]


def _answer_token(evidence: Mapping[str, Any]) -> list[float]:
    """The mean log-probability of the answer's own tokens (docs/method.md#answer-token-log-probability)."""
    return [_or_nan(evidence["answer_token_logprob"])]


def _answer_confidence(evidence: Mapping[str, Any]) -> list[float]:
    """The response's mean token log-probability and its answer tokens'
    (docs/method.md#answer-token-log-probability)."""
    return [evidence["baselines"]["mean_logprob"], _or_nan(evidence["answer_token_logprob"])]


def _or_nan(value: float | None) -> float:
    """A feature the evidence may lack (None), as the heads read it: NaN, given a missingness indicator."""
    return float("nan") if value is None else value


def _convergence_final(evidence: Mapping[str, Any]) -> list[float] | None:
    """The prefix probes' answer convergence and agreement and the completed trace's agreement e
    (docs/method.md#label-efficiency: "convergence + final")."""
    scores, pce = evidence["baselines"], _pce(evidence)
    if pce is None or not all(name in scores for name in PREFIX_PROBE_SCORES[:2]):
        return None
    return [*(scores[name] for name in PREFIX_PROBE_SCORES[:2]), pce[0]]


def _pce_agreement(evidence: Mapping[str, Any]) -> list[float] | None:
    """e alone: does the re-stated answer match the original (docs/method.md#pce-decomposition)."""
    pce = _pce(evidence)
    return None if pce is None else pce[:1]


def _pce_likelihood(evidence: Mapping[str, Any]) -> list[float] | None:
    """ℓ, ℓ_min, ℓ_head, c1 without e: how strongly the re-stated answer is produced, not whether it matches."""
    pce = _pce(evidence)
    return None if pce is None else pce[1:]


def _p_true_pce(evidence: Mapping[str, Any]) -> list[float] | None:
    """[φ_A; P(True)] (docs/method.md#comparison-with-self-verification)."""
    pce, p_true = _pce(evidence), evidence["baselines"].get("p_true")
    return None if pce is None or p_true is None else [*pce, p_true]


def _pce_names(n_bins: int) -> tuple[str, ...]:
    return PCE_FEATURE_NAMES


def _trac_names(n_bins: int) -> tuple[str, ...]:
    return PCE_FEATURE_NAMES + tup_feature_names(n_bins)


def _consensus_fusion_names(n_bins: int) -> tuple[str, ...]:
    return _trac_names(n_bins) + CONSENSUS_FUSION_NAMES


def _trac_prefix_names(n_bins: int) -> tuple[str, ...]:
    return _trac_names(n_bins) + PREFIX_PROBE_SCORES


# ------------------------------------------------------------------------------------------------- the registry

PROBED = with_probe(ONE_GENERATION)
K_PROBED = with_probe(K_GENERATIONS)
HEAD, SINGLE, SAMPLED = Family.HEAD, Family.SINGLE_TRACE, Family.SAMPLING

BUILTIN_METHODS = (
    Method(
        "trac",
        "TrAC",
        HEAD,
        PROBED,
        features=_trac,
        feature_names=_trac_names,
        leaderboard_row=8,
        summary="A logistic head on the re-stated answer's agreement and likelihood (PCE) and the trace profile (TUP)",
        doc="docs/method.md#head-feature-sets",
    ),
    Method(
        "pce",
        "PCE",
        HEAD,
        PROBED,
        features=_pce,
        feature_names=_pce_names,
        leaderboard_row=7,
        summary="A logistic head on whether the answer re-stated after the cue agrees, and on its likelihood",
        doc="docs/method.md#pce-features",
    ),
    Method(
        "tup",
        "TUP",
        HEAD,
        ONE_GENERATION,
        features=_tup,
        feature_names=tup_feature_names,
        leaderboard_row=6,
        summary="A logistic head on 27 numbers profiling the trace's token log-probabilities and entropies",
        doc="docs/method.md#trace-uncertainty-profile",
    ),
    Method(
        "cf",
        "TrAC+CF@{k}",
        HEAD,
        K_PROBED,
        features=_consensus_fusion,
        feature_names=_consensus_fusion_names,
        leaderboard_row=7,
        summary="TrAC's features plus the modal answer's vote share and the answer entropy over the K samples",
        doc="docs/method.md#consensus-fusion",
    ),
    Method(
        "sup_consensus",
        "Supervised Consensus@{k}",
        HEAD,
        K_PROBED,
        features=_supervised_consensus,
        leaderboard_row=2,
        requires=("mean_logprob",),
        summary="A logistic head on the K samples' vote statistics, the trace profile and the probe's likelihood",
        doc="docs/method.md#supervised-consensus",
    ),
    Method(
        "mean_logprob",
        "Mean log-probability",
        SINGLE,
        ONE_GENERATION,
        score=_mean_logprob,
        leaderboard_row=1,
        summary="The mean log-probability of the response's tokens",
        doc="docs/method.md#mean-log-probability",
    ),
    Method(
        "self_certainty",
        "Self-certainty",
        SINGLE,
        ONE_GENERATION,
        score=_self_certainty,
        leaderboard_row=2,
        summary="How far each token's top-k distribution is from uniform (KL), averaged over the response",
        doc="docs/method.md#self-certainty",
    ),
    Method(
        "self_certainty_full",
        "Self-certainty (full vocabulary)",
        SINGLE,
        ONE_GENERATION,
        score=_full_self_certainty,
        leaderboard_row=None,
        switch=FULL_VOCABULARY_SWITCH,
        summary="Self-certainty over the whole vocabulary, where the engine has the full distribution (HF backend)",
        doc="docs/method.md#self-certainty",
    ),
    Method(
        "deepconf_bottom",
        "DeepConf-bottom",
        SINGLE,
        ONE_GENERATION,
        score=_deepconf_bottom,
        leaderboard_row=3,
        summary="The mean token confidence of the least confident tenth of the trace's sliding windows",
        doc="docs/method.md#deepconf-bottom",
    ),
    Method(
        "p_true",
        "P(True)",
        SINGLE,
        Cost(extra_seconds=("p_true",)),
        score=_p_true,
        leaderboard_row=4,
        switch=P_TRUE_SWITCH,
        summary="The model's own probability that the proposed answer is true (one extra forward pass)",
        doc="docs/method.md#ptrue",
    ),
    Method(
        "cross_model",
        "Cross-model (judge)",
        SINGLE,
        ONE_GENERATION,
        score=_cross_model,
        scope=Scope.REPORT,
        switch=JUDGE_SWITCH,
        summary="A second model's mean log-probability of the primary answer after the first one's reasoning and cue",
        doc="docs/method.md#cross-model-score",
    ),
    Method(
        "selfdoubt",
        "SelfDoubt",
        SINGLE,
        ONE_GENERATION,
        score=_selfdoubt,
        leaderboard_row=5,
        summary="Hedge words in the response against verification words: −hedges / (verifications + 1)",
        doc="docs/method.md#selfdoubt",
    ),
    Method(
        "trace_length",
        "Trace length",
        SINGLE,
        ONE_GENERATION,
        score=_trace_length,
        higher_is_confident=False,
        summary="The number of generated tokens: a longer trace is read as a less confident answer",
        doc="docs/method.md#trace-length",
    ),
    Method(
        "sc_modal",
        "SC@{k} (modal answer)",
        SAMPLED,
        K_GENERATIONS,
        score=_sc_modal,
        leaderboard_row=4,
        summary="The share of the K sampled answers that equal the most frequent one",
        doc="docs/method.md#self-consistency",
    ),
    Method(
        "sc_primary",
        "SC@{k} (primary answer)",
        SAMPLED,
        K_GENERATIONS,
        score=_sc_primary,
        leaderboard_row=3,
        summary="The share of the K sampled answers that equal the primary response's answer",
        doc="docs/method.md#self-consistency",
    ),
    *(
        Method(
            f"sc{n}_modal",
            f"SC@{n} (first {n} samples)",
            SAMPLED,
            Cost(k_samples=True, samples=n),
            score=partial(_sc_modal_of_first, n=n),
            summary=f"The share of the first {n} sampled answers that equal their most frequent one",
            doc="docs/method.md#self-consistency",
        )
        for n in (2, 4)
    ),
    Method(
        "semantic_entropy",
        "Semantic entropy@{k}",
        SAMPLED,
        K_GENERATIONS,
        score=_semantic_entropy,
        leaderboard_row=5,
        summary="Minus the entropy of the K answers' equivalence classes",
        doc="docs/method.md#semantic-entropy",
    ),
    Method(
        "selfcheck",
        "SelfCheckGPT@{k}",
        SAMPLED,
        K_GENERATIONS,
        score=_selfcheck,
        leaderboard_row=1,
        summary="How likely the primary response's words are under a unigram model of all K samples",
        doc="docs/method.md#selfcheckgpt-unigram",
    ),
    Method(
        "cw_vote",
        "CW vote@{k}",
        SAMPLED,
        K_GENERATIONS,
        score=_cw_vote,
        leaderboard_row=6,
        summary="The primary answer's vote share, each sample weighted by its exp(mean log-probability)",
        doc="docs/method.md#confidence-weighted-vote",
    ),
    Method(
        "cisc",
        "CISC@{k}",
        SAMPLED,
        K_GENERATIONS,
        score=_cisc,
        summary="The primary answer's vote share, samples weighted by a softmax of their sequence probability",
        doc="docs/method.md#cisc",
    ),
    Method(
        "cocoa",
        "CoCoA@{k}",
        SAMPLED,
        K_GENERATIONS,
        score=_cocoa,
        higher_is_confident=False,
        summary="Minus the response's log-perplexity times its share of disagreeing samples",
        doc="docs/method.md#cocoa",
    ),
    *(
        Method(
            f"pce_{variant}",
            label,
            HEAD,
            with_probe(ONE_GENERATION, variant),
            features=partial(_variant, name=variant),
            leaderboard_row=None,
            switch=CUE_VARIANTS_SWITCH if variant in CUE_VARIANTS else PROBE_VARIANTS_SWITCH,
            summary=summary,
            doc="docs/method.md#cue-variants"
            if variant in CUE_VARIANTS
            else "docs/method.md#trace-conditioning-controls",
        )
        for variant, label, summary in (
            ("question_only", "PCE (question-only probe)", "PCE with the probe given the question but not the trace"),
            (
                "shuffled_trace",
                "PCE (shuffled-trace probe)",
                "PCE with the probe given another question's reasoning in place of this response's",
            ),
            (
                "teacher_forced",
                "PCE (teacher-forced support)",
                "PCE with the answer's likelihood read by teacher forcing instead of the probe's own answer",
            ),
            (
                "after_answer",
                "PCE (restatement after the answer)",
                "PCE with the probe placed after the whole reply, the answer it wrote included (not the paper's)",
            ),
            ("cue_answer", 'PCE (cue "The answer is")', 'PCE with the probe cue worded "The answer is"'),
            (
                "cue_therefore",
                'PCE (cue "Therefore, the final answer is")',
                'PCE with the probe cue worded "Therefore, the final answer is"',
            ),
        )
    ),
    Method(
        "pce_answer_support",
        "PCE + answer support",
        HEAD,
        with_probe(PROBED, "teacher_forced"),
        features=_pce_answer_support,
        leaderboard_row=None,
        switch=PROBE_VARIANTS_SWITCH,
        summary="PCE plus the likelihood of the primary answer forced after the same prompt",
        doc="docs/method.md#trace-conditioning-controls",
    ),
    *(
        Method(
            name,
            label,
            SINGLE,
            with_probe(ONE_GENERATION, PREFIX_VARIANT),
            score=partial(_prefix_score, score=score),
            higher_is_confident=name != "answer_convergence",  # τ: a later convergence is a less confident answer
            switch=PREFIX_PROBES_SWITCH,
            summary=summary,
            doc=doc,
        )
        for name, label, score, summary, doc in (
            (
                "answer_convergence",
                "Prefix convergence (Liu & Wang)",
                prefix_probes.answer_convergence,
                "How early in the trace the probed answer settles on the final one (later: less confident)",
                "docs/method.md#prefix-convergence",
            ),
            (
                "prefix_agreement",
                "Prefix agreement",
                prefix_probes.prefix_agreement,
                "The share of partial-trace probes whose answer equals the final answer",
                "docs/method.md#prefix-agreement",
            ),
            (
                "prefix_agreement_weighted",
                "Prefix agreement (likelihood-weighted)",
                prefix_probes.weighted_prefix_agreement,
                "Prefix agreement with each probe weighted by its answer's likelihood",
                "docs/method.md#prefix-agreement",
            ),
        )
    ),
    Method(
        "trac_prefix",
        "TrAC + prefix probes",
        HEAD,
        with_probe(PROBED, PREFIX_VARIANT),
        features=_trac_prefix,
        feature_names=_trac_prefix_names,
        leaderboard_row=8.5,  # right after TrAC: what the partial traces add to the completed trace's probe
        switch=PREFIX_PROBES_SWITCH,
        requires=PREFIX_PROBE_SCORES,
        summary="TrAC's features plus the prefix-probe scores of partial traces",
        doc="docs/method.md#trac-with-prefix-probes",
    ),
    Method(
        "tup_generation",
        "TUP (whole generation)",
        HEAD,
        ONE_GENERATION,
        features=_tup_generation,
        feature_names=tup_feature_names,
        leaderboard_row=None,
        scope=Scope.REPORT,
        summary="TUP's profile of every generated token, the answer statement included, not the reasoning alone",
        doc="docs/method.md#tup-span",
    ),
    Method(
        "trac_tup_generation",
        "TrAC (TUP on the whole generation)",
        HEAD,
        PROBED,
        features=_trac_tup_generation,
        feature_names=_trac_names,
        leaderboard_row=None,
        scope=Scope.REPORT,
        summary="TrAC with TUP's profile of every generated token instead of the reasoning alone",
        doc="docs/method.md#tup-span",
    ),
    Method(
        "sequence_only",
        "Sequence only",
        HEAD,
        ONE_GENERATION,
        features=_sequence_only,
        leaderboard_row=None,
        scope=Scope.REPORT,
        requires=("mean_logprob",),
        summary="A logistic head on the response's mean token log-probability alone",
        doc="docs/method.md#label-efficiency",
    ),
    Method(
        "answer_token",
        "Answer-token log-prob",
        HEAD,
        ONE_GENERATION,
        features=_answer_token,
        leaderboard_row=None,
        scope=Scope.REPORT,
        summary="A logistic head on the mean log-probability of the tokens that spell the answer",
        doc="docs/method.md#answer-token-log-probability",
    ),
    Method(
        "answer_confidence",
        "Sequence + answer tokens",
        HEAD,
        ONE_GENERATION,
        features=_answer_confidence,
        leaderboard_row=None,
        scope=Scope.REPORT,
        requires=("mean_logprob",),
        summary="A logistic head on the response's mean token log-probability and its answer tokens'",
        doc="docs/method.md#answer-token-log-probability",
    ),
    Method(
        "convergence_final",
        "Convergence + final",
        HEAD,
        with_probe(PROBED, PREFIX_VARIANT),
        features=_convergence_final,
        leaderboard_row=None,
        scope=Scope.REPORT,
        switch=PREFIX_PROBES_SWITCH,
        requires=PREFIX_PROBE_SCORES[:2],
        summary="A logistic head on the prefix probes' convergence and agreement and the final probe's agreement",
        doc="docs/method.md#label-efficiency",
    ),
    Method(
        "pce_agreement",
        "AC: agreement only",
        HEAD,
        PROBED,
        features=_pce_agreement,
        leaderboard_row=None,
        scope=Scope.REPORT,
        summary="PCE's agreement features alone",
        doc="docs/method.md#pce-decomposition",
    ),
    Method(
        "pce_likelihood",
        "PCE likelihood only",
        HEAD,
        PROBED,
        features=_pce_likelihood,
        leaderboard_row=None,
        scope=Scope.REPORT,
        summary="PCE's likelihood features alone",
        doc="docs/method.md#pce-decomposition",
    ),
    Method(
        "p_true_pce",
        "P(True) + PCE",
        HEAD,
        Cost(extra_seconds=("probe_trace", "p_true")),
        features=_p_true_pce,
        leaderboard_row=None,
        scope=Scope.REPORT,
        switch=P_TRUE_SWITCH,
        requires=("p_true",),
        summary="A logistic head on PCE's features plus P(True)",
        doc="docs/method.md#comparison-with-self-verification",
    ),
)
"""Every built-in method, in registry order (TrAC and its components, single-trace then sampling baselines, the
ablation heads, then the report-only diagnostic heads)."""

register_all(BUILTIN_METHODS)
