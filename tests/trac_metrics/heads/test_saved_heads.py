"""Saved heads for online use (``trac fit`` / ``trac score``, docs/method.md#saved-heads): fitting, the abstention
threshold, scoring.

Saved heads are data, written atomically and read against a schema.

- Writes: a write that fails half-way (a full disk, a file-size limit) leaves the old file byte-identical and no
  temporary file behind.
- Reads: every malformed head file is one line on stderr and exit status 2 from ``trac score`` (never a
  traceback), naming the file and the field; a head file never imports or runs anything.
- Property tests (hypothesis): random valid heads round-trip exactly; random valid ``trac fit`` heads score; random
  mutations of a fitted head into invalid ones are refused in one line.
"""

from __future__ import annotations

import copy
import errno
import io
import json
import math
import os
import resource
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from full_disk import fill_disk_after, folder_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_factory import PairSpec, pair_specs, write_runs

from trac_metrics import selective
from trac_metrics.cli import main
from trac_metrics.features import PCE_FEATURE_NAMES, tup_feature_names
from trac_metrics.features.evidence import EvidenceOptions
from trac_metrics.heads import HEAD_FIELDS, FittedHead, HeadFormatError, fit_head
from trac_metrics.heads.calibration_maps import CalibrationMap, fit_calibration_map
from trac_metrics.heads.saved_heads import (
    METADATA_FIELDS,
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
from trac_metrics.methods import saved_head_methods
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


def test_a_failed_head_save_keeps_the_old_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = FittedHead(("a",), (0.0,), (), (0.5,), (2.0,), (1.5,), -0.25, metadata={"note": "old"})
    path = tmp_path / "head.json"
    head.save(path)
    before = folder_bytes(tmp_path)
    fill_disk_after(monkeypatch, n_bytes=40)
    with pytest.raises(OSError, match="No space left"):
        FittedHead(("a", "b"), (0.0, 1.0), (), (0.5, 0.1), (2.0, 1.0), (1.5, 2.5), 0.0).save(path)
    assert folder_bytes(tmp_path) == before and FittedHead.load(path) == head


def test_trac_fit_under_a_file_size_limit_keeps_the_old_head(one_run: Path, tmp_path: Path) -> None:
    """A real partial write: the kernel refuses bytes beyond RLIMIT_FSIZE (EFBIG), as a full disk refuses them."""
    head_path = tmp_path / "head.json"
    command = [
        sys.executable,
        "-m",
        "trac_metrics.cli",
        "fit",
        str(one_run),
        "--out",
        str(head_path),
        "--method",
        "pce",
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    before = folder_bytes(tmp_path)
    limit = len(before["head.json"]) // 2

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    result = subprocess.run(
        [*command, "--method", "trac"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=limit_file_size,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"trac fit: [Errno {errno.EFBIG}] {os.strerror(errno.EFBIG)}: '{head_path}'"
    assert folder_bytes(tmp_path) == before


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stored run (one model, one task, 40 questions, K = 2)."""
    (folder,) = write_runs(tmp_path_factory.mktemp("runs"), pair_specs(["m1"], ["t1"], 40, seed=1), k=2, seed=2)
    return folder


@pytest.fixture(scope="module")
def fitted(one_run: Path) -> dict[str, Any]:
    """A trac head with an abstention threshold, as ``trac fit`` saves it."""
    pairs = load_pairs([one_run])
    return fit_online_head(pairs, "trac", calibration=pairs, target_risk=0.5).to_dict()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("heads")


@pytest.fixture(scope="module")
def marker_code(workdir: Path) -> tuple[str, Path]:
    """An equivalence spec whose module, if it were ever imported, creates a marker file."""
    marker = workdir / "code_ran"
    module = workdir / "evil.py"
    module.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef f(a, b, kind):\n    return True\n")
    return f"{module}:f", marker


def score(head_path: Path, one_run: Path, *options: str) -> tuple[int, str, str]:
    """``trac score HEAD RUNS`` in this process: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(["score", str(head_path), str(one_run), *options])
            status = 0
        except SystemExit as exit_info:
            status = exit_info.code
    return status, out.getvalue(), err.getvalue()


def refused(head_path: Path, one_run: Path, *options: str) -> str:
    """The one stderr line of a ``trac score`` that must end with exit status 2."""
    status, _, err = score(head_path, one_run, *options)
    assert status == 2 and "Traceback" not in err, err
    (line,) = err.splitlines()
    assert line.startswith("trac score: ")
    return line


# ----------------------------------------------------------------------------------------------- malformed files


def with_change(payload: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``payload`` with the field at ``path`` set to ``value`` (deleted when value is DROP)."""
    changed = copy.deepcopy(payload)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    if value is DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return changed


DROP = object()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda head: "[" * 200_000, "not a JSON head file: nested too deeply"),
        (lambda head: b"\xff\xfe{}", "not valid JSON"),
        (lambda head: json.dumps(head)[:-40], "not valid JSON"),
        (lambda head: [1, 2], "expected a JSON object (a FittedHead), got a list of 2: [1, 2]"),
        (
            lambda head: with_change(head, ("feature_names",), 5),
            "field 'feature_names': expected a list of strings, got 5",
        ),
        (lambda head: with_change(head, ("intercept",), [1]), "field 'intercept': expected a number, got a list of 1"),
        (lambda head: with_change(head, ("metadata",), [1, 2]), "field 'metadata': expected a JSON object, got a list"),
        (
            lambda head: with_change(head, ("metadata", "training_questions"), DROP),
            "lacks the field 'metadata.training_questions'",
        ),
        (
            lambda head: with_change(head, ("metadata", "threshold"), "0.5"),
            "field 'metadata.threshold': expected null or a number in [0, 1], got '0.5'",
        ),
        (
            lambda head: with_change(head, ("metadata", "threshold"), math.nan),
            "field 'metadata.threshold': expected null or a number in [0, 1], got nan",
        ),
        (
            lambda head: with_change(head, ("metadata", "target_risk"), None),
            "field 'metadata.target_risk': expected a number in [0, 1], as the head has a threshold, got None",
        ),
        (
            lambda head: with_change(head, ("feature_names",), [*head["feature_names"][:-1], "other"]),
            "field 'feature_names': expected the columns of a trac head with n_bins=8",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "n_bins"), 4),
            "field 'feature_names': expected the columns of a trac head with n_bins=4",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "n_bins"), 10**12),
            "field 'feature_names': expected the columns of a trac head with n_bins=1000000000000",
        ),
        (lambda head: with_change(head, ("coef",), head["coef"][:-1]), "field 'coef': expected 32 numbers"),
        (
            lambda head: with_change(head, ("coef",), [math.inf, *head["coef"][1:]]),
            "field 'coef': expected finite numbers, got a list of 32: [inf,",
        ),
        (lambda head: with_change(head, ("scaler_scale",), [0.0] * 32), "field 'scaler_scale': expected positive"),
        (
            lambda head: with_change(head, ("indicator_features",), [3, 1]),
            "field 'indicator_features': expected increasing",
        ),
        (
            lambda head: with_change(head, ("metadata", "method"), "sc_modal"),
            f"field 'metadata.method': expected one of {saved_head_methods()} (the head was not written by trac fit)",
        ),
        (
            lambda head: with_change(head, ("metadata", "training_pairs", 0, "decoding"), {"temperature": [0.7]}),
            "field 'metadata.training_pairs[0].decoding': expected a JSON object of finite numbers, strings or nulls",
        ),
        (
            lambda head: with_change(head, ("metadata", "evidence_options", "low_threshold"), "-2"),
            "field 'metadata.evidence_options': low_threshold must be a finite number, got '-2'",
        ),
        (lambda head: with_change(head, ("version",), True), "field 'version': expected 1"),
        (lambda head: with_change(head, ("metadata", "unexpected"), 1), "unknown field 'metadata.unexpected'"),
    ],
)
def test_each_malformed_head_file_is_one_line_naming_the_file_and_the_field(
    fitted: dict[str, Any], one_run: Path, tmp_path: Path, change: Any, message: str
) -> None:
    content = change(fitted)
    path = tmp_path / "head.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    line = refused(path, one_run)
    assert line.startswith(f"trac score: {path}: ") and message in line, line
    with pytest.raises(HeadFormatError):
        load_head(path)


def with_changes(payload: dict[str, Any], changes: dict[tuple[Any, ...], Any]) -> dict[str, Any]:
    for path, value in changes.items():
        payload = with_change(payload, path, value)
    return payload


UNIT = {("coef",): [1.0] * 32, ("scaler_scale",): [1.0] * 32}
"""A trac head's 32 columns made plain (weight 1 each), so that one tampered field alone overflows."""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {("scaler_scale",): [1e-320] * 32},
            "field 'scaler_scale': expected positive normal numbers (at least 2.225e-308",
        ),
        ({("scaler_scale",): [1.0] * 31 + [5e-324]}, "field 'scaler_scale': expected positive normal numbers"),
        ({("coef",): [1e300] * 32, ("scaler_scale",): [1e-10] * 32}, "field 'coef': expected numbers whose ratio to"),
        ({**UNIT, ("scaler_mean",): [1e308] * 32}, "field 'scaler_mean': expected numbers with a finite offset"),
        ({**UNIT, ("scaler_mean",): [1e308, -1e308] * 16}, "field 'scaler_mean': expected numbers with a finite"),
        ({**UNIT, ("impute_means",): [1.7e308] * 32}, "field 'impute_means': expected numbers with a finite score"),
    ],
)
def test_finite_head_numbers_whose_use_overflows_are_refused(
    fitted: dict[str, Any], one_run: Path, tmp_path: Path, changes: dict[tuple[Any, ...], Any], message: str
) -> None:
    # every score of such a head was NaN (written as null) while trac score exited 0
    path = tmp_path / "head.json"
    path.write_text(json.dumps(with_changes(fitted, changes)))
    line = refused(path, one_run)
    assert line.startswith(f"trac score: {path}: ") and message in line, line
    with pytest.raises(HeadFormatError, match="^" + str(path).replace(".", r"\.") + ": field"):
        load_head(path)


@pytest.mark.parametrize(
    "knots",
    [
        [-1e308, 1e308],  # the gap overflows: interpolation gave the first knot's probability everywhere
        [0.0, 1e-310],  # a subnormal gap: interpolation between the knots gave inf
    ],
)
def test_map_knots_whose_interpolation_overflows_are_refused(
    pairs: dict[str, list[PairRun]], one_run: Path, tmp_path: Path, knots: list[float]
) -> None:
    payload = fit_online_head(pairs["train"], "mean_logprob").to_dict()
    assert payload["form"] == "isotonic"
    path = tmp_path / "map.json"
    path.write_text(json.dumps({**payload, "knots_x": knots, "knots_p": [0.2, 0.8]}))
    line = refused(path, one_run)
    assert "field 'knots_x': expected increasing finite numbers, each gap finite and at least 2.225e-308" in line
    with pytest.raises(HeadFormatError, match="knots_x"):
        load_head(path)


def test_the_fitted_head_itself_scores(fitted: dict[str, Any], one_run: Path, tmp_path: Path) -> None:
    path = tmp_path / "head.json"
    path.write_text(json.dumps(fitted))
    status, out, _ = score(path, one_run)
    assert status == 0 and "trac head fitted on 40 questions" in out


# ----------------------------------------------------------------------------------------------- no code runs


def test_a_head_file_never_runs_the_code_it_names(
    fitted: dict[str, Any],
    one_run: Path,
    tmp_path: Path,
    marker_code: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec, marker = marker_code
    monkeypatch.delitem(sys.modules, "this", raising=False)
    path = tmp_path / "head.json"
    for stored in (spec, "this:s"):
        path.write_text(json.dumps(with_change(fitted, ("metadata", "evidence_options", "equivalence"), stored)))
        assert load_head(path).metadata["evidence_options"]["equivalence"] == stored  # loading is data only
        assert refused(path, one_run) == (
            f"trac score: the head was fitted with --equivalence {stored!r} but scoring "
            "was given the built-in equivalence: give trac score the equivalence the head "
            "was fitted with (a head file never names code to run by itself)"
        )
        assert "this" not in sys.modules and not marker.exists()
        other = f"{tmp_path / 'other.py'}:g"
        assert f"but scoring was given --equivalence {other!r}" in refused(path, one_run, "--equivalence", other)
        assert not marker.exists()
    status, out, _ = score(path, one_run, "--equivalence", "this:s")  # asked for on the command line: it is used
    assert "this" in sys.modules and "Beautiful is better than ugly" in out and status == 2


def test_score_needs_the_equivalence_a_head_was_fitted_with(one_run: Path, tmp_path: Path) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def exact(answer, other, kind):\n    return answer == other\n")
    spec, head_path = f"{checks}:exact", tmp_path / "head.json"
    with redirect_stdout(io.StringIO()):
        main(["fit", str(one_run), "--out", str(head_path), "--method", "pce", "--equivalence", spec])
    assert FittedHead.load(head_path).metadata["evidence_options"]["equivalence"] == spec
    assert f"fitted with --equivalence {spec!r} but scoring was given the built-in" in refused(head_path, one_run)
    status, out, _ = score(head_path, one_run, "--equivalence", spec)
    assert status == 0 and "pce head fitted on 40 questions" in out
    plain = tmp_path / "plain.json"
    with redirect_stdout(io.StringIO()):
        main(["fit", str(one_run), "--out", str(plain), "--method", "pce"])
    assert f"fitted with the built-in equivalence but scoring was given --equivalence {spec!r}" in refused(
        plain, one_run, "--equivalence", spec
    )


# ----------------------------------------------------------------------------------------------- properties

FINITE = st.floats(allow_nan=False, allow_infinity=False)
PARAMETERS = st.floats(-1e100, 1e100)
SCALES = st.floats(1e-100, 1e100)
"""Head parameters: weights coef / scale and their sums over a few columns stay finite (valid heads only)."""
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | FINITE | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=12,
)


@st.composite
def heads(
    draw: st.DrawFn,
    n_features: int | None = None,
    numbers: st.SearchStrategy[float] = PARAMETERS,
    metadata: st.SearchStrategy[dict[str, Any]] | None = None,
) -> FittedHead:
    """A valid FittedHead: random sizes, missingness indicators, parameters and JSON metadata."""
    n = draw(st.integers(1, 6)) if n_features is None else n_features
    indicators = sorted(draw(st.sets(st.integers(0, n - 1))))
    columns = n + len(indicators)
    vector = lambda size, values=numbers: tuple(draw(st.lists(values, min_size=size, max_size=size)))  # noqa: E731
    return FittedHead(
        feature_names=tuple(draw(st.lists(st.text(max_size=6), min_size=n, max_size=n))),
        impute_means=vector(n),
        indicator_features=tuple(indicators),
        scaler_mean=vector(columns),
        scaler_scale=vector(columns, SCALES),
        coef=vector(columns),
        intercept=draw(numbers),
        metadata=draw(
            metadata if metadata is not None else st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4)
        ),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=heads())
def test_valid_heads_round_trip_exactly(head: FittedHead, workdir: Path) -> None:
    path = workdir / "round_trip.json"
    head.save(path)
    loaded = FittedHead.load(path)
    assert loaded == head and loaded.to_dict() == head.to_dict()
    assert json.loads(path.read_text(encoding="utf-8")) == head.to_dict()


SHARES = st.floats(0.0, 1.0)
PAIR_SUMMARIES = st.lists(
    st.fixed_dictionaries(
        {
            "model": st.text(max_size=6),
            "task": st.text(max_size=6),
            "decoding": st.dictionaries(st.text(max_size=5), st.none() | st.text(max_size=4) | FINITE, max_size=3),
            "questions": st.integers(1, 10**6),
            "accuracy": SHARES,
        }
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def online_metadata(draw: st.DrawFn) -> dict[str, Any]:
    """Metadata of a pce head as ``trac fit`` writes it, with or without a threshold."""
    calibrated = draw(st.booleans())
    return {
        "method": "pce",
        "evidence_options": EvidenceOptions().to_dict(),
        "training_pairs": draw(PAIR_SUMMARIES),
        "training_questions": draw(st.integers(1, 10**6)),
        "threshold": draw(SHARES) if calibrated else None,
        "target_risk": draw(st.floats(0.0, 0.99)) if calibrated else None,
        "calibration_coverage": draw(SHARES) if calibrated else None,
        "calibration_risk": draw(SHARES) if calibrated else None,
        "calibration_pairs": draw(PAIR_SUMMARIES) if calibrated else None,
    }


@pytest.mark.filterwarnings("ignore")  # extreme random parameters overflow to NaN scores: written as null
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=heads(n_features=len(PCE_FEATURE_NAMES), numbers=st.floats(-100, 100), metadata=online_metadata()))
def test_valid_trac_fit_heads_score(head: FittedHead, one_run: Path, workdir: Path) -> None:
    head = replace(head, feature_names=PCE_FEATURE_NAMES)
    path, scores = workdir / "online.json", workdir / "scores.jsonl"
    head.save(path)
    status, out, err = score(path, one_run, "--out", str(scores))
    assert status == 0, err
    assert f"pce head fitted on {head.metadata['training_questions']} questions" in out
    lines = [json.loads(line, parse_constant=refuse_constant) for line in scores.read_text().splitlines()]
    assert len(lines) == 40 and all(line["score"] is None or 0 <= line["score"] <= 1 for line in lines)


def refuse_constant(name: str) -> None:
    """json.loads hook: NaN / Infinity are not JSON."""
    raise AssertionError(f"{name} written into a JSON file")


# Fields of a fitted trac head and, per kind of field, values that kind never accepts.
NON_LISTS = ["x", 1, 1.5, True, None, {}]
NON_NUMBERS = ["x", True, None, [], {}, [1]]
WRONG_VALUES = {
    "constant": ["x", 2, [], {}, True],
    "strings": [*NON_LISTS, [1], [None], [["a"]]],
    "numbers": [*NON_LISTS, ["x"], [True], [None], [[1.0]]],
    "integers": [*NON_LISTS, [1.5], ["0"], [True]],
    "number": NON_NUMBERS,
    "count": [*NON_NUMBERS, 0, -1, 1.5],
    "share": [*NON_NUMBERS, -0.5, 1.5],
    "object": ["x", 1, True, None, [], [1]],
    "string": [1, True, None, [], {}],
    "pairs": [*NON_LISTS, [], [1], [{}]],
}
OPTIONS, PAIR = ("metadata", "evidence_options"), ("metadata", "training_pairs", 0)
FIELD_KINDS: dict[tuple[Any, ...], str] = {
    ("kind",): "constant",
    ("version",): "constant",
    ("feature_names",): "strings",
    ("impute_means",): "numbers",
    ("indicator_features",): "integers",
    ("scaler_mean",): "numbers",
    ("scaler_scale",): "numbers",
    ("coef",): "numbers",
    ("intercept",): "number",
    ("metadata",): "object",
    ("metadata", "method"): "constant",
    OPTIONS: "object",
    (*OPTIONS, "answer_kind"): "constant",
    (*OPTIONS, "equivalence"): "constant",
    (*OPTIONS, "n_bins"): "count",
    (*OPTIONS, "tail_window"): "count",
    (*OPTIONS, "low_threshold"): "number",
    ("metadata", "training_pairs"): "pairs",
    ("metadata", "training_questions"): "count",
    ("metadata", "threshold"): "share",
    ("metadata", "target_risk"): "share",
    ("metadata", "calibration_coverage"): "share",
    ("metadata", "calibration_risk"): "share",
    ("metadata", "calibration_pairs"): "pairs",
    (*PAIR, "model"): "string",
    (*PAIR, "task"): "string",
    (*PAIR, "decoding"): "object",
    (*PAIR, "questions"): "count",
    (*PAIR, "accuracy"): "share",
}
NUMBER_FIELDS = [path for path, kind in FIELD_KINDS.items() if kind in ("number", "share")] + [
    (name, 0) for name in ("impute_means", "scaler_mean", "scaler_scale", "coef")
]
LIST_FIELDS = ["feature_names", "impute_means", "indicator_features", "scaler_mean", "scaler_scale", "coef"]
PLACEHOLDER = "@@replaced@@"


def assert_all_fields_covered() -> None:
    assert {path[-1] for path in FIELD_KINDS if len(path) == 1} == set(HEAD_FIELDS)
    assert {path[-1] for path in FIELD_KINDS if path[:-1] == ("metadata",)} == set(METADATA_FIELDS)


@st.composite
def broken_head_files(draw: st.DrawFn, payload: dict[str, Any], code_spec: str) -> str | bytes:
    """The JSON text (or bytes) of ``payload`` changed in one way that makes it an invalid head file."""
    text = lambda changed, token=None: json.dumps(changed).replace(f'"{PLACEHOLDER}"', token or "")  # noqa: E731
    fields = sorted(FIELD_KINDS, key=str)
    how = draw(
        st.sampled_from(
            [
                "drop",
                "wrong type",
                "not finite",
                "length",
                "deep",
                "top level",
                "truncated",
                "extra field",
                "code",
                "not utf-8",
            ]
        )
    )
    if how == "drop":
        return text(with_change(payload, draw(st.sampled_from(fields)), DROP))
    if how == "wrong type":
        path = draw(st.sampled_from(fields))
        return text(with_change(payload, path, draw(st.sampled_from(WRONG_VALUES[FIELD_KINDS[path]]))))
    if how == "not finite":
        token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]))
        return text(with_change(payload, draw(st.sampled_from(sorted(NUMBER_FIELDS, key=str))), PLACEHOLDER), token)
    if how == "length":
        name = draw(st.sampled_from(LIST_FIELDS))
        values = payload[name]
        extra = "extra" if name == "feature_names" else len(payload["feature_names"])
        shorter = values[:-1] if values and draw(st.booleans()) else [*values, extra]
        return text(with_change(payload, (name,), shorter))
    if how == "deep":
        depth = draw(st.sampled_from([2, 100, 5000, 200_000]))
        return text(with_change(payload, draw(st.sampled_from(fields)), PLACEHOLDER), "[" * depth + "]" * depth)
    if how == "top level":
        return draw(st.sampled_from(["[]", "5", "null", '"head"', "true", json.dumps([payload]), ""]))
    if how == "truncated":
        whole = json.dumps(payload)
        return whole[: draw(st.integers(0, len(whole) - 2))]
    if how == "extra field":
        where = draw(st.sampled_from([(), ("metadata",), OPTIONS, PAIR]))
        changed = copy.deepcopy(payload)
        target = changed
        for key in where:
            target = target[key]
        target["unexpected"] = draw(JSON_VALUES)
        return text(changed)
    if how == "code":
        spec = draw(st.sampled_from([code_spec, "this:s", "os:system"]))
        return text(with_change(payload, (*OPTIONS, "equivalence"), spec))
    return b"\xff" + json.dumps(payload).encode()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_broken_head_files_are_refused_in_one_line(
    data: st.DataObject, fitted: dict[str, Any], one_run: Path, workdir: Path, marker_code: tuple[str, Path]
) -> None:
    assert_all_fields_covered()
    spec, marker = marker_code
    content = data.draw(broken_head_files(fitted, spec))
    path = workdir / "broken.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    had_this = "this" in sys.modules
    line = refused(path, one_run)
    assert str(path) in line or "equivalence" in line
    assert not marker.exists() and ("this" in sys.modules) == had_this


def test_a_head_saved_before_the_tup_span_switch_reads_runs_with_the_whole_generation(
    runs: dict[str, list[Path]], tmp_path: Path
) -> None:
    """docs/method.md#tup-span: such a head was fitted on TUP over every generated token, so it scores that way."""
    head = fit_online_head(load_pairs(runs["train"]), "tup", EvidenceOptions())
    path = tmp_path / "head.json"
    head.save(path)
    stored = json.loads(path.read_text())
    assert stored["metadata"]["evidence_options"]["tup_span"] == "reasoning" == head_options(head).tup_span
    path.write_text(json.dumps(with_change(stored, ("metadata", "evidence_options", "tup_span"), DROP)))
    assert head_options(FittedHead.load(path)).tup_span == "generation"
