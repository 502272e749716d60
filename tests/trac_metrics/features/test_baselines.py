"""Tests of trac_metrics.features.baselines (docs/method.md#baselines): hand-checked values, naive re-implementations
and orientation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trac_metrics import TracWarning
from trac_metrics.features.baselines import (
    SELFDOUBT_HEDGE_MARKERS,
    SELFDOUBT_VERIFY_MARKERS,
    _marker_pattern,
    confidence_weighted_vote,
    deepconf_bottom,
    mean_logprob,
    sc_modal,
    sc_primary,
    self_certainty,
    selfcheck_unigram,
    selfdoubt,
    semantic_entropy,
)

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
