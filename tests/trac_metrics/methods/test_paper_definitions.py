"""The paper's definitions that docs/method.md#fidelity-to-the-paper marks "same" and no other test pins: each head's
feature set (its equations), the hyperparameter table of its appendix, and the task template's decoding. Each value
is written out here from the paper's words, not read from the code."""

from __future__ import annotations

import inspect
import math
from dataclasses import replace

import numpy as np
import pytest
import yaml

from trac_metrics.features.vectors import LOW_THRESHOLD, N_BINS, PCE_FEATURE_NAMES, TAIL_WINDOW, TOP_K
from trac_metrics.heads import FOLD_SEEDS
from trac_metrics.heads.logistic import fit_head
from trac_metrics.methods import get
from trac_tasks.generation.config import DEFAULT_CUE, PROBE_MAX_TOKENS, TracConfig
from trac_tasks.harness.lm_eval_hooks import task_config_dir

PHI_A = [1.0, -0.1, -0.3, -0.2, -0.05]  # e, ℓ, ℓ_min, ℓ_head, c1
PHI_P = [float(-i) / 10 for i in range(27)]
FORCED = [1.0, -0.4, -0.9, -0.5, -0.35]
EVIDENCE = {
    "features": {
        "pce": PHI_A,
        "tup": PHI_P,
        "consensus": {"q_K": 0.625, "h_K": 0.9, "vote_margin": 0.25, "q_primary": 0.5},
        "pce_teacher_forced": FORCED,
    },
    "baselines": {"mean_logprob": -0.7},
}


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("pce", PHI_A),  # φ_A = [e, ℓ, ℓ_min, ℓ_head, c1] (eq. "active representation")
        ("tup", PHI_P),  # φ_P = [b(λ); b(η); s]
        ("trac", PHI_A + PHI_P),  # u_TrAC = σ(wᵀ[φ_A; φ_P] + b)
        ("cf", [*PHI_A, *PHI_P, 0.625, 0.9]),  # u_CF = σ(w_fᵀ[φ_A; φ_P; q_K; h_K] + b_f)
        # Supervised Consensus@8: vote fraction, answer entropy, vote margin, trace log-prob, TUP, answer likelihood
        ("sup_consensus", [0.625, 0.9, 0.25, -0.7, *PHI_P, -0.1]),
        ("pce_answer_support", [*PHI_A, *FORCED[1:]]),  # PCE + the teacher-forced support of a
        ("pce_agreement", [1.0]),  # the ablation's "agreement only"
        ("pce_likelihood", PHI_A[1:]),  # "likelihood only"
    ],
)
def test_each_heads_features_are_the_papers(method, expected):
    assert get(method).features(EVIDENCE) == expected


def test_the_hyperparameters_are_the_papers_table():
    """Appendix "Hyperparameter configuration": K = 8, T = 0.7 / top-p 0.95, one greedy probe of at most 16 tokens,
    J = 8, k = 5, W = 30, τ = −2.0, d_aux = 11, d_P = 27, standardized L2 logistic regression with C = 1.0 and at most
    1,000 iterations, stratified 5-fold splits with fold seeds 2026, 7, 13, 42, 100."""
    assert (N_BINS, TOP_K, TAIL_WINDOW, LOW_THRESHOLD) == (8, 5, 30, -2.0)
    assert len(PCE_FEATURE_NAMES) == 5 and len(get("tup").feature_names(N_BINS)) == 2 * 8 + 11 == 27
    assert PROBE_MAX_TOKENS == 16 and FOLD_SEEDS == (2026, 7, 13, 42, 100)
    defaults = inspect.signature(fit_head).parameters
    assert (defaults["C"].default, defaults["max_iter"].default) == (1.0, 1000)
    template = yaml.safe_load((task_config_dir() / "_trac_template_yaml").read_text().split("filter_list:")[0])
    generation = template["generation_kwargs"]
    assert template["repeats"] == 8 and (generation["temperature"], generation["top_p"]) == (0.7, 0.95)
    assert generation["trac"]["probe_variants"] == ["trace"] and generation["trac"]["top_k"] == 5
    assert template["doc_to_text"].startswith("Solve the following problem step by step. End your response with")


def test_the_cue_is_the_papers_and_its_box_is_closed_by_the_brace_decoding_stops_at():
    """Appendix "Prefix probing": the marker, then ⟨The final answer is⟩; decoding ends at the matching closing
    brace, end-of-sequence or 16 tokens."""
    config = TracConfig(answer_kind="math", reference="x")
    assert config.cue == DEFAULT_CUE == "\n\nThe final answer is \\boxed{"
    assert config.closing_delimiter() == "}"


def test_the_logistic_head_is_standardized_and_l2_penalized():
    """Eq. "training": the regularized binary cross-entropy on standardized features; a constant shift and scale of a
    feature leave the fitted probabilities unchanged (standardization inside the head)."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(80, 3))
    labels = (features[:, 0] + rng.normal(size=80) > 0).astype(int)
    names = ("a", "b", "c")
    plain = fit_head(features, labels, names).predict(features)
    scaled = fit_head(features * 1000 + 5, labels, names).predict(features * 1000 + 5)
    assert np.allclose(plain, scaled, atol=1e-9) and not math.isclose(plain.std(), 0.0)


def test_sc_at_2_and_4_read_the_first_samples_and_cost_that_many_generations():
    """The paper's cost-quality points SC@2 and SC@4: the modal vote share of the first n samples (the primary first),
    costing n generations; absent for a question with fewer samples."""
    from record_factory import synthetic_question

    from trac_metrics.methods import Question

    records = synthetic_question(np.random.default_rng(1), 0, correct=True, k=8)
    answers = ["7", "7", "9", "7", "9", "9", "9", "9"]
    question = Question(tuple(replace(record, answer=a) for record, a in zip(records, answers, strict=True)), "math")
    assert get("sc2_modal").score(question) == 1.0  # 7, 7
    assert get("sc4_modal").score(question) == 0.75  # 7, 7, 9, 7
    assert get("sc_modal").score(question) == 0.625  # five 9s of eight
    assert get("sc4_modal").score(Question(question.responses[:3], "math")) is None
    assert [get(name).cost.relative_latency(8, lambda key: math.nan) for name in ("sc2_modal", "sc4_modal")] == [2, 4]
