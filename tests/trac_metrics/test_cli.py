"""The ``trac`` command line (docs/architecture.md#command-line): report, rescore, fit and score run in-process through
``cli.main``, plus one call of the installed ``trac`` executable; unusable input ends with one line on stderr and exit
status 2."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_calls import cli_error, refuse_any_work
from full_disk import fill_disk_after, folder_bytes
from record_factory import synthetic_question
from run_factory import PairSpec, pair_specs, write_runs

from trac_metrics import cli, selective
from trac_metrics._util import limits
from trac_metrics._util.limits import size_text
from trac_metrics.cli import main
from trac_metrics.heads import FittedHead
from trac_metrics.heads.calibration_maps import CalibrationMap
from trac_metrics.heads.saved_heads import feature_rows
from trac_metrics.records import RecordWriter, ResponseRecord, iter_records
from trac_metrics.reporting.runs import evaluate_pairs, load_pairs
from trac_metrics.selective.bootstrap import bootstrap_memory


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


def primary_labels(folder: Path) -> list[int]:
    """Labels by hand: the factory writes a correct primary answer as the reference string itself."""
    return [
        int(record.answer == record.reference)
        for path in sorted(folder.rglob("*.jsonl"))
        for record in iter_records(path)
        if record.repeat == 0
    ]


def test_report_prints_and_writes_the_report(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
def test_unusable_runs_end_with_one_line(
    runs: dict[str, list[Path]], tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
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


def test_rescore_reports_the_flips_of_a_user_equivalence(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
    printed = run_cli(
        capsys, "fit", *runs["train"], "--out", head_path, "--calibration", *runs["calibration"], "--target-risk", 0.25
    )
    head = FittedHead.load(head_path)
    assert f"trac head fitted on 100 questions → {head_path}" in printed
    assert f"abstention threshold {head.metadata['threshold']:.4f}" in printed
    assert head.metadata["target_risk"] == 0.25 and head.metadata["method"] == "trac"

    printed = run_cli(capsys, "score", head_path, *runs["target"], "--out", scores_path)
    lines = [json.loads(line) for line in scores_path.read_text().splitlines()]
    (pair,) = load_pairs(runs["target"])
    np.testing.assert_allclose(
        [line["score"] for line in lines], head.predict(feature_rows(pair, "trac")), rtol=0, atol=1e-15
    )
    assert [line["doc_id"] for line in lines] == list(range(50))
    assert [line["correct"] for line in lines] == primary_labels(runs["target"][0])
    assert all(line["accept"] == (line["score"] >= head.metadata["threshold"]) for line in lines)
    accepted = [line for line in lines if line["accept"]]
    coverage, risk = len(accepted) / len(lines), sum(1 - line["correct"] for line in accepted) / len(accepted)
    assert f"all target questions: coverage {coverage:.4f}" in printed and f"risk {risk:.4f}" in printed


def test_fit_carries_its_feature_options_to_score(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head_path = tmp_path / "tup.json"
    run_cli(capsys, "fit", *runs["train"], "--out", head_path, "--method", "tup", "--n-bins", 4)
    head = FittedHead.load(head_path)
    assert len(head.feature_names) == 19 and head.metadata["evidence_options"]["n_bins"] == 4
    printed = run_cli(capsys, "score", head_path, *runs["target"])
    assert "tup head fitted on 100 questions" in printed and "coverage" not in printed


def test_fit_and_score_errors(runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head_path = tmp_path / "head.json"
    assert "--target-risk needs --calibration" in cli_error(
        capsys, "fit", *runs["train"], "--out", head_path, "--target-risk", 0.1
    )
    wrong = write_runs(tmp_path / "wrong", [PairSpec("w", "t1", 20, accuracy=0.0, signal=0.2)])
    assert "no score threshold reaches risk <= 0.1 on the 20 calibration questions" in cli_error(
        capsys, "fit", *runs["train"], "--out", head_path, "--calibration", *wrong
    )
    assert not head_path.exists()
    not_a_head = tmp_path / "other.json"
    not_a_head.write_text(json.dumps({"kind": "something else"}))
    assert "not a FittedHead" in cli_error(capsys, "score", not_a_head, *runs["target"])
    assert "No such file" in cli_error(capsys, "score", tmp_path / "missing.json", *runs["target"])


def refuse_constant(name: str) -> None:
    """json.loads hook: NaN / Infinity are not JSON."""
    raise AssertionError(f"{name} is not valid JSON")


def majority_labels(folder: Path) -> list[int]:
    """Majority-vote labels by hand: the most frequent answer of a question's K samples (the first seen of tied
    answers) is the reference."""
    samples: dict[str, list[tuple[int, str | None, str | None]]] = {}
    for path in sorted(folder.rglob("*.jsonl")):
        for record in iter_records(path):
            samples.setdefault(str(record.doc_id), []).append((record.repeat, record.answer, record.reference))
    labels = []
    for found in samples.values():
        answers = [answer for _, answer, _ in sorted(found)]
        modal = max(answers, key=lambda answer: (answers.count(answer), -answers.index(answer)))
        labels.append(int(modal == found[0][2]))
    return labels


def test_evaluate_reports_acc_and_maj_acc_as_valid_json(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs["target"][0]
    files = sorted(folder.rglob("*.jsonl"))
    printed = json.loads(run_cli(capsys, "evaluate", *files, "--json"), parse_constant=refuse_constant)["t1"]
    (evaluation,) = evaluate_pairs(load_pairs(files))
    acc, maj_acc = np.mean(primary_labels(folder)), np.mean(majority_labels(folder))
    assert (printed.pop("acc"), printed.pop("maj_acc")) == pytest.approx((acc, maj_acc))
    assert printed.pop("undecided_comparisons") == 0  # numbers: no comparison reaches the work budget
    (pair,) = load_pairs(files)
    agreement = {key: printed.pop(key) for key in ("probe_agree_correct", "probe_agree_wrong")}
    assert agreement == pytest.approx(pair.probe_agreement.results())
    assert printed == pytest.approx(evaluation.metrics)
    text = run_cli(capsys, "evaluate", *files)
    assert text.startswith(
        f"t1: acc = {acc:.4f}, majority-vote acc = {maj_acc:.4f}, comparisons undecided (work budget ran out, not "
        "equivalent) = 0\n"
    )

    # all wrong, K = 1: undefined metrics are null, and there is no majority vote
    (wrong,) = write_runs(tmp_path / "wrong", [PairSpec("w", "t1", 20, accuracy=0.0, signal=0.2)], k=1)
    text = run_cli(capsys, "evaluate", *sorted(wrong.rglob("*.jsonl")), "--json")
    printed = json.loads(text, parse_constant=refuse_constant)["t1"]
    assert printed["acc"] == 0.0 and "maj_acc" not in printed and printed["trac_auroc"] is None
    assert "NaN" not in text


def test_summary_and_evaluate_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_error(capsys, "summary", tmp_path) == f"trac summary: no lm-eval results_*.json under {tmp_path}"
    results = tmp_path / "model" / "results_2026-01-01T00-00-00.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"results": {"gsm8k": {"acc,none": 0.5}}}))
    assert cli_error(capsys, "summary", tmp_path) == f"trac summary: {results} holds no TrAC task"
    results.write_text("[]")
    assert cli_error(capsys, "summary", tmp_path) == (
        f"trac summary: {results}: no 'results' object (not an lm-eval results file)"
    )
    empty = tmp_path / "t1.2026-01-01T00-00-00.jsonl"
    empty.write_text("")
    assert str(empty) in cli_error(capsys, "evaluate", empty)


def with_cached_tokens(records: list[ResponseRecord], cached: Callable[[int], int | None]) -> list[ResponseRecord]:
    """The records with each trace probe's cached-token count replaced by ``cached(its prompt tokens)``."""
    return [
        dataclasses.replace(
            record,
            probes={"trace": dataclasses.replace(probe, num_cached_tokens=cached(probe.num_prompt_tokens))},
        )
        for record in records
        for probe in [record.probes["trace"]]
    ]


