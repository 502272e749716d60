"""Tests of trac_metrics.features: η_t, TUP φ_P, PCE φ_A, consensus statistics
(docs/method.md#token-summaries, docs/method.md#trace-uncertainty-profile, docs/method.md#pce-features,
docs/method.md#consensus-statistics)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from trac_metrics import TracWarning
from trac_metrics.features import (
    PCE_FEATURE_NAMES,
    TUP_FEATURE_NAMES,
    class_shares,
    consensus_features,
    pce_features,
    topk_entropy,
    tup_feature_names,
    tup_features,
)

# ---------------------------------------------------------------- η_t


def direct_topk_entropy(row, k=5):
    """Entropy of the softmax of the k largest finite entries, written out term by term."""
    finite = sorted((v for v in row if math.isfinite(v)), reverse=True)[:k]
    total = sum(math.exp(v) for v in finite)
    probs = [math.exp(v) / total for v in finite]
    return -sum(p * math.log(p) for p in probs if p > 0)


def test_topk_entropy_hand_values():
    rows = [
        [math.log(0.2)] * 5,  # uniform over 5 tokens: entropy = ln 5
        # raw probs .4, .2, .2 renormalize to .5, .25, .25: entropy = .5 ln 2 + 2 · .25 ln 4 = 1.5 ln 2
        [math.log(0.4), math.log(0.2), math.log(0.2), -math.inf, math.nan],
        [-0.3, math.nan, -math.inf, math.nan, -math.inf],  # one finite entry: a point mass, entropy 0
    ]
    np.testing.assert_allclose(topk_entropy(rows), [math.log(5), 1.5 * math.log(2), 0.0], atol=1e-12)


def test_topk_entropy_ignores_sixth_entry_and_padding():
    # 6 entries (sampled token outside the top 5 appended); entry order must not matter
    six = [-4.0, -1.0, -9.0, -2.0, -3.0, -5.0]
    with_six_equal_to_top5 = [-1.0, -2.0, -3.0, -4.0, -5.0, -math.inf]
    rng = np.random.default_rng(0)
    random_rows = rng.normal(-3.0, 2.0, size=(50, 6))
    random_rows[rng.random((50, 6)) < 0.2] = -np.inf
    random_rows[:, 0] = rng.normal(-1.0, 1.0, size=50)  # keep at least one finite entry per row
    rows = np.vstack([six, with_six_equal_to_top5, random_rows])
    got = topk_entropy(rows)
    assert got[0] == pytest.approx(got[1], abs=1e-12)
    np.testing.assert_allclose(got, [direct_topk_entropy(r) for r in rows], atol=1e-12)


def test_topk_entropy_k_argument_and_edges():
    row = [-1.0, -2.0, -3.0]
    assert topk_entropy([row], k=2)[0] == pytest.approx(direct_topk_entropy(row, k=2))
    assert topk_entropy(np.zeros((0, 5))).shape == (0,)
    assert topk_entropy([]).shape == (0,)
    with pytest.raises(ValueError, match="row 0"):
        topk_entropy(np.zeros((3, 0)))  # three tokens without any logprob
    with pytest.raises(ValueError, match=r"\[T, k\]"):
        topk_entropy([-1.0, -2.0])
    with pytest.raises(ValueError, match="row 1"):
        topk_entropy([[-1.0, -2.0], [-np.inf, np.nan]])
    with pytest.raises(ValueError, match=r"\+inf"):
        topk_entropy([[np.inf, -2.0]])


# ---------------------------------------------------------------- TUP


def loop_tup(lam, eta, n_bins=8, tail_window=30, low_threshold=-2.0):
    """Straightforward TUP: bin membership by the exact rational test (j−1)/J < t/T ≤ j/J, OLS by polyfit."""
    n = len(lam)

    def bins(z):
        out = []
        for j in range(1, n_bins + 1):
            lower, upper = Fraction(j - 1, n_bins), Fraction(j, n_bins)
            members = [z[t - 1] for t in range(1, n + 1) if lower < Fraction(t, n) <= upper]
            out.append(sum(members) / len(members) if members else sum(z) / n)
        return out

    def trend(z):
        if n < 2 or max(z) == min(z):
            return 0.0, 0.0
        x = [t / n for t in range(1, n + 1)]
        slope, intercept = np.polyfit(x, z, 1)
        fitted = [slope * xi + intercept for xi in x]
        mean = sum(z) / n
        r2 = 1 - sum((a - b) ** 2 for a, b in zip(z, fitted)) / sum((a - mean) ** 2 for a in z)
        return slope, r2

    mean_l = sum(lam) / n
    std_l = math.sqrt(sum((v - mean_l) ** 2 for v in lam) / n)
    tail = lam[-min(tail_window, n) :]
    return (
        bins(lam)
        + bins(eta)
        + [mean_l, min(lam), std_l, *trend(lam)]
        + [sum(eta) / n, max(eta), *trend(eta)]
        + [sum(tail) / len(tail), sum(1 for v in lam if v < low_threshold) / n]
    )


def test_feature_names():
    assert len(TUP_FEATURE_NAMES) == 27 and len(set(TUP_FEATURE_NAMES)) == 27
    assert len(tup_feature_names(4)) == 2 * 4 + 11
    assert len(PCE_FEATURE_NAMES) == 5


def test_tup_single_token():
    # T = 1: ⌈1·8/1⌉ = 8, so only bin 8 holds t = 1; bins 1..7 are empty and take the mean (the value itself).
    # std = 0, slope = R² = 0 (T < 2), tail = -0.5, low fraction 0 (-0.5 ≥ -2).
    got = tup_features([-0.5], [0.3])
    expected = [-0.5] * 8 + [0.3] * 8 + [-0.5, -0.5, 0.0, 0.0, 0.0] + [0.3, 0.3, 0.0, 0.0] + [-0.5, 0.0]
    np.testing.assert_allclose(got, expected)


def test_tup_three_tokens_hand_computed():
    lam = [-1.0, -3.0, -2.0]
    eta = [0.5, 1.0, 0.0]
    # bins: ⌈1·8/3⌉ = 3, ⌈2·8/3⌉ = 6, ⌈3·8/3⌉ = 8; other bins take the mean (λ: -2, η: 0.5)
    b_lam = [-2, -2, -1, -2, -2, -3, -2, -2]
    b_eta = [0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 0.5, 0.0]
    # x = 1/3, 2/3, 1 → centered -1/3, 0, 1/3, Sxx = 2/9
    # λ centered 1, -1, 0: Sxy = -1/3, slope = -1/3 / (2/9) = -1.5, Syy = 2, R² = (1/9) / (2/9 · 2) = 1/4
    # η centered 0, .5, -.5: Sxy = -1/6, slope = -0.75, Syy = .5, R² = (1/36) / (2/9 · .5) = 1/4
    # std λ = sqrt((1 + 1 + 0)/3); tail (W = 30 > 3) = mean = -2; λ < -2 strictly: only -3 → 1/3
    g_lam = [-2.0, -3.0, math.sqrt(2 / 3), -1.5, 0.25]
    g_eta = [0.5, 1.0, -0.75, 0.25]
    expected = b_lam + b_eta + g_lam + g_eta + [-2.0, 1 / 3]
    np.testing.assert_allclose(tup_features(lam, eta), expected, atol=1e-12)


def test_tup_eight_tokens_one_per_bin():
    # T = J = 8: ⌈t·8/8⌉ = t, so b_j is token j itself
    lam = np.array([-0.1, -0.5, -2.5, -0.2, -1.0, -3.0, -0.05, -0.7])
    eta = np.linspace(0.1, 0.8, 8)
    got = tup_features(lam, eta)
    np.testing.assert_allclose(got[:8], lam)
    np.testing.assert_allclose(got[8:16], eta)


def test_tup_ten_tokens_uneven_bins():
    lam = [-0.1 * t for t in range(1, 11)]
    eta = [0.0] * 10
    # ⌈0.8 t⌉ for t = 1..10: 1, 2, 3, 4, 4, 5, 6, 7, 8, 8 → bin 4 = {4, 5}, bin 8 = {9, 10}
    expected_bins = [-0.1, -0.2, -0.3, (-0.4 - 0.5) / 2, -0.6, -0.7, -0.8, (-0.9 - 1.0) / 2]
    np.testing.assert_allclose(tup_features(lam, eta)[:8], expected_bins, atol=1e-12)


def test_tup_linear_and_constant_trends():
    n = 20
    x = np.arange(1, n + 1) / n
    got = tup_features(-5.0 + 3.0 * x, 0.5 * x)
    names = list(TUP_FEATURE_NAMES)
    # exact lines: slope 3 and 0.5 on t/T, R² = 1
    assert got[names.index("tup_lp_slope")] == pytest.approx(3.0)
    assert got[names.index("tup_lp_r2")] == pytest.approx(1.0)
    assert got[names.index("tup_ent_slope")] == pytest.approx(0.5)
    assert got[names.index("tup_ent_r2")] == pytest.approx(1.0)
    # constant sequences (0.1 is not exactly representable, so the mean may round): slope = R² = 0 exactly
    const = tup_features([-0.1] * 7, [0.3] * 7)
    for name in ("tup_lp_slope", "tup_lp_r2", "tup_ent_slope", "tup_ent_r2"):
        assert const[names.index(name)] == 0.0
    assert const[names.index("tup_lp_std")] == pytest.approx(0.0, abs=1e-15)  # np.std: only rounding of the mean


def test_tup_tail_window():
    names = list(TUP_FEATURE_NAMES)
    tail = names.index("tup_lp_tail_mean")
    # T = 40: 10 tokens at -5 then 30 at -1; the last W = 30 are all -1
    lam = [-5.0] * 10 + [-1.0] * 30
    assert tup_features(lam, [0.0] * 40)[tail] == pytest.approx(-1.0)
    # T = 5 < 30: the tail is the whole sequence, (-5 - 5 - 1 - 1 - 1) / 5 = -2.6
    assert tup_features([-5.0, -5.0, -1.0, -1.0, -1.0], [0.0] * 5)[tail] == pytest.approx(-2.6)
    # custom window W = 2: mean of the last two = -1
    assert tup_features([-5.0, -5.0, -1.0, -1.0, -1.0], [0.0] * 5, tail_window=2)[tail] == pytest.approx(-1.0)


def test_tup_low_fraction_is_strict():
    low = list(TUP_FEATURE_NAMES).index("tup_lp_low_frac")
    # -2.0 itself is not below τ = -2.0; -2.0000001 and -3 are: 2 of 4
    assert tup_features([-2.0, -2.0000001, -1.9999999, -3.0], [0.0] * 4)[low] == pytest.approx(0.5)


def test_tup_matches_loop_implementation_on_random_sequences():
    rng = np.random.default_rng(2026)
    for n in [1, 2, 3, 5, 7, 8, 9, 10, 15, 16, 17, 31, 64, 100, 333]:
        lam = -rng.exponential(1.0, size=n)
        eta = rng.uniform(0.0, math.log(5), size=n)
        np.testing.assert_allclose(tup_features(lam, eta), loop_tup(list(lam), list(eta)), atol=1e-9, err_msg=f"T={n}")
    lam = -rng.exponential(1.0, size=23)
    eta = rng.uniform(0.0, 1.0, size=23)
    np.testing.assert_allclose(
        tup_features(lam, eta, n_bins=4, tail_window=5, low_threshold=-1.0),
        loop_tup(list(lam), list(eta), n_bins=4, tail_window=5, low_threshold=-1.0),
        atol=1e-9,
    )


def test_tup_bad_input():
    with pytest.warns(TracWarning):
        empty = tup_features([], [])
    assert empty.shape == (27,) and np.all(np.isnan(empty))
    with pytest.raises(ValueError, match="3 tokens but entropies has 2"):
        tup_features([-1.0, -1.0, -1.0], [0.1, 0.1])
    with pytest.raises(ValueError, match="position 1"):
        tup_features([-1.0, -np.inf, -1.0], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="entropies"):
        tup_features([-1.0, -1.0], [0.1, np.nan])


def test_tup_accepts_float16_and_lists():
    lam16 = np.array([-0.5, -1.25, -3.0], dtype=np.float16)
    eta16 = np.array([0.25, 0.5, 1.0], dtype=np.float16)
    np.testing.assert_allclose(tup_features(lam16, eta16), tup_features([-0.5, -1.25, -3.0], [0.25, 0.5, 1.0]))


# ---------------------------------------------------------------- PCE


def test_pce_full_probe():
    # ℓ = (-0.1 - 0.3 - 0.2)/3 = -0.2; ℓ_min = -0.3; ℓ_head = (-0.1 - 0.3)/2 = -0.2; c1 = -0.1
    got = pce_features("12", "12", [-0.1, -0.3, -0.2], -0.1)
    np.testing.assert_allclose(got, [1.0, -0.2, -0.3, -0.2, -0.1])
    assert pce_features("12", "13", [-0.1, -0.3, -0.2], -0.1)[0] == 0.0


def test_pce_agreement_uses_answer_equivalence_not_string_equality():
    assert pce_features("\\frac{1}{2}", "0.5", [-0.1], -0.1)[0] == 1.0
    assert pce_features("(A)", "A", [-0.1], -0.1, kind="mc")[0] == 1.0
    assert pce_features("B", "A", [-0.1], -0.1, kind="mc")[0] == 0.0


def test_pce_single_token_head_uses_m_equal_one():
    # L = 1 → m = min(2, 1) = 1: ℓ = ℓ_min = ℓ_head = the token's logprob
    np.testing.assert_allclose(pce_features("7", "7", [-0.4], -0.4), [1.0, -0.4, -0.4, -0.4, -0.4])


def test_pce_missing_parts_are_nan_not_zero():
    unparsed = pce_features("12", None, [], -2.5)  # probe decoded a token but no answer was parsed
    assert np.isnan(unparsed[:4]).all() and unparsed[4] == -2.5
    no_primary = pce_features(None, "12", [-0.1], -0.1)
    assert np.isnan(no_primary[0]) and np.all(np.isfinite(no_primary[1:]))
    assert np.isnan(pce_features("12", "  ", [-0.1], -0.1)[0])  # a blank probe answer normalizes to nothing
    nothing = pce_features(None, None, [], None)
    assert np.isnan(nothing).all()
    assert np.isnan(pce_features("1", "1", [-0.1], float("nan"))[4])
    with pytest.raises(ValueError, match="answer_logprobs"):
        pce_features("1", "1", [-np.inf], -0.1)


# ---------------------------------------------------------------- consensus


def test_consensus_known_vote_pattern():
    answers = ["4", "4", "5", "4", None, "5", "7", None]
    # classes: "4" ×3, "5" ×2, "7" ×1, None ×1, None ×1 (each None its own class) → π = 3/8, 2/8, 1/8, 1/8, 1/8
    shares = [3 / 8, 2 / 8, 1 / 8, 1 / 8, 1 / 8]
    entropy = -sum(p * math.log(p) for p in shares)
    got = consensus_features(answers)
    assert got["q_K"] == pytest.approx(3 / 8)
    assert got["h_K"] == pytest.approx(entropy)
    assert got["vote_margin"] == pytest.approx(3 / 8 - 2 / 8)
    assert got["q_primary"] == pytest.approx(3 / 8)
    assert consensus_features(answers, primary_index=2)["q_primary"] == pytest.approx(2 / 8)
    assert consensus_features(answers, primary_index=4)["q_primary"] == pytest.approx(1 / 8)  # None primary: 1/K


def test_consensus_groups_equivalent_answers():
    # "1/2", "0.5" and "\\frac{1}{2}" form one class of 3; "2" one of 1 → π = 3/4, 1/4
    got = consensus_features(["1/2", "0.5", "2", "\\frac{1}{2}"], primary_index=2)
    assert got["q_K"] == pytest.approx(0.75)
    assert got["q_primary"] == pytest.approx(0.25)
    assert got["h_K"] == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))


def test_consensus_unanimous_and_errors():
    got = consensus_features(["3"] * 8)
    assert got == {"q_K": 1.0, "h_K": 0.0, "vote_margin": 1.0, "q_primary": 1.0}
    with pytest.raises(ValueError, match="empty"):
        consensus_features([])
    with pytest.raises(ValueError, match="primary_index"):
        consensus_features(["1", "2"], primary_index=2)


def test_class_shares_weighted():
    ids, shares = class_shares(["1", "2", "1"], weights=[0.5, 0.3, 0.2])
    assert list(ids) == [0, 1, 0]
    np.testing.assert_allclose(shares, [0.7, 0.3])
    with pytest.raises(ValueError, match="weights"):
        class_shares(["1", "2"], weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="2 answers but 3 weights"):
        class_shares(["1", "2"], weights=[1.0, 1.0, 1.0])
