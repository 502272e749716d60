"""The ``trac`` command line (issue #5): report, rescore, fit and score run in-process through ``cli.main``, plus one
call of the installed ``trac`` executable; unusable input ends with one line on stderr and exit status 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from run_factory import PairSpec, pair_specs, write_runs

from trac_metrics.heads import FittedHead
from trac_metrics.online import feature_rows
from trac_metrics.records import iter_records
from trac_metrics.runs import evaluate_pairs, load_pairs
from trac_tasks.cli import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("cli")
    return {
        "train": write_runs(root / "train", pair_specs(["m1", "m2"], ["t1"], 50, seed=1), seed=2),
        "calibration": write_runs(root / "calibration", pair_specs(["m3"], ["t1"], 80, seed=3), seed=4),
        "target": write_runs(root / "target", pair_specs(["m4"], ["t1"], 50, seed=5), seed=6),
    }


def run_cli(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    main([str(arg) for arg in argv])
    return capsys.readouterr().out


def cli_error(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    """Run a command that must fail cleanly; return its one-line message."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(arg) for arg in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("trac ")]
    return line


def primary_labels(folder: Path) -> list[int]:
    """Labels by hand: the factory writes a correct primary answer as the reference string itself."""
    return [int(record.answer == record.reference) for path in sorted(folder.rglob("*.jsonl"))
            for record in iter_records(path) if record.repeat == 0]


