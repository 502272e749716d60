"""Saved heads for online use (``trac fit`` / ``trac score``, docs/method.md#saved-heads): fitting, the abstention
threshold, scoring."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from run_factory import PairSpec, pair_specs, write_runs

from trac_metrics import selective
from trac_metrics.features import PCE_FEATURE_NAMES, tup_feature_names
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.heads import FittedHead, HeadFormatError, fit_head
from trac_metrics.heads.calibration_maps import CalibrationMap, fit_calibration_map
from trac_metrics.heads.saved_heads import (
    NoThresholdError,
    choose_threshold,
    feature_rows,
    fit_online_head,
    format_scores,
    head_options,
    load_head,
    realized,
    score_lines,
    score_pairs,
)
from trac_metrics.methods.builtin import CONSENSUS_FUSION_NAMES
from trac_metrics.reporting.runs import PairRun, load_pairs

TARGET_RISK = 0.2


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Training (2 models × 2 tasks), calibration and target runs (another model each), seeded independently."""
    root = tmp_path_factory.mktemp("online")
    return {
        "train": write_runs(root / "train", pair_specs(["m1", "m2"], ["t1", "t2"], 60, seed=1), seed=2),
        "calibration": write_runs(root / "calibration", pair_specs(["m3"], ["t1", "t2"], 80, seed=3), seed=4),
        "target": write_runs(root / "target", pair_specs(["m4"], ["t1", "t2"], 60, seed=5), seed=6),
    }


@pytest.fixture(scope="module")
def pairs(runs: dict[str, list[Path]]) -> dict[str, list[PairRun]]:
    return {name: load_pairs(folders) for name, folders in runs.items()}


