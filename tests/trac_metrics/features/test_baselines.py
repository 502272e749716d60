"""Tests of trac_metrics.features.baselines (docs/method.md#baselines): hand-checked values, naive re-implementations
(the papers' formulas written out independently) and orientation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics import TracWarning
from trac_metrics.answers import equivalent
from trac_metrics.features.baselines import (
    SELFDOUBT_HEDGE_MARKERS,
    SELFDOUBT_VERIFY_MARKERS,
    _marker_pattern,
    cisc,
    cocoa,
    confidence_weighted_vote,
    deepconf_bottom,
    full_self_certainty,
    mean_logprob,
    sc_modal,
    sc_primary,
    self_certainty,
    selfcheck_unigram,
    selfdoubt,
    semantic_entropy,
    trace_length,
)
from trac_metrics.features.evidence import question_evidence
from trac_metrics.records import RecordFormatError

# ---------------------------------------------------------------- single-trace token scores


def test_mean_logprob():
    assert mean_logprob([-1.0, -2.0, -3.0]) == pytest.approx(-2.0)
    assert mean_logprob([-0.1, -0.2]) > mean_logprob([-1.0, -2.0])  # more confident → higher
    with pytest.warns(TracWarning):
        assert math.isnan(mean_logprob([]))
    with pytest.raises(ValueError, match="position 1"):
        mean_logprob([-1.0, -np.inf])


def test_self_certainty_matches_kl_from_uniform_over_top_k():
    k = 5
    peaked = np.array([0.6, 0.1, 0.1, 0.1, 0.1])
    flat = np.full(5, 0.2)
    # KL(U ‖ p) = Σ_v (1/k) log((1/k) / p_v), written out directly for each token distribution
    kl = [sum((1 / k) * math.log((1 / k) / pv) for pv in p) for p in (peaked, flat)]
    token_means = [np.log(peaked).mean(), np.log(flat).mean()]
    assert self_certainty(token_means, k=k) == pytest.approx(np.mean(kl))
    # flat top-5 (KL = 0) vs peaked: the peaked token is more certain
    assert self_certainty([token_means[0]], k=k) > self_certainty([token_means[1]], k=k)
    assert self_certainty([token_means[1]], k=k) == pytest.approx(0.0, abs=1e-12)
    # hand: -ln 5 - mean(-3, -5) = 4 - ln 5
    assert self_certainty([-3.0, -5.0], k=5) == pytest.approx(4 - math.log(5))
    with pytest.raises(ValueError, match="k must be"):
        self_certainty([-1.0], k=0)
    with pytest.warns(TracWarning):
        assert math.isnan(self_certainty([], k=5))


def naive_deepconf(topk_mean, window, n_bottom):
    """Window means by explicit slicing; mean of the n_bottom smallest."""
    conf = [-v for v in topk_mean]
    width = min(window, len(conf))
    means = [sum(conf[i : i + width]) / width for i in range(len(conf) - width + 1)]
    return sum(sorted(means)[:n_bottom]) / n_bottom


def test_deepconf_hand_values():
    # C = 1, 2, 3, 4; window 2 → means 1.5, 2.5, 3.5; ⌈0.1·3⌉ = 1 lowest → 1.5
    assert deepconf_bottom([-1.0, -2.0, -3.0, -4.0], window=2) == pytest.approx(1.5)
    # trace shorter than the window: one window, the whole trace: mean(1, 2, 3) = 2
    assert deepconf_bottom([-1.0, -2.0, -3.0]) == pytest.approx(2.0)
    # bottom_fraction 0.5 of 3 windows → ⌈1.5⌉ = 2 lowest: (1.5 + 2.5)/2 = 2
    assert deepconf_bottom([-1.0, -2.0, -3.0, -4.0], window=2, bottom_fraction=0.5) == pytest.approx(2.0)


def test_deepconf_matches_naive_loop():
    rng = np.random.default_rng(7)
    values = -rng.exponential(2.0, size=300)
    # 300 - 50 + 1 = 251 windows → ⌈25.1⌉ = 26 lowest
    assert deepconf_bottom(values, window=50) == pytest.approx(naive_deepconf(values, 50, 26))
    # 100 windows at 55 %: exactly 55 (0.55·100 is 55.00000000000001 in floating point, which must not become 56)
    values100 = -rng.exponential(2.0, size=20 + 99)
    score = deepconf_bottom(values100, window=20, bottom_fraction=0.55)
    assert score == pytest.approx(naive_deepconf(values100, 20, 55))
    assert score != pytest.approx(naive_deepconf(values100, 20, 56))


def test_deepconf_orientation_and_errors():
    confident = [-8.0] * 10  # top-k mean very negative → the top token dominates → high confidence
    uncertain = [-1.7] * 10
    assert deepconf_bottom(confident, window=4) > deepconf_bottom(uncertain, window=4)
    with pytest.raises(ValueError, match="window"):
        deepconf_bottom([-1.0], window=0)
    with pytest.raises(ValueError, match="bottom_fraction"):
        deepconf_bottom([-1.0], bottom_fraction=0.0)
    with pytest.warns(TracWarning):
        assert math.isnan(deepconf_bottom([]))


# ---------------------------------------------------------------- SelfDoubt


def test_selfdoubt_counts():
    text = (
        "Maybe the answer is 4. Wait, let me verify: 2+2=4. I think it's right. Hmm.\n"
        "Let me check: verify again. Indeed, 4."
    )
    # hedges: Maybe, Wait, I think, Hmm → h = 4
    # verifications: "let me verify", "Let me check" (its ":" is not a second "check:"), "verify", "Indeed" → v = 4
    assert selfdoubt(text) == pytest.approx(-4 / 5)


def test_selfdoubt_word_boundaries_and_case():
    # none of these contain a marker as a whole word: mighty, awaiting, unverified, perhapsly, confirmation
    assert selfdoubt("A mighty step, awaiting the unverified perhapsly confirmation.") == 0.0
    # curly apostrophe and line break inside a phrase still count: 1 hedge, 1 verification → -1/2
    assert selfdoubt("I\u2019m NOT\ncertain. Double-check the sum.") == pytest.approx(-1 / 2)
    # "check:" needs its colon: "check the" is not a marker; "check:" is one
    assert selfdoubt("maybe. check the sum") == pytest.approx(-1.0)
    assert selfdoubt("maybe. check: the sum") == pytest.approx(-1 / 2)
    with pytest.raises(ValueError, match="str"):
        selfdoubt(None)


def test_selfdoubt_orientation_and_marker_lists():
    assert selfdoubt("The sum is 4.") > selfdoubt("Maybe the sum is 4, perhaps 5.")
    assert selfdoubt("Maybe 4. Let me verify: yes. Confirm.") > selfdoubt("Maybe 4.")
    # a longer phrase wins over the markers it contains, whatever the list order ("let me" + "verify" would be 2)
    assert len(_marker_pattern(("let me", "verify", "let me verify")).findall("Let me verify.")) == 1
    for marker in SELFDOUBT_HEDGE_MARKERS + SELFDOUBT_VERIFY_MARKERS:
        assert marker == marker.lower()
    assert set(SELFDOUBT_HEDGE_MARKERS).isdisjoint(SELFDOUBT_VERIFY_MARKERS)


# ---------------------------------------------------------------- sampling scores


def test_vote_scores_on_known_pattern():
    answers = ["4", "5", "4", "4", "6", "5", "4", "7"]
    # "4" ×4, "5" ×2, "6" ×1, "7" ×1 → π = 1/2, 1/4, 1/8, 1/8
    assert sc_modal(answers) == pytest.approx(0.5)
    assert sc_primary(answers) == pytest.approx(0.5)
    assert sc_primary(answers, primary_index=1) == pytest.approx(0.25)
    entropy = -(0.5 * math.log(0.5) + 0.25 * math.log(0.25) + 2 * 0.125 * math.log(0.125))
    assert semantic_entropy(answers) == pytest.approx(-entropy)
    assert semantic_entropy(["4"] * 8) > semantic_entropy(answers)  # agreement → higher


def test_selfcheck_unigram_hand_value():
    # tokens: primary [a, b], other [a, c] → counts a:2, b:1, c:1, N = 4, V = 3, denominator 7
    # P(a) = 3/7, P(b) = 2/7 → score = (ln 3/7 + ln 2/7) / 2
    expected = (math.log(3 / 7) + math.log(2 / 7)) / 2
    assert selfcheck_unigram("A, b!", ["a C"]) == pytest.approx(expected)


def test_selfcheck_unigram_orientation_and_missing():
    others = ["the answer is 12", "so the answer is 12"]
    assert selfcheck_unigram("the answer is 12", others) > selfcheck_unigram("banana kiwi mango", others)
    with pytest.warns(TracWarning):
        assert math.isnan(selfcheck_unigram("the answer is 12", []))
    with pytest.warns(TracWarning):
        assert math.isnan(selfcheck_unigram("...", others))


def test_confidence_weighted_vote():
    answers = ["1", "2", "1"]
    confidences = [math.log(0.5), math.log(0.3), math.log(0.2)]
    # weights exp(c) = .5, .3, .2 → share of "1" = .7, of "2" = .3
    assert confidence_weighted_vote(answers, confidences) == pytest.approx(0.7)
    assert confidence_weighted_vote(answers, confidences, primary_index=1) == pytest.approx(0.3)
    # equal confidences reduce to SC@K primary, even when they are large in magnitude
    assert confidence_weighted_vote(answers, [-900.0] * 3) == pytest.approx(sc_primary(answers))
    # a more confident agreeing sample raises the primary's share
    assert confidence_weighted_vote(answers, [-1.0, -1.0, -0.1]) > confidence_weighted_vote(answers, [-1.0, -1.0, -3.0])
    # None answers agree only with themselves
    assert confidence_weighted_vote([None, None], [0.0, 0.0]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="position 1"):
        confidence_weighted_vote(answers, [-1.0, np.nan, -1.0])
    with pytest.raises(ValueError, match="3 answers but 2 confidences"):
        confidence_weighted_vote(answers, [-1.0, -1.0])


# ---------------------------------------------------------------- trace length (Devic et al. 2025)

TOKEN_ARRAYS = ("token_ids", "token_logprobs", "topk_entropy", "topk_mean_logprob")


def test_trace_length_counts_the_generated_tokens():
    assert trace_length(7) == 7.0
    assert trace_length(np.int64(3)) == 3.0
    with pytest.warns(TracWarning, match="a response with no reasoning tokens scores the shortest trace, 0"):
        assert trace_length(0) == 0.0
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="non-negative integer"):
            trace_length(bad)


def test_trace_length_is_stored_negated_longer_is_less_confident():
    (record,) = synthetic_question(np.random.default_rng(3), 0, correct=True, k=1)
    shorter = dataclasses.replace(record, **{name: getattr(record, name)[:3] for name in TOKEN_ARRAYS})
    scores = [question_evidence([response])["baselines"]["trace_length"] for response in (shorter, record)]
    assert scores == [-3.0, -float(len(record.token_ids))]
    assert scores[0] > scores[1]


def test_trace_length_counts_the_reasoning_tokens_a_record_holds():
    (record,) = synthetic_question(np.random.default_rng(4), 0, correct=True, k=1)
    thinking = dataclasses.replace(record, reasoning_tokens=2)  # two tokens of reasoning, then the marker, the answer
    assert question_evidence([thinking])["baselines"]["trace_length"] == -2.0
    assert type(record).from_dict(thinking.to_dict()).reasoning_tokens == 2
    assert "reasoning_tokens" not in record.to_dict(), "records without it are written as before"
    with pytest.raises(RecordFormatError, match="reasoning_tokens"):
        dataclasses.replace(record, reasoning_tokens=len(record.token_ids) + 1)


# ---------------------------------------------------------------- CoCoA (Vashurin et al. 2025)


def paper_cocoa(primary_logprobs, answers, kind="math"):
    """U_CoCoA = u(y*) · (1/M) Σ_i (1 − s(y*, y_i)) with the log-perplexity u and s the answer equivalence."""
    u = -sum(primary_logprobs) / len(primary_logprobs)
    similarities = [1.0 if equivalent(answers[0], other, kind=kind) else 0.0 for other in answers[1:]]
    return u * sum(1 - s for s in similarities) / len(similarities)


def uqlm_cocoa(primary_logprobs, answers, kind="math"):
    """uqlm's ``consistency_and_confidence``: LNTP(y0) · NCS, LNTP = Π p_t^(1/L) and NCS the mean normalized
    similarity to the m samples (here the answer equivalence in place of (cos + 1) / 2)."""
    lntp = math.prod(math.exp(lp) ** (1 / len(primary_logprobs)) for lp in primary_logprobs)
    ncs = sum(1.0 if equivalent(answers[0], other, kind=kind) else 0.0 for other in answers[1:]) / (len(answers) - 1)
    return lntp, ncs


def test_cocoa_matches_the_papers_formula():
    logprobs = [-0.2, -0.4, -0.6]
    answers = ["12", "12.0", "13", None]  # "12.0" ≡ "12"; "13" and None differ → dissimilarity 2/3
    assert cocoa(logprobs, answers) == pytest.approx(0.4 * 2 / 3)
    assert cocoa(logprobs, answers) == pytest.approx(paper_cocoa(logprobs, answers))
    rng = np.random.default_rng(11)
    for _ in range(20):
        lps = list(np.minimum(rng.normal(-1.0, 0.7, int(rng.integers(1, 40))), 0.0))
        drawn = [str(v) if v < 4 else None for v in rng.integers(0, 5, int(rng.integers(2, 9)))]
        assert cocoa(lps, drawn) == pytest.approx(paper_cocoa(lps, drawn))


def test_cocoa_combines_uqlms_confidence_and_consistency_as_the_paper_does():
    rng = np.random.default_rng(12)
    for _ in range(20):
        lps = list(np.minimum(rng.normal(-0.8, 0.5, int(rng.integers(1, 30))), 0.0))
        drawn = [str(v) for v in rng.integers(0, 3, int(rng.integers(2, 9)))]
        lntp, ncs = uqlm_cocoa(lps, drawn)
        # the same two signals: uqlm multiplies the confidences, the paper the uncertainties −log LNTP and 1 − NCS
        assert cocoa(lps, drawn) == pytest.approx(-math.log(lntp) * (1 - ncs))


def test_cocoa_orientation_and_missing_inputs():
    logprobs = [-0.5, -1.5]
    assert cocoa(logprobs, ["3", "3", "3"]) == 0.0  # full agreement: no risk whatever the confidence
    assert cocoa(logprobs, [None, "3", None]) == pytest.approx(1.0)  # a None answer agrees only with itself
    assert cocoa(logprobs, ["3", "4", "3"]) < cocoa(logprobs, ["3", "4", "4"])  # less agreement → more uncertain
    assert cocoa([-0.1, -0.1], ["3", "4"]) < cocoa([-2.0, -2.0], ["3", "4"])  # less confident → more uncertain
    assert cocoa(logprobs, ["4", "3", "3"], primary_index=1) == pytest.approx(0.5)
    with pytest.warns(TracWarning, match="no other samples"):
        assert math.isnan(cocoa(logprobs, ["3"]))
    with pytest.warns(TracWarning, match="no tokens"):
        assert math.isnan(cocoa([], ["3", "3"]))
    with pytest.raises(ValueError, match="primary_index"):
        cocoa(logprobs, ["3", "4"], primary_index=2)


# ---------------------------------------------------------------- CISC (Taubenfeld et al. 2025)


def paper_cisc(answers, mean_logprobs, temperature):
    """The paper's weighted majority vote: confidence = length-normalized sequence probability exp(mean logprob),
    weights softmax(confidence / T) over the samples; returns (winner, normalized vote share of every answer)."""
    exps = [math.exp(math.exp(c) / temperature) for c in mean_logprobs]
    weights = [e / sum(exps) for e in exps]
    shares: dict[str, float] = {}
    for answer, weight in zip(answers, weights, strict=True):
        shares[answer] = shares.get(answer, 0.0) + weight
    return max(shares, key=shares.get), shares


def test_cisc_matches_the_papers_weighted_vote():
    answers = ["7", "8", "7", "8", "9"]
    mean_logprobs = [math.log(0.9), math.log(0.5), math.log(0.95), math.log(0.6), math.log(0.7)]
    winner, shares = paper_cisc(answers, mean_logprobs, temperature=0.2)
    assert winner == "7"
    # the primary's answer wins: the score is the confidence CISC returns for its answer (default T = 0.2)
    assert cisc(answers, mean_logprobs) == pytest.approx(shares["7"])
    # another sample's answer is the primary: its own share, below the winner's
    assert cisc(answers, mean_logprobs, primary_index=1) == pytest.approx(shares["8"])
    assert shares["8"] < shares["7"]
    for temperature in (0.05, 1.0, 3.0):
        _, shares = paper_cisc(answers, mean_logprobs, temperature)
        assert cisc(answers, mean_logprobs, temperature=temperature) == pytest.approx(shares["7"])


def test_cisc_limits_orientation_and_errors():
    answers = ["1", "2", "1", "3"]
    mean_logprobs = [-0.1, -0.05, -2.0, -0.3]
    # a flat softmax is self-consistency's vote share
    assert cisc(answers, mean_logprobs, temperature=1e9) == pytest.approx(sc_primary(answers))
    # a more confident agreeing sample raises the primary's share
    assert cisc(answers, [-0.1, -0.05, -0.01, -0.3]) > cisc(answers, mean_logprobs)
    assert cisc(["1", "1.0"], [-1.0, -3.0]) == pytest.approx(1.0)  # equivalent answers are one vote
    assert cisc([None, None], [-1.0, -1.0]) == pytest.approx(0.5)  # None answers agree only with themselves
    with pytest.raises(ValueError, match="temperature"):
        cisc(answers, mean_logprobs, temperature=0.0)
    with pytest.raises(ValueError, match="position 1"):
        cisc(answers, [-1.0, np.nan, -1.0, -1.0])
    with pytest.raises(ValueError, match="4 answers but 3 confidences"):
        cisc(answers, [-1.0, -1.0, -1.0])


# ---------------------------------------------------------------- the new baselines on a question's records


def test_sampling_baselines_need_k_samples_and_every_sample_s_tokens():
    rng = np.random.default_rng(21)
    records = synthetic_question(rng, 0, correct=True, k=4)
    scores = question_evidence(records)["baselines"]
    mean_logprobs = [mean_logprob(record.token_logprobs) for record in records]
    answers = [record.answer for record in records]
    assert scores["cisc"] == pytest.approx(paper_cisc(answers, mean_logprobs, 0.2)[1][answers[0]])
    primary_logprobs = records[0].token_logprobs.astype(float)
    assert scores["cocoa"] == pytest.approx(-paper_cocoa(primary_logprobs, answers))  # stored negated
    assert {"cisc", "cocoa"}.isdisjoint(question_evidence(records[:1])["baselines"])  # K = 1: no sampling score
    silent = dataclasses.replace(records[2], **{name: np.zeros(0) for name in TOKEN_ARRAYS})
    with pytest.warns(TracWarning, match="no tokens"):
        scores = question_evidence([*records[:2], silent, records[3]])["baselines"]
    assert math.isnan(scores["cisc"]) and math.isnan(scores["cw_vote"])  # as the confidence-weighted vote
    assert math.isfinite(scores["cocoa"])  # reads only the primary's tokens


def test_full_self_certainty_is_the_kl_from_uniform_over_the_vocabulary():
    """docs/method.md#self-certainty: the score is the mean KL(U ‖ p_t) over the tokens plus log V, written out here
    from the definition on full distributions."""
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 3, size=(7, 50))
    logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    vocabulary = logprobs.shape[1]
    kl = np.mean([np.sum((1 / vocabulary) * (np.log(1 / vocabulary) - row)) for row in logprobs])
    assert full_self_certainty(logprobs.mean(axis=1)) == pytest.approx(kl + np.log(vocabulary))
    with pytest.warns(TracWarning, match="no tokens"):
        assert math.isnan(full_self_certainty([]))
