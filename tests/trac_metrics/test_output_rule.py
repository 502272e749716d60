"""The one output rule of every ``trac`` command that writes (docs/guide/reliability.md#one-output-rule): an output is
never an input of the run (lm-eval's samples and results files next to the records included), never a file another
output of the same command writes, never a symbolic link the write would replace, never inside a ``trac_records/``
folder, never a name the file system cannot hold; refused with the seed and the target risk before any work, through
the CLI entry point, with every file left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_calls import cli_error, refuse_any_work
from run_factory import pair_specs, write_runs

from trac_metrics._util import files
from trac_metrics.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An lm-eval output folder: records in ``trac_records/``, lm-eval's samples and results files in ``m/``."""
    (folder,) = write_runs(tmp_path_factory.mktemp("rule"), pair_specs(["m"], ["t1"], 12, seed=1), seed=2)
    (folder / "m").mkdir()
    (folder / "m" / "samples_t1_2026-01-01T00-00-00.000000.jsonl").write_text(
        '{"doc_id": 0, "arguments": {"gen_args_0": {"arg_0": "Question 0"}}}\n'
    )
    (folder / "m" / "results_2026-01-01T00-00-00.000000.json").write_text('{"results": {}}\n')
    return folder


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_any_work(monkeypatch)


def contents(*folders: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for folder in folders for path in folder.rglob("*") if path.is_file()}


