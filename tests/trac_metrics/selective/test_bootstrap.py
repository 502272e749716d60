"""Tests for trac_metrics.selective.bootstrap (docs/method.md#hierarchical-bootstrap): macro, hierarchical bootstrap,
paired differences."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from trac_metrics import TracWarning, selective
from trac_metrics.selective.bootstrap import BootstrapResult, PairData, hierarchical_bootstrap, macro


def _synthetic_pairs(
    n_pairs: int, seed: int, max_questions: int = 60, responses_per_question: int = 1, methods: int = 2
) -> list[PairData]:
    """Pairs of different sizes; method j's score separates the classes more as j grows; some scores tied."""
    rng = np.random.default_rng(seed)
    pairs = []
    for index in range(n_pairs):
        n_questions = int(rng.integers(max_questions // 2, max_questions + 1))
        groups = np.repeat(np.arange(n_questions), responses_per_question)
        labels = rng.random(groups.size) < 0.6
        labels[:2] = [True, False]
        scores = {
            f"m{j}": np.round(labels * (0.5 + j) + rng.normal(0, 1, groups.size), 1 if j % 2 else 6)
            for j in range(methods)
        }
        pairs.append(PairData(f"pair{index}", labels, groups, scores))
    return pairs


def _tracwarnings(function, *args, **kwargs) -> tuple[object, list[str]]:
    """Call ``function`` and return its result with the messages of every TracWarning it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [str(item.message) for item in caught if issubclass(item.category, TracWarning)]


def _plain(metric):
    """The same metric behind a new function object, which forces the generic (one call per resample) path."""
    return lambda scores, labels: metric(scores, labels)


def test_macro_is_the_unweighted_mean_over_pairs() -> None:
    small = PairData("small", [1, 0], ["q1", "q2"], {"m": [0.9, 0.1]})
    large = PairData("large", [1, 1, 0, 0, 0, 1], list("abcdef"), {"m": [0.2, 0.4, 0.6, 0.8, 0.3, 0.7]})
    # small: the one correct response outranks the one wrong response -> AUROC 1.
    # large: correct {.2, .4, .7} vs wrong {.6, .8, .3}: .2 beats none, .4 beats .3, .7 beats .6 and .3
    #        -> 3 of 9 pairs -> AUROC 1/3.
    # pair-equal macro = (1 + 1/3) / 2 = 2/3 (a response-weighted mean would be (2·1 + 6·1/3)/8 = 1/2).
    assert macro([small, large], selective.auroc, "m") == pytest.approx(2 / 3)


def test_macro_skips_undefined_pairs_with_a_warning_naming_them() -> None:
    good = PairData("good", [1, 0], [0, 1], {"m": [0.9, 0.1]})
    one_class = PairData("all-correct", [1, 1, 1], [0, 1, 2], {"m": [0.1, 0.2, 0.3]})
    value, messages = _tracwarnings(macro, [good, one_class], selective.auroc, "m")
    assert value == 1.0
    assert any("1 of 2 pair(s)" in message and "all-correct" in message for message in messages)
    value, messages = _tracwarnings(macro, [one_class], selective.auroc, "m")
    assert math.isnan(value)
    assert any("no pair has a defined metric" in message for message in messages)


def test_ci_contains_point_estimate_on_well_behaved_data() -> None:
    pairs = _synthetic_pairs(8, seed=1)
    result = hierarchical_bootstrap(pairs, selective.auroc, ["m0", "m1"], n_resamples=300, seed=0)
    assert isinstance(result, BootstrapResult)
    assert result.samples.shape == (300, 2)
    for method in ("m0", "m1"):
        lo, hi = result.ci(method)
        assert lo < result.point[method] < hi
        assert result.point[method] == pytest.approx(macro(pairs, selective.auroc, method))
    lo90, hi90 = result.ci("m1", level=0.9)
    lo95, hi95 = result.ci("m1")
    assert lo95 <= lo90 < hi90 <= hi95


def test_same_seed_same_samples_and_different_seed_different_samples() -> None:
    pairs = _synthetic_pairs(5, seed=2)
    first = hierarchical_bootstrap(pairs, selective.aurc, ["m0", "m1"], n_resamples=100, seed=7)
    again = hierarchical_bootstrap(pairs, selective.aurc, ["m0", "m1"], n_resamples=100, seed=7)
    other = hierarchical_bootstrap(pairs, selective.aurc, ["m0", "m1"], n_resamples=100, seed=8)
    np.testing.assert_array_equal(first.samples, again.samples)
    assert not np.array_equal(first.samples, other.samples)


@pytest.mark.parametrize("metric", [selective.auroc, selective.aurc])
def test_fast_path_equals_calling_the_metric_on_each_resample(metric) -> None:
    pairs = _synthetic_pairs(4, seed=3, max_questions=30, responses_per_question=3)
    fast = hierarchical_bootstrap(pairs, metric, ["m0", "m1"], n_resamples=60, seed=5)
    called = hierarchical_bootstrap(pairs, _plain(metric), ["m0", "m1"], n_resamples=60, seed=5)
    if metric is selective.auroc:
        np.testing.assert_array_equal(fast.samples, called.samples)  # exact integer U, same division
    else:
        np.testing.assert_allclose(fast.samples, called.samples, rtol=1e-12, atol=0)
    assert fast.point == called.point


def test_resampling_is_hierarchical_and_stratified_by_question_correctness() -> None:
    rng = np.random.default_rng(4)
    pairs, question_class, responses_of = [], [], []
    for index in range(3):
        n_questions = 12 + 3 * index
        per_question = rng.integers(1, 4, n_questions)  # 1-3 responses per question
        groups = np.repeat(np.arange(n_questions), per_question)
        labels = rng.random(groups.size) < 0.5  # labels mixed inside a question
        first = np.searchsorted(groups, np.arange(n_questions))
        labels[first[:2]] = [True, False]
        within = np.arange(groups.size) - first[groups]
        # score encodes (pair, question, response) so the recorder can tell what it was given
        scores = 1000 * index + groups + within / 10
        pairs.append(PairData(f"p{index}", labels, groups, {"id": scores}))
        question_class.append(labels[first])
        responses_of.append(per_question)
    original = {round(s, 1): bool(z) for pair in pairs for s, z in zip(pair.scores["id"], pair.labels)}

    seen = []

    def recorder(scores: np.ndarray, labels: np.ndarray) -> float:
        seen.append((scores.copy(), labels.copy()))
        return 0.5

    n_resamples = 40
    hierarchical_bootstrap(pairs, recorder, ["id"], n_resamples=n_resamples, seed=0)
    resampled = seen[len(pairs) :]  # the first calls are the point estimate on the original pairs
    assert len(resampled) == n_resamples * len(pairs)
    calls_per_pair = np.zeros(len(pairs), dtype=int)
    for scores, labels in resampled:
        pair_index = int(scores[0] // 1000)
        assert np.all(scores // 1000 == pair_index)  # one pair per call
        calls_per_pair[pair_index] += 1
        assert all(original[round(s, 1)] == z for s, z in zip(scores, labels))  # labels travel with responses
        question = (scores % 1000).astype(int)
        response_count = np.bincount(question, minlength=responses_of[pair_index].size)
        draws, remainder = np.divmod(response_count, responses_of[pair_index])
        assert np.all(remainder == 0)  # a drawn question brings all of its responses
        correct_questions = question_class[pair_index]
        assert draws[correct_questions].sum() == correct_questions.sum()
        assert draws[~correct_questions].sum() == (~correct_questions).sum()
    assert calls_per_pair.sum() == n_resamples * len(pairs)
    assert len(set(calls_per_pair)) > 1  # pairs themselves are drawn with replacement


def test_paired_difference_uses_the_same_resamples() -> None:
    base = _synthetic_pairs(6, seed=5)
    pairs = [PairData(p.name, p.labels, p.groups, {**p.scores, "diff": p.scores["m1"] - p.scores["m0"]}) for p in base]

    def mean_score(scores: np.ndarray, labels: np.ndarray) -> float:
        return float(np.mean(scores))

    result = hierarchical_bootstrap(pairs, mean_score, ["m1", "m0", "diff"], n_resamples=200, seed=3)
    # The macro of a mean is linear, so the difference of the samples equals the samples of the difference
    # only if both methods saw the same resampled responses.
    np.testing.assert_allclose(result.samples[:, 0] - result.samples[:, 1], result.samples[:, 2], atol=1e-12)
    difference = result.paired_difference("m1", "m0")
    assert difference["point"] == pytest.approx(result.point["diff"], abs=1e-12)
    np.testing.assert_allclose([difference["lo"], difference["hi"]], result.ci("diff"), atol=1e-12)


def test_paired_difference_counts_wins_on_original_pairs() -> None:
    pairs = _synthetic_pairs(7, seed=6, methods=3)
    result = hierarchical_bootstrap(pairs, selective.auroc, ["m0", "m2"], n_resamples=50, seed=0)
    per_pair_m0 = [selective.auroc(p.scores["m0"], p.labels) for p in pairs]
    per_pair_m2 = [selective.auroc(p.scores["m2"], p.labels) for p in pairs]
    expected_wins = sum(b > a for a, b in zip(per_pair_m0, per_pair_m2))
    higher = result.paired_difference("m2", "m0")
    assert higher["wins"] == expected_wins and higher["pairs"] == 7
    lower = result.paired_difference("m2", "m0", higher_is_better=False)
    assert lower["wins"] == sum(b < a for a, b in zip(per_pair_m0, per_pair_m2))
    assert higher["lo"] <= higher["point"] <= higher["hi"]


def test_one_class_pair_is_skipped_with_a_warning_not_a_crash() -> None:
    pairs = _synthetic_pairs(4, seed=7)
    one_class = PairData("only-correct", np.ones(20, dtype=bool), np.arange(20), {"m0": np.linspace(0, 1, 20)})
    result, messages = _tracwarnings(
        hierarchical_bootstrap, [*pairs, one_class], selective.auroc, ["m0"], n_resamples=200, seed=0
    )
    assert any("skipped in the macro" in message and "only-correct" in message for message in messages)
    assert math.isnan(result.per_pair[-1, 0])
    assert result.point["m0"] == pytest.approx(macro(pairs, selective.auroc, "m0"))
    finite = result.samples[~np.isnan(result.samples[:, 0]), 0]
    assert finite.size > 190 and np.all((finite > 0) & (finite <= 1))
    assert result.paired_difference("m0", "m0")["pairs"] == 4


def test_nan_samples_are_reported_and_left_out_of_the_interval() -> None:
    good = _synthetic_pairs(1, seed=8)[0]
    one_class = PairData("one-class", [0, 0, 0], [0, 1, 2], {"m0": [0.1, 0.2, 0.3]})
    result, messages = _tracwarnings(
        hierarchical_bootstrap, [good, one_class], selective.auroc, ["m0"], n_resamples=100, seed=1
    )
    n_nan = int(np.isnan(result.samples[:, 0]).sum())
    assert 0 < n_nan < 100  # the resamples that drew the one-class pair twice
    assert any(f"{n_nan} resample(s) drew no pair with a defined metric" in message for message in messages)
    with pytest.warns(TracWarning, match=f"{n_nan} of 100 bootstrap samples are NaN"):
        lo, hi = result.ci("m0")
    assert lo <= hi


def test_metric_failing_on_a_resample_is_reported() -> None:
    pairs = _synthetic_pairs(3, seed=10)

    def fails_on_small_draws(scores: np.ndarray, labels: np.ndarray) -> float:
        return float(np.mean(scores)) if len(np.unique(scores)) > 20 else math.nan

    result, messages = _tracwarnings(
        hierarchical_bootstrap, pairs, fails_on_small_draws, ["m1"], n_resamples=30, seed=0
    )
    assert not np.isnan(result.per_pair).any()
    assert any("resampled pair draw(s)" in message for message in messages)


def test_pair_data_validation() -> None:
    with pytest.raises(ValueError, match="groups have shape"):
        PairData("p", [1, 0], [0], {"m": [0.1, 0.2]})
    with pytest.raises(ValueError, match="scores of 'm' have shape"):
        PairData("p", [1, 0], [0, 1], {"m": [0.1]})
    with pytest.raises(ValueError, match=r"pair 'p'.*labels must be 1"):
        PairData("p", [1, 3], [0, 1], {"m": [0.1, 0.2]})
    with pytest.raises(ValueError, match="not real numbers"):
        PairData("p", [1, 0], [0, 1], {"m": ["x", "y"]})
    with pytest.raises(ValueError, match="non-empty mapping"):
        PairData("p", [1, 0], [0, 1], {})
    with pytest.raises(ValueError, match="no responses"):
        PairData("p", [], [], {"m": []})
    with pytest.raises(ValueError, match="mutually comparable"):
        PairData("p", [1, 0], np.array(["a", 1], dtype=object), {"m": [0.1, 0.2]})
    labels, scores = np.array([True, False]), np.array([1.0, 2.0])
    pair = PairData("p", labels, ["a", "b"], {"m": scores})
    assert pair.labels.dtype == bool and pair.scores["m"].dtype == np.float64
    with pytest.raises(ValueError):
        pair.scores["m"][0] = 5.0  # stored read-only ...
    labels[0] = False  # ... as copies: the caller's arrays stay writable and do not alias the pair
    assert pair.labels[0]


def test_bootstrap_argument_validation() -> None:
    pairs = _synthetic_pairs(2, seed=9)
    with pytest.raises(ValueError, match="no scores for"):
        hierarchical_bootstrap(pairs, selective.auroc, ["missing"], n_resamples=10)
    with pytest.raises(ValueError, match="unique"):
        hierarchical_bootstrap([pairs[0], pairs[0]], selective.auroc, ["m0"], n_resamples=10)
    with pytest.raises(ValueError, match="at least one pair"):
        macro([], selective.auroc, "m0")
    with pytest.raises(ValueError, match="n_resamples"):
        hierarchical_bootstrap(pairs, selective.auroc, ["m0"], n_resamples=0)
    result = hierarchical_bootstrap(pairs, selective.auroc, ["m0"], n_resamples=10)
    with pytest.raises(ValueError, match="level"):
        result.ci("m0", level=1.5)
    with pytest.raises(ValueError, match="unknown method"):
        result.ci("m9")


def test_a_recentred_interval_contains_the_estimate_the_percentile_one_misses() -> None:
    """docs/method.md#hierarchical-bootstrap: the binned ECE is biased upward on a resample, so its percentile interval
    can lie above the estimate; re-centred on the estimate (median of the resamples moved onto it) it contains it, and
    it never leaves the range the drawn values and the estimate span (an ECE never below 0)."""
    rng = np.random.default_rng(3)
    labels = rng.random(300) < 0.5
    calibrated = np.clip(0.5 + rng.normal(0, 0.02, 300), 0, 1)  # nearly constant, nearly calibrated
    pairs = [PairData("pair", labels, np.arange(300), {"m0": calibrated, "m1": np.where(labels, 0.7, 0.3)})]
    drawn = hierarchical_bootstrap(pairs, selective.ece, ["m0", "m1"], n_resamples=400, seed=0)
    point = drawn.point["m0"]
    lo, hi = drawn.ci("m0")
    assert point < lo, "the percentile interval misses the estimate on this data (the case being fixed)"
    recentred = BootstrapResult(drawn.methods, drawn.pair_names, drawn.point, drawn.per_pair, drawn.samples, True)
    lo, hi = recentred.ci("m0")
    assert 0.0 <= lo <= point <= hi
    shifted = drawn.samples[:, 0] + point - np.median(drawn.samples[:, 0])
    assert hi == pytest.approx(np.percentile(shifted, 97.5))
    difference = recentred.paired_difference("m0", "m1")
    assert difference["lo"] <= difference["point"] <= difference["hi"]
    assert np.median(recentred.differences("m0", "m1")) == pytest.approx(difference["point"])
    assert recentred.averaged({"m0": ["m0"]}).recentred
