"""A report over one model and six tasks, shared by the tests of the analyses and the leaderboard."""

from __future__ import annotations

import warnings

import pytest
from run_factory import pair_specs, write_runs

from trac_metrics._warnings import TracWarning
from trac_metrics.reporting.report_data import ReportData, build_report_data
from trac_metrics.reporting.runs import load_pairs


@pytest.fixture(scope="session")
def six_task_report(tmp_path_factory) -> ReportData:
    """1 model × 6 tasks × 30 questions (K = 4), 20 resamples."""
    root = tmp_path_factory.mktemp("runs")
    write_runs(root, pair_specs(["m1"], [f"t{j}" for j in range(6)], 30, seed=2), k=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return build_report_data(load_pairs([root], jobs=1), n_resamples=20, seed=0, jobs=1)