def test_summary_shows_each_tasks_probe_cache_share_from_its_newest_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(7)
    cached_by_task = {
        "t_high": lambda prompt: prompt - 4,  # all but the cue: served from the cache
        "t_low": lambda prompt: prompt // 5,
        "t_none": lambda prompt: None,  # an engine that reports no count
    }
    for task, cached in cached_by_task.items():
        records = [
            record
            for doc_id in range(6)
            for record in with_cached_tokens(synthetic_question(rng, doc_id, doc_id % 2 == 0, task=task), cached)
        ]
        RecordWriter(tmp_path / "trac_records" / f"{task}.2026-01-02T00-00-00.jsonl").write_batch(records)
    # an older run of t_high with nothing cached: the summary reads the newest records only
    older = tmp_path / "trac_records" / "t_high.2026-01-01T00-00-00.jsonl"
    RecordWriter(older).write_batch(with_cached_tokens(synthetic_question(rng, 0, True, task="t_high"), lambda _: 0))
    os.utime(older, (1_000_000, 1_000_000))
    results = tmp_path / "model" / "results_2026-01-02T00-00-00.json"
    results.parent.mkdir()
    keys = {"acc,none": 0.5, "trac_auroc,none": 0.6}
    results.write_text(json.dumps({"results": {task: keys for task in cached_by_task}}))

    text = run_cli(capsys, "summary", tmp_path)
    blocks = {block.split(":")[0]: block for block in text.split("\n\n")[1:]}
    assert sorted(blocks) == sorted(cached_by_task)

    def expected(task: str) -> str:
        probes = [
            record.probes["trace"]
            for record in iter_records(tmp_path / "trac_records" / f"{task}.2026-01-02T00-00-00.jsonl")
        ]
        cached = sum(probe.num_cached_tokens for probe in probes)
        prompt = sum(probe.num_prompt_tokens for probe in probes)
        return f"{100 * cached / prompt:.1f} % ({cached} of {prompt} prompt tokens over {len(probes)} probes)"

    high, low = expected("t_high"), expected("t_low")
    assert float(high.split(" %")[0]) > 90 and float(low.split(" %")[0]) == pytest.approx(20, abs=0.6)
    assert f"end-of-thinking marker: not recorded\nprobe cache share: {high}" in blocks["t_high"]
    assert "served from the prefix cache" not in blocks["t_high"]
    (warning,) = [line for line in blocks["t_low"].splitlines() if line.startswith("trac-eval:")]
    assert f"probe cache share: {low}\n{warning}" in blocks["t_low"]
    assert warning.startswith(f"trac-eval: task t_low: only {low.split(' (')[0]} of the trace probes' prompt tokens")
    assert "enable_prefix_caching=False" in warning and "hybrid-attention model" in warning
    assert "probe cache share: not reported (24 probes without a cached-token count)" in blocks["t_none"]
    assert "trac-eval:" not in blocks["t_none"]