def test_report_prints_and_writes_the_report(runs: dict[str, list[Path]], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    printed = run_cli(capsys, "report", *runs["train"], "--out", out, "--resamples", 200, "--seed", 3, "--latex")
    assert printed == (out / "leaderboard.md").read_text(encoding="utf-8") + "\n"
    for name in ("leaderboard.csv", "leaderboard.tex", "risk_coverage.png", "cost_quality.png"):
        assert (out / name).stat().st_size > 0
    assert "Bootstrap: 200 hierarchical resamples, seed 3." in printed
    for model, folder in zip(["m1", "m2"], runs["train"], strict=True):
        labels = primary_labels(folder)
        assert f"- {model} / t1: n = {len(labels)}, accuracy {np.mean(labels):.3f}" in printed


def write_bad_schema(folder: Path) -> Path:
    records = folder / "trac_records"
    records.mkdir(parents=True)
    (records / "t1.2026-01-01T00-00-00.jsonl").write_text(json.dumps({"schema": "trac-record/0"}) + "\n")
    return folder


@pytest.mark.parametrize("command", [["report", "--out", "{tmp}/out"], ["rescore"], ["fit", "--out", "{tmp}/h.json"]])
def test_unusable_runs_end_with_one_line(runs: dict[str, list[Path]], tmp_path: Path, command: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    name, *options = [part.format(tmp=tmp_path) for part in command]
    (tmp_path / "empty").mkdir()
    message = cli_error(capsys, name, tmp_path / "empty", *options)
    assert message.startswith(f"trac {name}: ") and "empty: no TrAC records" in message
    message = cli_error(capsys, name, write_bad_schema(tmp_path / "old"), *options)
    assert "record schema 'trac-record/0' is not supported" in message and "t1.2026-01-01T00-00-00.jsonl:1" in message
    copy = tmp_path / "copy"
    shutil.copytree(runs["target"][0], copy)
    message = cli_error(capsys, name, runs["target"][0], copy, *options)
    assert "m4 / t1: question 0 appears in" in message


def test_rescore_reports_the_flips_of_a_user_equivalence(runs: dict[str, list[Path]], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def never(answer, reference, kind):\n    return False\n")
    folder = runs["target"][0]
    labels = primary_labels(folder)
    payload = json.loads(run_cli(capsys, "rescore", folder, "--equivalence", f"{checks}:never", "--json"))
    (pair,) = payload["pairs"]
    assert payload["changed_options"] == {"equivalence": f"{checks}:never"}
    assert pair["labels_flipped"] == sum(labels) and pair["accuracy"] == {"before": np.mean(labels), "after": 0.0}
    assert [int(flip["doc_id"]) for flip in pair["flips"]] == [i for i, label in enumerate(labels) if label]
    assert pair["metrics"]["mean_logprob"]["auroc"]["after"] is None  # one class: NaN, written as null
    text = run_cli(capsys, "rescore", folder, "--n-bins", 4)
    assert "rescored with n_bins=4" in text and f"0 of {len(labels)} labels flipped" in text
    assert "must be written MODULE:FUNCTION" in cli_error(capsys, "rescore", folder, "--equivalence", "bad")


def test_fit_then_score(runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head_path, scores_path = tmp_path / "head.json", tmp_path / "scores.jsonl"
    printed = run_cli(capsys, "fit", *runs["train"], "--out", head_path, "--calibration", *runs["calibration"],
                      "--target-risk", 0.25)
    head = FittedHead.load(head_path)
    assert f"trac head fitted on 100 questions → {head_path}" in printed
    assert f"abstention threshold {head.metadata['threshold']:.4f}" in printed
    assert head.metadata["target_risk"] == 0.25 and head.metadata["method"] == "trac"

    printed = run_cli(capsys, "score", head_path, *runs["target"], "--out", scores_path)
    lines = [json.loads(line) for line in scores_path.read_text().splitlines()]
    (pair,) = load_pairs(runs["target"])
    np.testing.assert_allclose([line["score"] for line in lines], head.predict(feature_rows(pair, "trac")), rtol=0,
                               atol=1e-15)
    assert [line["doc_id"] for line in lines] == list(range(50))
    assert [line["correct"] for line in lines] == primary_labels(runs["target"][0])
    assert all(line["accept"] == (line["score"] >= head.metadata["threshold"]) for line in lines)
    accepted = [line for line in lines if line["accept"]]
    coverage, risk = len(accepted) / len(lines), sum(1 - line["correct"] for line in accepted) / len(accepted)
    assert f"all target questions: coverage {coverage:.4f}" in printed and f"risk {risk:.4f}" in printed


def test_fit_carries_its_feature_options_to_score(runs: dict[str, list[Path]], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    head_path = tmp_path / "tup.json"
    run_cli(capsys, "fit", *runs["train"], "--out", head_path, "--method", "tup", "--n-bins", 4)
    head = FittedHead.load(head_path)
    assert len(head.feature_names) == 19 and head.metadata["evidence_options"]["n_bins"] == 4
    printed = run_cli(capsys, "score", head_path, *runs["target"])
    assert "tup head fitted on 100 questions" in printed and "coverage" not in printed


def test_fit_and_score_errors(runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head_path = tmp_path / "head.json"
    assert "--target-risk needs --calibration" in cli_error(
        capsys, "fit", *runs["train"], "--out", head_path, "--target-risk", 0.1)
    wrong = write_runs(tmp_path / "wrong", [PairSpec("w", "t1", 20, accuracy=0.0, signal=0.2)])
    assert "no score threshold reaches risk <= 0.1 on the 20 calibration questions" in cli_error(
        capsys, "fit", *runs["train"], "--out", head_path, "--calibration", *wrong)
    assert not head_path.exists()
    not_a_head = tmp_path / "other.json"
    not_a_head.write_text(json.dumps({"kind": "something else"}))
    assert "not a FittedHead" in cli_error(capsys, "score", not_a_head, *runs["target"])
    assert "No such file" in cli_error(capsys, "score", tmp_path / "missing.json", *runs["target"])


def test_evaluate_keeps_its_numbers(runs: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(runs["target"][0].rglob("*.jsonl"))
    printed = json.loads(run_cli(capsys, "evaluate", *files, "--json"))
    (evaluation,) = evaluate_pairs(load_pairs(files))
    assert printed["t1"] == pytest.approx(evaluation.metrics, nan_ok=True)


def test_trac_executable_reports_an_empty_folder(tmp_path: Path) -> None:
    sibling = Path(sys.executable).with_name("trac")
    executable = str(sibling) if sibling.exists() else shutil.which("trac")
    assert executable, "the trac entry point is not installed (pip install -e .)"
    result = subprocess.run([executable, "rescore", str(tmp_path)], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (f"trac rescore: {tmp_path}: no TrAC records (lm_eval writes them to "
                                     "<output_path>/trac_records/<task>.<time>.jsonl when a trac_* task runs on the "
                                     "vllm or hf backend)")