def rows_by_hand(pairs: list[PairRun], method: str) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and labels read straight from the evidence dicts (paper: [φ_A; φ_P] and [φ_A; φ_P; q_K; h_K])."""
    rows, labels = [], []
    for pair in pairs:
        for evidence in pair.evidences:
            features = evidence["features"]
            row = {
                "pce": features["pce"],
                "tup": features["tup"],
                "trac": [*features["pce"], *features["tup"]],
                "cf": [*features["pce"], *features["tup"], features["consensus"]["q_K"], features["consensus"]["h_K"]],
            }[method]
            rows.append(row)
            labels.append(evidence["correct"])
    return np.asarray(rows, dtype=float), np.asarray(labels)


@pytest.mark.parametrize("method", ["trac", "cf", "pce", "tup"])
def test_fit_and_score_reproduce_fit_head(pairs: dict[str, list[PairRun]], method: str) -> None:
    head = fit_online_head(pairs["train"], method)
    X, y = rows_by_hand(pairs["train"], method)
    names = {
        "pce": PCE_FEATURE_NAMES,
        "tup": tup_feature_names(),
        "trac": PCE_FEATURE_NAMES + tup_feature_names(),
        "cf": PCE_FEATURE_NAMES + tup_feature_names() + CONSENSUS_FUSION_NAMES,
    }[method]
    reference = fit_head(X, y, names)
    assert head.feature_names == reference.feature_names
    np.testing.assert_array_equal(head.coef, reference.coef)
    X_target, _ = rows_by_hand(pairs["target"], method)
    scored = score_pairs(head, pairs["target"])
    np.testing.assert_array_equal(np.concatenate([item.scores for item in scored]), reference.predict(X_target))
    assert all(item.accept is None for item in scored)
    assert head.metadata["method"] == method and head.metadata["threshold"] is None
    assert head.metadata["training_questions"] == len(y) == 240


def test_threshold_rule_on_a_hand_made_example() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    labels = [1, 1, 0, 1, 0]
    # accepted sets {≥.9}, {≥.8}, {≥.7}, {≥.6}, {≥.5} have risks 0, 0, 1/3, 1/4, 2/5
    chosen = choose_threshold(scores, labels, 0.25)
    assert (chosen.value, chosen.coverage, chosen.risk) == (0.6, 0.8, 0.25)
    chosen = choose_threshold(scores, labels, 0.2)
    assert (chosen.value, chosen.coverage, chosen.risk) == (0.8, 0.4, 0.0)
    chosen = choose_threshold(scores, labels, 0.4)
    assert (chosen.value, chosen.coverage, chosen.risk) == (0.5, 1.0, 0.4)
    # a tie group is accepted or refused whole: {≥.7} holds both .7s (risk 1/3), {≥.5} has risk 1/4, so at target
    # .2 only {≥.9} qualifies (splitting the tie could have accepted a correct .7 at risk 0)
    chosen = choose_threshold([0.9, 0.7, 0.7, 0.5], [1, 1, 0, 1], 0.2)
    assert (chosen.value, chosen.coverage, chosen.risk) == (0.9, 0.25, 0.0)
    with pytest.raises(NoThresholdError, match=r"lowest risk is 0\.5000 \(accepting the top 2\)"):
        choose_threshold([0.9, 0.8], [0, 1], 0.1)
    for bad_target in (-0.1, 1.0):
        with pytest.raises(ValueError, match="target risk"):
            choose_threshold(scores, labels, bad_target)
    with pytest.raises(ValueError, match="one finite score per calibration label"):
        choose_threshold([0.9, math.nan], [1, 0], 0.1)


def test_threshold_rule_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        scores = rng.integers(0, 6, 12) / 5  # many ties
        labels = (rng.random(12) < 0.6).astype(int)
        target = float(rng.choice([0.0, 0.2, 0.34, 0.5]))
        feasible = []
        for t in sorted(set(scores)):
            accepted = [label for score, label in zip(scores, labels) if score >= t]
            risk = sum(1 - label for label in accepted) / len(accepted)
            if risk <= target:
                feasible.append((t, len(accepted) / len(scores), risk))
        if not feasible:
            with pytest.raises(NoThresholdError):
                choose_threshold(scores, labels, target)
            continue
        chosen = choose_threshold(scores, labels, target)
        assert (chosen.value, chosen.coverage, chosen.risk) == pytest.approx(min(feasible))


def test_calibrated_head_stores_its_threshold_and_realizes_coverage_and_risk(
    pairs: dict[str, list[PairRun]], tmp_path: Path
) -> None:
    head = fit_online_head(pairs["train"], "trac", calibration=pairs["calibration"], target_risk=TARGET_RISK)
    metadata = head.metadata
    X_cal, y_cal = rows_by_hand(pairs["calibration"], "trac")
    expected = choose_threshold(head.predict(X_cal), y_cal, TARGET_RISK)
    assert metadata["threshold"] == expected.value and metadata["target_risk"] == TARGET_RISK
    assert (metadata["calibration_coverage"], metadata["calibration_risk"]) == (expected.coverage, expected.risk)
    assert 0 < expected.coverage < 1 and expected.risk <= TARGET_RISK
    assert [(item["model"], item["task"]) for item in metadata["training_pairs"]] == [
        ("m1", "t1"),
        ("m1", "t2"),
        ("m2", "t1"),
        ("m2", "t2"),
    ]
    assert [item["model"] for item in metadata["calibration_pairs"]] == ["m3", "m3"]
    path = tmp_path / "head.json"
    head.save(path)
    loaded = FittedHead.load(path)
    assert loaded == head and loaded.metadata == metadata and head_options(loaded) == EvidenceOptions()

    scored = score_pairs(loaded, pairs["target"])
    lines = list(score_lines(scored))
    assert len(lines) == sum(len(pair.evidences) for pair in pairs["target"])
    accepted = [line for line in lines if line["score"] >= expected.value]
    assert [line["accept"] for line in lines] == [line["score"] >= expected.value for line in lines]
    coverage_by_hand = len(accepted) / len(lines)
    risk_by_hand = sum(1 - line["correct"] for line in accepted) / len(accepted)
    all_accept = np.concatenate([item.accept for item in scored])
    all_labels = np.concatenate([item.labels for item in scored])
    assert realized(all_accept, all_labels) == pytest.approx((coverage_by_hand, risk_by_hand))
    text = format_scores(loaded, scored)
    assert f"all target questions: coverage {coverage_by_hand:.4f} (calibration {expected.coverage:.4f})" in text
    assert f"risk {risk_by_hand:.4f} (calibration {expected.risk:.4f}, target 0.2)" in text
    first_pair = [line for line in lines if line["task"] == "t1"]
    pair_accepted = [line for line in first_pair if line["accept"]]
    pair_risk = sum(1 - line["correct"] for line in pair_accepted) / len(pair_accepted)
    row = next(line for line in text.splitlines() if line.startswith("m4 / t1 "))
    assert [cell.strip() for cell in row.split("|")][-2:] == [
        f"{len(pair_accepted) / len(first_pair):.4f}",
        f"{pair_risk:.4f}",
    ]


def test_realized_risk_is_nan_when_nothing_is_accepted() -> None:
    coverage, risk = realized(np.zeros(3, dtype=bool), np.array([1, 0, 1]))
    assert coverage == 0.0 and math.isnan(risk)


def test_head_of_another_feature_width_is_refused(runs: dict[str, list[Path]], pairs: dict[str, list[PairRun]]) -> None:
    options = EvidenceOptions(n_bins=4)
    head = fit_online_head(load_pairs(runs["train"], options=options), "tup", options)
    assert len(head.feature_names) == 2 * 4 + 11 and head_options(head) == options
    with pytest.raises(ValueError, match=r"the tup rows have 27 features but the head was fitted on 19"):
        score_pairs(head, pairs["target"])


def test_fit_errors(pairs: dict[str, list[PairRun]], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="both calibration runs and a target risk"):
        fit_online_head(pairs["train"], calibration=pairs["calibration"])
    with pytest.raises(ValueError, match="trac fit saves"):
        fit_online_head(pairs["train"], "sup_consensus")  # a head without named columns
    all_wrong = load_pairs(write_runs(tmp_path / "wrong", [PairSpec("w", "t1", 20, accuracy=0.0, signal=0.2)]))
    with pytest.raises(NoThresholdError, match=r"no score threshold reaches risk <= 0.5 on the 20 calibration"):
        fit_online_head(pairs["train"], "pce", calibration=all_wrong, target_risk=0.5)
    single = load_pairs(write_runs(tmp_path / "single", pair_specs(["k1"], ["t1"], 20, seed=0), k=1))
    with pytest.raises(ValueError, match=r"k1 / t1: 20 of 20 questions have no cf features"):
        feature_rows(single[0], "cf")
    plain = fit_head(*rows_by_hand(pairs["train"], "pce"), PCE_FEATURE_NAMES)
    with pytest.raises(ValueError, match="not written by trac fit"):
        score_pairs(plain, pairs["target"])


def test_same_inputs_same_head(pairs: dict[str, list[PairRun]]) -> None:
    first, second = (
        fit_online_head(pairs["train"], "trac", calibration=pairs["calibration"], target_risk=0.3) for _ in range(2)
    )
    assert first == second and first.metadata == second.metadata


def test_scoring_a_training_pair_is_flagged_in_sample(pairs: dict[str, list[PairRun]]) -> None:
    head = fit_online_head(pairs["train"][:2], "pce")
    text = format_scores(head, score_pairs(head, [pairs["train"][1], pairs["train"][2]]))
    assert "note: m1 / t2 were training pairs of this head: their scores are in-sample" in text
    assert "in-sample" not in format_scores(head, score_pairs(head, pairs["target"]))


@pytest.mark.parametrize("form", ["isotonic", "platt"])
def test_a_baseline_is_saved_as_its_calibration_map(pairs: dict[str, list[PairRun]], tmp_path: Path, form: str) -> None:
    def scores_of(chosen: list[PairRun]) -> tuple[np.ndarray, np.ndarray]:
        values = [evidence["baselines"]["sc_modal"] for pair in chosen for evidence in pair.evidences]
        return np.asarray(values), np.concatenate([pair.labels for pair in chosen])

    fitted = fit_online_head(
        pairs["train"], "sc_modal", calibration=pairs["calibration"], target_risk=0.3, calibration_map=form
    )
    reference = fit_calibration_map(*scores_of(pairs["train"]), form)
    assert isinstance(fitted, CalibrationMap) and (fitted.knots_x, fitted.slope) == (reference.knots_x, reference.slope)
    calibration_scores, calibration_labels = scores_of(pairs["calibration"])
    threshold = choose_threshold(reference.predict(calibration_scores), calibration_labels, 0.3)
    assert fitted.metadata["threshold"] == threshold.value and fitted.metadata["method"] == "sc_modal"
    path = tmp_path / "map.json"
    fitted.save(path)
    loaded = load_head(path)
    assert loaded == fitted and loaded.metadata == fitted.metadata
    scored = score_pairs(loaded, pairs["target"])
    target_scores, _ = scores_of(pairs["target"][:1])
    np.testing.assert_array_equal(scored[0].scores, target_scores)
    np.testing.assert_array_equal(scored[0].probabilities, reference.predict(target_scores))
    np.testing.assert_array_equal(scored[0].accept, scored[0].probabilities >= threshold.value)
    assert scored[0].calibration()["brier"] == selective.brier(scored[0].probabilities, scored[0].labels)
    assert {"score", "p_correct"} <= set(next(score_lines(scored)))
    text = format_scores(loaded, scored)
    assert f"sc_modal {form} calibration map fitted on" in text and "ECE" in text


def test_a_map_file_must_name_a_baseline(pairs: dict[str, list[PairRun]], tmp_path: Path) -> None:
    fitted = fit_online_head(pairs["train"], "mean_logprob")
    path = tmp_path / "map.json"
    replace(fitted, metadata={**fitted.metadata, "method": "trac"}).save(path)
    with pytest.raises(HeadFormatError, match="metadata.method"):
        load_head(path)
    with pytest.raises(ValueError, match="no finite p_true score"):
        fit_online_head(pairs["train"], "p_true")  # the runs did not record P(True)
