"""The failure-mode test bed end to end (docs/guide/failure-modes.md#running-it), one small slice: a reasoner trained
on the drift setting for a few steps, 20 questions of ``trac_failure_drift`` through the real ``lm_eval --model
vllm``, and the setting's report split by the error each question invites."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from testenv import REPO, engine_env

from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine

STEPS, LIMIT = 60, 20


def test_one_setting_trains_generates_and_reports_by_the_error_it_invites(tmp_path):
    out = tmp_path / "bed"
    command = [sys.executable, "scripts/failure_bed.py", "--out", str(out), "--settings", "drift:0.15", "--seeds", "1"]
    command += ["--steps", str(STEPS), "--limit", str(LIMIT), "--resamples", "50"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=engine_env(), cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    training = json.loads((out / "models" / "drift-0.15-s1" / "training.json").read_text(encoding="utf-8"))
    assert training["setting"] == "drift:0.15" and training["steps"] == STEPS and training["seed"] == 1
    records = [
        record
        for path in (out / "runs" / "drift-0.15-s1").rglob("trac_records/*.jsonl")
        for record in iter_records(path)
    ]
    assert len(records) == LIMIT * 8 and {record.metadata["invites"] for record in records} == {"drift"}
    assert all("trace" in record.probes for record in records if record.repeat == 0)
    table = pd.read_csv(out / "reports" / "drift-0.15" / "by_invites.csv")
    assert set(table["invites"]) == {"drift"} and {"trac", "sc_modal", "tup", "cross_model"} <= set(table["method"])
    assert (table["questions"] == LIMIT).all()
    lines = (out / "table.md").read_text(encoding="utf-8").splitlines()
    (trac_row,) = [
        line.split(" | ") for line in lines if line.startswith("| drift:0.15 | drift | 20 |") and "| trac |" in line
    ]
    trac = table.set_index("method").loc["trac"]  # setting | invites | questions | wrong | method | AUROC | diff | AURC
    assert trac_row[5].startswith(f"{trac['auroc']:.3f} [") and trac_row[7].startswith(f"{trac['aurc']:.3f} [")
    (profile,) = [line for line in lines if line.startswith("| drift:0.15 | drift | 20 |") and "%" in line]
    assert int(profile.split("|")[4]) == table["wrong"].iloc[0]  # the error profile counts the report's wrong answers
    made = [line.split(" | ") for line in lines if line.count(" | ") == 4 and line.startswith("| drift:0.15 | ")]
    assert sum(int(row[2]) for row in made) == table["wrong"].iloc[0]  # and by error made, every wrong answer once
    assert "| error made |" in "\n".join(lines)  # and the AUROC by the error each primary made
    assert lines[0] == "Measured: drift:0.15 (seeds 1)."
    # the guide's tables, first: the cost-matched row is the report's macro AUROC; the targeted row, where the primary
    # made drift errors, repeats the error-made table's AUROC of TrAC
    rows = [line.split(" | ") for line in lines if line.startswith("| drift:0.15 (1) | ")]
    intervals = pd.read_csv(out / "reports" / "drift-0.15" / "confidence_intervals.csv").set_index("method")
    (cost,) = [row for row in rows if len(row) == 7]
    assert cost[2].startswith(f"{intervals.loc['TrAC', 'macro AUROC']:.3f} [")
    made = [line.split(" | ") for line in lines if line.startswith("| drift:0.15 | drift | ")]
    drift_made = [row for row in made if row[3] == "trac"]  # setting | error made | wrong | method | AUROC | diff
    targeted = [row for row in rows if len(row) == 13]
    assert len(targeted) == len(drift_made) <= 1
    if drift_made:
        assert targeted[0][3] == drift_made[0][4].split(" [")[0] and targeted[0][2] == f"drift ({drift_made[0][2]})"
    assert (out / "reports" / "drift-0.15" / "report.html").stat().st_size > 10_000  # the setting's page
    # a second run resumes: nothing is trained or generated again, the reports are rewritten
    again = subprocess.run(command, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=REPO)
    assert again.returncode == 0 and "train_tiny_reasoner" not in again.stdout and "lm_eval" not in again.stdout
    assert "engines.judge" not in again.stdout
    # --trained-only: the seeds whose model is there, nothing trained for the others
    only = [*command[: command.index("--seeds")], "--seeds", "1", "2", *command[command.index("--steps") :]]
    only.append("--trained-only")
    again = subprocess.run(only, capture_output=True, text=True, timeout=900, env=engine_env(), cwd=REPO)
    assert again.returncode == 0 and "train_tiny_reasoner" not in again.stdout, again.stderr[-3000:]
    assert (out / "table.md").read_text(encoding="utf-8").startswith("Measured: drift:0.15 (seeds 1).")