@pytest.mark.usefixtures("guarded")
def test_lm_eval_samples_and_results_files_are_never_an_output(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples, results = next(run.glob("m/samples_*")), next(run.glob("m/results_*"))
    head = tmp_path / "head.json"
    before = contents(run)
    for path, what in (
        (samples, "an lm-eval samples file of the run"),
        (results, "an lm-eval results file of the run"),
    ):
        refusal = f"is {path}, {what}; choose another path"
        assert cli_error(capsys, "fit", run, "--out", path) == f"trac fit: --out {path}: {refusal}"
        assert cli_error(capsys, "score", head, run, "--out", path) == f"trac score: --out {path}: {refusal}"
        assert cli_error(capsys, "report", run, "--html", path) == f"trac report: --html {path}: {refusal}"
        calibration = cli_error(capsys, "fit", run, "--calibration", run, "--target-risk", "0.2", "--out", path)
        assert calibration.endswith(refusal)
    assert contents(run) == before


@pytest.mark.usefixtures("guarded")
def test_the_equivalence_file_is_never_an_output(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def same(answer, other, kind):\n    return answer == other\n")
    assert cli_error(capsys, "fit", run, "--equivalence", f"{checks}:same", "--out", checks) == (
        f"trac fit: --out {checks}: is {checks}, the --equivalence file this command reads; choose another path"
    )
    assert checks.read_text().startswith("def same")


@pytest.mark.usefixtures("guarded")
def test_the_page_never_takes_the_name_of_a_table_the_report_folder_writes(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    for name in ("leaderboard.csv", "per_pair.tex", "leaderboard.md", "reliability.png"):
        page = out / name
        assert cli_error(capsys, "report", run, "--out", out, "--html", page) == (
            f"trac report: --html {page}: is in the --out folder, which writes its "
            f"{'*' + page.suffix if page.suffix in ('.csv', '.tex') else name} files there; choose another path"
        )
    assert not out.exists()


def test_a_page_beside_the_tables_is_written(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rule refuses only the names the folder takes: a page in the report folder under its own name is fine."""
    out = tmp_path / "report"
    main(["report", str(run), "--out", str(out), "--html", str(out / "page.html"), "--resamples", "20"])
    capsys.readouterr()
    assert (out / "page.html").stat().st_size > 0 and (out / "leaderboard.csv").stat().st_size > 0


@pytest.mark.usefixtures("guarded")
def test_a_symbolic_link_is_never_replaced(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link output would become a regular file and its target would never be written: refused, naming the link and
    its target; a link among the files a report folder writes likewise."""
    target, link = tmp_path / "kept.json", tmp_path / "link.json"
    target.write_text("kept\n")
    link.symlink_to(target)
    refusal = f"is a symbolic link (to {target}), which the write would replace by a regular file"
    assert cli_error(capsys, "fit", run, "--out", link).startswith(f"trac fit: --out {link}: {refusal}")
    assert cli_error(capsys, "score", tmp_path / "h.json", run, "--out", link).startswith(f"trac score: --out {link}")
    assert cli_error(capsys, "report", run, "--html", link).startswith(f"trac report: --html {link}: {refusal}")
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "nowhere" / "page.html")
    assert "is a symbolic link" in cli_error(capsys, "report", run, "--html", dangling)
    out = tmp_path / "report"
    out.mkdir()
    (out / "leaderboard.csv").symlink_to(target)
    assert cli_error(capsys, "report", run, "--out", out) == (
        f"trac report: --out {out}: leaderboard.csv in it is a symbolic link (to {target}), which the write would "
        "replace by a regular file, never writing its target; name the target itself or another path"
    )
    (out / "leaderboard.csv").unlink()
    (out / "figures.png").mkdir()  # a folder of a name the report does not write is no concern
    (out / "reliability.png").mkdir()
    assert cli_error(capsys, "report", run, "--out", out).endswith(
        "reliability.png in it is a folder, which the write of a reliability.png file would replace"
    )
    assert target.read_text() == "kept\n" and link.is_symlink() and dangling.is_symlink()


def test_an_atomic_write_refuses_a_link_at_write_time(tmp_path: Path) -> None:
    target, link = tmp_path / "kept.csv", tmp_path / "link.csv"
    target.write_text("kept\n")
    link.symlink_to(target)
    with pytest.raises(files.OutputPathError, match=f"{link}: is a symbolic link"):
        files.atomic_write(link, "new\n")
    assert link.is_symlink() and target.read_text() == "kept\n"


@pytest.mark.usefixtures("guarded")
def test_no_output_inside_a_records_folder(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every later command would read a file there as records; through a link to the folder too."""
    records = run / "trac_records"
    inside = "is inside a trac_records/ folder, where every later trac command would read what it writes as records"
    scores = records / "scores.jsonl"
    assert cli_error(capsys, "score", tmp_path / "h.json", run, "--out", scores) == (
        f"trac score: --out {scores}: {inside}; choose another path"
    )
    assert cli_error(capsys, "fit", run, "--out", records / "head.json").endswith(inside + "; choose another path")
    assert inside in cli_error(capsys, "report", run, "--out", records / "report")
    assert inside in cli_error(capsys, "report", run, "--out", tmp_path / "trac_records")
    alias = tmp_path / "alias"
    alias.symlink_to(records)
    assert inside in cli_error(capsys, "report", run, "--html", alias / "page.html")
    assert sorted(path.name for path in records.iterdir()) == ["t1.2026-01-01T00-00-00.jsonl"]


@pytest.mark.usefixtures("guarded")
def test_a_name_longer_than_the_file_system_takes_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """255 bytes is the usual limit; a file is written under a temporary name 18 bytes longer first, so a 240-byte
    name fails too; a folder to create is held to the limit itself; a name relative to the working folder alike."""
    for size in (255, 240):
        page = tmp_path / ("p" * (size - 5) + ".html")
        message = cli_error(capsys, "report", run, "--html", page)
        assert message.endswith(
            f"is {size + 18} bytes with the 18 bytes of its temporary name; {tmp_path} takes names of at most 255 bytes"
        )
    folder = tmp_path / ("é" * 128)  # 256 bytes in UTF-8
    assert cli_error(capsys, "report", run, "--out", folder / "report").endswith(
        f"is 256 bytes; {tmp_path} takes names of at most 255 bytes"
    )
    monkeypatch.chdir(tmp_path)
    assert cli_error(capsys, "fit", run, "--out", "h" * 250 + ".json").endswith(
        "is 273 bytes with the 18 bytes of its temporary name; . takes names of at most 255 bytes"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("guarded")
@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--seed", "-1", "expected an integer >= 0, got '-1'"),
        ("--target-risk", "1.5", "expected a risk in [0, 1), got '1.5'"),
        ("--target-risk", "nan", "expected a risk in [0, 1), got 'nan'"),
    ],
)
def test_a_negative_seed_or_an_impossible_risk_is_refused_before_any_work(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, expected: str
) -> None:
    command = ["report", run, "--out", tmp_path / "r"] if option == "--seed" else ["fit", run, "--out", tmp_path / "h"]
    with pytest.raises(SystemExit) as exit_info:
        main([str(part) for part in command] + ["--calibration", str(run)] * (option != "--seed") + [option, value])
    assert exit_info.value.code == 2
    assert f"argument {option}: {expected}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