@pytest.mark.parametrize("option", ["--resamples", "--jobs", "--n-bins", "--tail-window"])
@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_nonsensical_sizes_are_usage_errors(
    runs: dict[str, list[Path]], tmp_path: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = cli_error(capsys, "report", *runs["target"], "--out", tmp_path, option, value)
    assert line == f"trac report: error: argument {option}: expected an integer >= 1, got {value!r}"


def test_requests_larger_than_memory_are_refused_before_the_work(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "memory_limit", lambda: 2**30)
    monkeypatch.setattr(cli, "build_report_data", lambda *args, **kwargs: pytest.fail("the report was computed"))
    needed = bootstrap_memory([50], 10**8, n_columns=1, n_metrics=2)
    assert cli_error(capsys, "report", *runs["target"], "--out", tmp_path, "--resamples", 10**8) == (
        f"trac report: --resamples 100000000 needs at least ~{size_text(needed)} for 1 pair(s) with 50 questions in "
        "all; the limit is 1.0 GiB (memory available now)"
    )
    assert size_text(needed) == "152.8 GiB"
    for command in (["report", "--out", tmp_path], ["rescore"], ["fit", "--out", tmp_path / "head.json"]):
        assert cli_error(capsys, command[0], *runs["target"], *command[1:], "--n-bins", 100000) == (
            f"trac {command[0]}: --n-bins 100000 needs at least ~4.7 TiB for TUP with 100000 bins (heads on up to "
            "400037 columns); the limit is 1.0 GiB (memory available now)"
        )
    assert not (tmp_path / "head.json").exists()


def test_failed_writes_keep_the_old_head_and_scores(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    head_path, scores_path = tmp_path / "head.json", tmp_path / "scores.jsonl"
    run_cli(capsys, "fit", *runs["train"], "--out", head_path, "--method", "pce")
    run_cli(capsys, "score", head_path, *runs["target"], "--out", scores_path)
    before = folder_bytes(tmp_path)
    fill_disk_after(monkeypatch)
    assert cli_error(capsys, "fit", *runs["train"], "--out", head_path) == (
        f"trac fit: [Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}: '{head_path}'"
    )
    assert cli_error(capsys, "score", head_path, *runs["target"], "--out", scores_path) == (
        f"trac score: [Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}: '{scores_path}'"
    )
    assert folder_bytes(tmp_path) == before


def test_trac_executable_reports_an_empty_folder(tmp_path: Path) -> None:
    sibling = Path(sys.executable).with_name("trac")
    executable = str(sibling) if sibling.exists() else shutil.which("trac")
    assert executable, "the trac entry point is not installed (pip install -e .)"
    result = subprocess.run(
        [executable, "rescore", str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"trac rescore: {tmp_path}: no TrAC records (lm_eval writes them to "
        "<output_path>/trac_records/<task>.<time>.jsonl when a trac_* task runs on the "
        "vllm or hf backend)"
    )


def test_fit_and_score_a_calibrated_baseline(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    map_path, scores_path = tmp_path / "map.json", tmp_path / "scores.jsonl"
    printed = run_cli(
        capsys, "fit", *runs["train"], "--out", map_path, "--method", "mean_logprob", "--calibration-map", "platt"
    )
    assert f"mean_logprob platt calibration map fitted on 100 questions → {map_path}" in printed
    saved = CalibrationMap.load(map_path)
    assert saved.form == "platt" and saved.metadata["method"] == "mean_logprob"
    printed = run_cli(capsys, "score", map_path, *runs["target"], "--out", scores_path)
    lines = [json.loads(line) for line in scores_path.read_text().splitlines()]
    (pair,) = load_pairs(runs["target"])
    raw = [evidence["baselines"]["mean_logprob"] for evidence in pair.evidences]
    np.testing.assert_allclose([line["score"] for line in lines], raw, rtol=0, atol=0)
    np.testing.assert_allclose([line["p_correct"] for line in lines], saved.predict(np.asarray(raw)), atol=0)
    labels = primary_labels(runs["target"][0])
    assert "mean_logprob platt calibration map fitted on 100 questions" in printed
    assert f"{selective.ece(saved.predict(np.asarray(raw)), labels):.4f}" in printed
    assert f"{selective.brier(saved.predict(np.asarray(raw)), labels):.4f}" in printed


def test_report_options_choose_the_calibration_map_and_ece_bins(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    printed = run_cli(
        capsys, "report", *runs["train"], "--out", out, "--resamples", 20, "--ece-bins", 5, "--calibration-map", "platt"
    )
    assert "Calibration: platt maps for the baselines, ECE over 5 bins." in printed
    assert "## Rejection and calibration metrics with 95% bootstrap intervals" in printed
    for name in ("calibration_rejection.csv", "reliability.png", "rejection_curve.png"):
        assert (out / name).stat().st_size > 0


# ----------------------------------------------------------------------------------------------- output paths


def test_an_output_of_the_wrong_kind_is_refused_before_any_work(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_any_work(monkeypatch)
    run, a_file, a_folder = runs["target"][0], tmp_path / "a_file", tmp_path / "a_folder"
    a_file.write_text("kept\n")
    a_folder.mkdir()
    head = tmp_path / "head.json"
    assert cli_error(capsys, "report", run, "--out", a_file) == f"trac report: --out {a_file}: is a file, not a folder"
    assert cli_error(capsys, "report", run, "--html", a_folder) == (
        f"trac report: --html {a_folder}: is a folder, not a file"
    )
    assert cli_error(capsys, "fit", run, "--out", a_folder) == f"trac fit: --out {a_folder}: is a folder, not a file"
    assert cli_error(capsys, "score", head, run, "--out", a_folder) == (
        f"trac score: --out {a_folder}: is a folder, not a file"
    )
    under_a_file = f"{a_file} is a file, not a folder"
    assert cli_error(capsys, "report", run, "--out", a_file / "report").endswith(under_a_file)
    assert cli_error(capsys, "report", run, "--html", a_file / "deep" / "page.html").endswith(under_a_file)
    assert cli_error(capsys, "fit", run, "--out", a_file / "head.json").endswith(under_a_file)
    assert cli_error(capsys, "fit", run, "--out", tmp_path / "missing" / "head.json") == (
        f"trac fit: --out {tmp_path / 'missing' / 'head.json'}: the folder {tmp_path / 'missing'} does not exist"
    )
    assert a_file.read_text() == "kept\n" and sorted(path.name for path in tmp_path.iterdir()) == ["a_file", "a_folder"]


def special_file(kind: str, path: Path) -> str:
    """Create a named pipe or a private device node (a copy of /dev/null's numbers, in a test folder; /dev is never
    touched) at ``path``; what the refusal calls it."""
    if kind == "fifo":
        os.mkfifo(path)
        return "a named pipe"
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    return "a character device"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pipe_or_a_device_is_refused_as_an_output_and_kept(
    kind: str,
    runs: dict[str, list[Path]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An output path that is a special file is refused before any work (``--html /dev/null`` as a dry run must not
    replace the machine's /dev/null), also through a link; nothing is opened, so a pipe never blocks."""
    refuse_any_work(monkeypatch)
    run, target, link = runs["target"][0], tmp_path / "special", tmp_path / "link.html"
    what = special_file(kind, target)
    link.symlink_to(target)
    refusal = f"is {what}, not a regular file; trac writes only regular files"
    assert cli_error(capsys, "report", run, "--html", target) == f"trac report: --html {target}: {refusal}"
    assert cli_error(capsys, "report", run, "--html", link) == f"trac report: --html {link}: {refusal}"
    assert cli_error(capsys, "fit", run, "--out", target) == f"trac fit: --out {target}: {refusal}"
    assert cli_error(capsys, "score", tmp_path / "head.json", run, "--out", target).endswith(refusal)
    assert cli_error(capsys, "report", run, "--out", target) == (
        f"trac report: --out {target}: is {what}, not a folder; trac writes only regular files"
    )
    mode = os.stat(target).st_mode
    assert (stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)) and link.is_symlink()


def test_an_input_of_the_command_is_refused_as_its_output(
    runs: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record file, a samples file the page reads, a head file, the other output of the same command: refused as an
    output before any work, through a symbolic or a hard link too, and left byte for byte as they were."""
    refuse_any_work(monkeypatch)
    run = tmp_path / "run"
    shutil.copytree(runs["target"][0], run)
    records = next(run.glob("trac_records/*.jsonl")).resolve()
    samples = run / "m4" / "samples_t1_2026-01-01T00-00-00.000000.jsonl"
    samples.parent.mkdir()
    samples.write_text('{"doc_id": 0, "arguments": {"gen_args_0": {"arg_0": "Question 0"}}}\n')
    head = tmp_path / "head.json"
    head.write_text("{}\n")
    link, hard = tmp_path / "report.html", tmp_path / "hard.html"
    link.symlink_to(records)
    os.link(records, hard)

    def contents() -> dict[str, bytes]:
        return {str(path): path.read_bytes() for path in [head, *run.rglob("*")] if path.is_file()}

    before = contents()
    reads = "a record file this command reads; choose another path"
    assert (
        cli_error(capsys, "report", run, "--html", records) == f"trac report: --html {records}: is {records}, {reads}"
    )
    assert cli_error(capsys, "report", run, "--html", link) == f"trac report: --html {link}: is {records}, {reads}"
    assert cli_error(capsys, "report", run, "--html", hard) == f"trac report: --html {hard}: is {records}, {reads}"
    assert cli_error(capsys, "report", run, "--html", samples).endswith(
        f"is {samples}, an lm-eval samples file of the run; choose another path"
    )
    assert cli_error(capsys, "fit", run, "--out", link).endswith(reads)
    assert cli_error(capsys, "fit", runs["train"][0], "--calibration", run, "--out", records).endswith(reads)
    assert cli_error(capsys, "score", head, run, "--out", hard).endswith(reads)
    assert cli_error(capsys, "score", head, run, "--out", head) == (
        f"trac score: --out {head}: is {head}, the head file this command reads; choose another path"
    )
    both = tmp_path / "both"
    assert cli_error(capsys, "report", run, "--out", both, "--html", both) == (
        f"trac report: --out {both}: is {both}, the --html page; choose another path"
    )
    assert contents() == before and not both.exists()


def test_an_output_where_no_file_can_be_created_is_refused_before_any_work(
    runs: dict[str, list[Path]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # /sys refuses new files even to root (which a chmod'ed folder would not stop)
    refuse_any_work(monkeypatch)
    run, denied = runs["target"][0], os.strerror(errno.EACCES)
    assert cli_error(capsys, "report", run, "--out", "/sys/trac-report") == (
        f"trac report: --out /sys/trac-report: cannot create files in /sys ({denied})"
    )
    assert cli_error(capsys, "report", run, "--html", "/sys/trac/report.html").endswith(f"in /sys ({denied})")
    assert cli_error(capsys, "fit", run, "--out", "/sys/head.json").endswith(f"in /sys ({denied})")
    assert cli_error(capsys, "score", "head.json", run, "--out", "/sys/scores.jsonl").endswith(f"in /sys ({denied})")


def test_progress_is_logged_where_stderr_is_no_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([0.0, 10.0, 31.0, 45.0, 62.0, 100.0])  # start, then the arrival of each of 5 items
    monkeypatch.setattr(cli.time, "monotonic", lambda: next(clock))
    items = cli._progress("rescoring: reading (equivalence=math-verify)", "file")([0, 1, 2, 3, 4])
    assert list(items) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err.splitlines() == [
        "progress: rescoring: reading (equivalence=math-verify): 2/5 files after 31 s",
        "progress: rescoring: reading (equivalence=math-verify): 4/5 files after 62 s",
        "progress: rescoring: reading (equivalence=math-verify): 5/5 files after 100 s",
    ]


def test_report_by_a_metadata_field_writes_its_table_and_refuses_a_split_it_cannot_make_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    folder = tmp_path / "m"
    writer = RecordWriter(folder / "trac_records" / "t1.2026-01-01T00-00-00.jsonl")
    for doc_id in range(60):
        records = synthetic_question(rng, doc_id, rng.random() < 0.5, k=4, signal=0.3, task="t1", model="m")
        level = {"level": doc_id % 2 + 1}
        writer.write_batch([dataclasses.replace(record, metadata=level) for record in records])
    out = tmp_path / "report"
    printed = run_cli(capsys, "report", folder, "--out", out, "--resamples", 50, "--by", "level")
    table = (out / "by_level.csv").read_text(encoding="utf-8")
    assert "Metrics by level" in printed and table.count('"trac"') == 2  # one row per level
    message = cli_error(capsys, "report", folder, "--out", tmp_path / "other", "--by", "weird/name")
    assert "'weird/name' is not a metadata field name" in message
    monkeypatch.setattr(cli, "build_report_data", lambda *a, **k: pytest.fail("evaluation started before the check"))
    message = cli_error(capsys, "report", folder, "--out", tmp_path / "other", "--by", "subject")
    assert "no question of the report has the metadata field 'subject'" in message
