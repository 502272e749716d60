"""The leaderboard tables of ``trac report`` (laid out from the report model's statistics) against values recomputed
independently from the same records."""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import replace

import numpy as np
import pytest
from bootstrap_reference import percentile_interval, reference_samples
from run_factory import pair_specs, write_runs

from trac_metrics import selective
from trac_metrics._warnings import TracWarning
from trac_metrics.heads.evaluate import evaluate_task
from trac_metrics.methods import all_methods
from trac_metrics.reporting import leaderboard
from trac_metrics.reporting.leaderboard import (
    ci_table,
    main_table,
    paired_per_pair_table,
    paired_table,
    per_pair_table,
    ranked_table,
)
from trac_metrics.reporting.model import statistics as report_statistics
from trac_metrics.reporting.model.methods import k_label, leaderboard_methods, method_label
from trac_metrics.reporting.model.statistics import COMPARISONS
from trac_metrics.reporting.report_data import ReportData, build_report_data
from trac_metrics.reporting.runs import load_pairs
from trac_metrics.reporting.tables import to_markdown

K = 4
N_RESAMPLES = 200
SEED = 5
BASELINES = (
    "mean_logprob",
    "self_certainty",
    "deepconf_bottom",
    "selfdoubt",
    "selfcheck",
    "sc_primary",
    "sc_modal",
    "semantic_entropy",
    "cw_vote",
)
LEARNED = ("tup", "pce", "trac", "sup_consensus", "cf")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    specs = pair_specs(["org/alpha", "org/beta"], ["gsm8k", "math500"], n_questions=60, seed=11)
    return load_pairs(write_runs(root, specs, k=K, seed=2))


@pytest.fixture(scope="module")
def data(pairs):
    return build_report_data(pairs, n_resamples=N_RESAMPLES, seed=SEED)


@pytest.fixture(scope="module")
def independent(pairs, data):
    """Per-pair metrics: for the baselines recomputed outside the report (the selective metrics of each evidence's
    stored baseline score); for the learned heads the pair's evaluation (checked against lm-eval's per-task
    evaluation in ``test_learned_heads_per_pair_are_lm_evals_numbers``)."""
    values = []
    for pair, evaluation in zip(pairs, data.evaluations):
        labels = np.asarray([evidence["correct"] for evidence in pair.evidences])
        metrics = {key: value for key, value in evaluation.metrics.items() if key.startswith(LEARNED)}
        for method in BASELINES:
            scores = np.asarray([evidence["baselines"][method] for evidence in pair.evidences], dtype=float)
            computed = selective.selective_metrics(scores, labels)
            metrics.update(
                {
                    f"{method}_auroc": computed["auroc"],
                    f"{method}_aurc": computed["aurc"],
                    f"{method}_excess_aurc": computed["excess_aurc"],
                    **{f"{method}_risk_at_{c}": computed[f"risk_at_{c}"] for c in (10, 20, 50)},
                }
            )
        values.append(metrics)
    return values


SINGLE_TRACE = ("mean_logprob", "self_certainty", "deepconf_bottom", "p_true", "selfdoubt", "tup", "pce", "trac")
SAMPLING = ("selfcheck", "sup_consensus", "sc_primary", "sc_modal", "semantic_entropy", "cw_vote", "cf")
"""The rows of the paper's Table 1, in its order (the registry's ``leaderboard_row`` must reproduce it)."""
ADDED = {"single-trace": ("trace_length",), "sampling": ("sc2_modal", "sc4_modal", "cisc", "cocoa")}
"""Baselines the paper's Table 1 lacks: after its rows of their block, in registry order."""


def _row(table, method, k=str(K)):
    frame = table.frame
    matches = [label for label in frame.index if label[-1] == method_label(method, k)]
    assert len(matches) == 1, (method, list(frame.index))
    return frame.loc[matches[0]]


def test_rows_follow_the_paper_layout_in_two_blocks(data):
    table = main_table(data)
    single = [m for m in SINGLE_TRACE if m != "p_true"] + list(ADDED["single-trace"])  # P(True) was not asked for
    sampling = list(SAMPLING) + list(ADDED["sampling"])
    assert [label for _, label in table.frame.index] == [method_label(m, str(K)) for m in single + sampling]
    blocks = [block for block, _ in table.frame.index]
    assert blocks == ["single-trace"] * len(single) + [f"sampling (K={K})"] * len(sampling)
    # the methods whose task switch these runs did not turn on: P(True), the prefix-probe methods
    switched_off = {m.label for m in all_methods() if m.switch is not None and m.leaderboard_row is not None}
    (absent,) = re.findall(r"Not in the runs: (.*)\.$", table.note)
    assert set(absent.split(", ")) == switched_off and "P(True)" in switched_off
    assert "TrAC+CF@4" in table.frame.index.get_level_values("method")


def test_macro_and_per_task_cells_equal_independent_means(data, pairs, independent):
    table = main_table(data)
    for method in BASELINES + LEARNED:
        row = _row(table, method)
        for column, metric in (
            ("macro AUROC", "auroc"),
            ("macro AURC", "aurc"),
            ("excess AURC", "excess_aurc"),
            ("risk@10", "risk_at_10"),
            ("risk@20", "risk_at_20"),
            ("risk@50", "risk_at_50"),
        ):
            expected = np.mean([values[f"{method}_{metric}"] for values in independent])
            assert row[column] == pytest.approx(expected, abs=1e-12), (method, column)
        for task in ("gsm8k", "math500"):
            for metric, shown in (("auroc", "AUROC"), ("aurc", "AURC")):
                expected = np.mean(
                    [values[f"{method}_{metric}"] for pair, values in zip(pairs, independent) if pair.task == task]
                )
                assert row[f"{task} {shown}"] == pytest.approx(expected, abs=1e-12), (method, task, metric)


def test_latency_is_one_for_single_trace_k_for_sampling_and_adds_the_probe(data, pairs):
    table = main_table(data)
    for method in ("mean_logprob", "self_certainty", "deepconf_bottom", "selfdoubt", "tup"):
        assert _row(table, method)["latency ×"] == 1.0
    for method in ("selfcheck", "sc_primary", "sc_modal", "semantic_entropy", "cw_vote"):
        assert _row(table, method)["latency ×"] == K
    probe_share = np.mean(
        [
            pair.seconds["probe_trace"] / len(pair.evidences) / (pair.seconds["generation"] / pair.responses)
            for pair in pairs
        ]
    )
    assert 0 < probe_share < 0.1
    assert _row(table, "trac")["latency ×"] == pytest.approx(1 + probe_share)
    assert _row(table, "cf")["latency ×"] == pytest.approx(K + probe_share)
    assert "latency ×" not in table.rank_columns


def _marked_cells(markdown: str, column: str) -> dict[str, list[str]]:
    """Row labels (method) of the bold and underlined cells of ``column``, read from the rendered Markdown."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    position = header.index(column)
    marked: dict[str, list[str]] = {"best": [], "second": []}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if re.fullmatch(r"\*\*.*\*\*", cells[position]):
            marked["best"].append(cells[1])
        elif re.fullmatch(r"<u>.*</u>", cells[position]):
            marked["second"].append(cells[1])
    return marked


def test_best_and_second_best_are_marked_on_the_right_cells(data):
    table = main_table(data)
    markdown = to_markdown(table)
    labels = list(table.frame.index.get_level_values("method"))
    for column, higher in (("macro AUROC", True), ("macro AURC", False), ("risk@10", False), ("gsm8k AUROC", True)):
        values = table.frame[column].to_numpy()
        distinct = sorted(set(values), reverse=higher)
        expected = {
            "best": [label for label, value in zip(labels, values) if value == distinct[0]],
            "second": [label for label, value in zip(labels, values) if value == distinct[1]],
        }
        assert _marked_cells(markdown, column) == expected, column
    assert _marked_cells(markdown, "latency ×") == {"best": [], "second": []}


def _independent_samples(data, metric):
    return reference_samples(data.pairs, data.evaluations, data.common_methods, metric, N_RESAMPLES, SEED)


def test_intervals_match_an_independent_bootstrap_and_contain_the_point(data, independent):
    table = ci_table(data)
    for metric, shown in (("auroc", "AUROC"), ("aurc", "AURC")):
        samples = _independent_samples(data, metric)
        for method in BASELINES + LEARNED:
            row = _row(table, method)
            lo, hi = percentile_interval(samples[method])
            assert (row[f"{shown} lo"], row[f"{shown} hi"]) == pytest.approx((lo, hi), abs=1e-12), (method, metric)
            assert row[f"macro {shown}"] == pytest.approx(np.mean([v[f"{method}_{metric}"] for v in independent]))
            # the interval belongs to the number shown: learned heads are resampled per cross-fitting repetition
            assert row[f"{shown} lo"] <= row[f"macro {shown}"] <= row[f"{shown} hi"], (method, metric)
    assert "200 hierarchical bootstrap resamples" in table.note and f"seed {SEED}" in table.note


def test_paired_differences_match_independent_resamples_and_per_pair_wins(data, independent):
    table = paired_table(data)
    for metric, shown in (("auroc", "AUROC"), ("aurc", "AURC")):
        samples = _independent_samples(data, metric)
        higher = metric == "auroc"
        for a, b in COMPARISONS:
            row = table.frame.loc[(shown, f"{method_label(a, str(K))} − {method_label(b, str(K))}")]
            value_a = np.array([v[f"{a}_{metric}"] for v in independent])
            value_b = np.array([v[f"{b}_{metric}"] for v in independent])
            assert row["difference"] == pytest.approx(value_a.mean() - value_b.mean(), abs=1e-12)
            wins = int(np.sum(value_a > value_b)) if higher else int(np.sum(value_a < value_b))
            losses = int(np.sum(value_a < value_b)) if higher else int(np.sum(value_a > value_b))
            assert (row["wins"], row["ties"], row["losses"], row["pairs"]) == (wins, 0, losses, len(value_a))
            differences = samples[a] - samples[b]
            assert (row["lo"], row["hi"]) == pytest.approx(percentile_interval(differences), abs=1e-12)
            not_better = differences <= 0 if higher else differences >= 0
            assert row["p"] == pytest.approx(not_better.mean())
    assert "negative favours the first method" in table.note


@pytest.mark.parametrize("metric", ["auroc", "aurc"])
def test_the_ranked_summary_ranks_by_the_macro_against_sc_at_k(data, metric):
    statistics = report_statistics.report_statistics(data)
    summary = statistics.ranked[metric]
    higher = metric == "auroc"
    values = [row.value for row in summary.rows]
    assert values == sorted(values, reverse=higher) and len(set(values)) > 2
    assert {row.method for row in summary.rows} == {method for _, method in leaderboard_methods(data)}
    assert summary.reference == "sc_modal"
    reference = data.per_pair("sc_modal", metric)
    for row in summary.rows:
        assert row.value == data.macro(row.method, metric)
        assert (row.lo, row.hi) == data.ci(row.method, metric)
        if row.method == "sc_modal":
            assert row.difference is None
            continue
        assert row.difference is statistics.paired[metric, row.method, "sc_modal"]  # one difference, shown twice
        assert row.difference.difference == pytest.approx(
            data.macro(row.method, metric) - data.macro("sc_modal", metric)
        )
        better = (
            data.per_pair(row.method, metric) > reference if higher else data.per_pair(row.method, metric) < reference
        )
        assert row.difference.wins == int(better.sum()) and row.difference.pairs == len(data.pairs)
    leader = summary.rows[0].method
    tied = [
        row.method
        for row in summary.rows[1:]
        if (found := statistics.paired[metric, row.method, leader]).lo <= 0 <= found.hi
    ]
    expected = dict.fromkeys([leader, *tied], "tied") if tied else {leader: "best"}
    assert {row.method: row.mark for row in summary.rows if row.mark} == expected
    table = ranked_table(summary)
    label = selective.METRIC_LABELS[metric]
    assert list(table.frame.index) == [(rank, row.label) for rank, row in enumerate(summary.rows, start=1)]
    assert table.frame[f"macro {label}"].tolist() == values
    assert table.title == f"Ranked by macro {label}, against SC@{K} (modal answer)"


def test_without_sc_at_k_the_reference_is_the_best_single_trace_baseline(data, monkeypatch):
    monkeypatch.setattr(report_statistics, "SC_REFERENCE", "not_a_method")
    baselines = ("mean_logprob", "self_certainty", "deepconf_bottom", "selfdoubt", "trace_length")
    best = max(baselines, key=lambda method: data.macro(method, "auroc"))
    ranked = report_statistics.report_statistics(data).ranked
    assert ranked["auroc"].reference == best
    assert ranked["aurc"].reference == min(baselines, key=lambda method: data.macro(method, "aurc"))
    assert set(ranked) == set(data.bootstraps) and "smece" not in ranked  # smECE has no interval to rank with


def test_per_pair_table_lists_every_pair_with_its_own_numbers(data, pairs, independent):
    table = per_pair_table(data)
    assert list(table.frame.index) == [pair.name for pair in pairs]
    for pair, values in zip(pairs, independent):
        row = table.frame.loc[pair.name]
        assert row["n"] == 60 and row["K"] == K
        assert row["accuracy"] == pytest.approx(np.mean([e["correct"] for e in pair.evidences]))
        for method in BASELINES + LEARNED:
            assert row[method_label(method, str(K))] == pytest.approx(values[f"{method}_auroc"], abs=1e-12)


def test_learned_heads_per_pair_are_lm_evals_numbers(pairs, data):
    """The report evaluates extra analysis heads on the same folds; the leaderboard heads keep lm-eval's numbers."""
    expected = evaluate_task(pairs[1].evidences).metrics
    for method in LEARNED:
        for metric in ("auroc", "aurc", "excess_aurc", "risk_at_10"):
            assert data.evaluations[1].metrics[f"{method}_{metric}"] == expected[f"{method}_{metric}"]


# ------------------------------------------------------------------------------------------------ degenerate pairs


@pytest.fixture(scope="module")
def edge(pairs):
    """Three pairs cut from one: all of it with P(True), its correct answers only (one class, no P(True)), and its
    correct answers plus two wrong ones with P(True) (too few wrong answers to cross-fit the heads)."""
    base = pairs[0]
    rng = np.random.default_rng(0)

    def with_p_true(evidences):
        return tuple(
            {**e, "baselines": {**e["baselines"], "p_true": float(0.4 * e["correct"] + rng.random())}}
            for e in evidences
        )

    correct = tuple(e for e in base.evidences if e["correct"])
    wrong = tuple(e for e in base.evidences if not e["correct"])
    per_generation = base.seconds["generation"] / base.responses

    def half_a_generation(evidences):  # P(True) costs half a generation per question
        return {**base.seconds, "p_true": 0.5 * per_generation * len(evidences)}

    full = replace(
        base, model="edge/full", evidences=with_p_true(base.evidences), seconds=half_a_generation(base.evidences)
    )
    one_class = replace(base, model="edge/one-class", evidences=correct)
    two_wrong = replace(
        base,
        model="edge/two-wrong",
        evidences=with_p_true(correct + wrong[:2]),
        seconds=half_a_generation(correct + wrong[:2]),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = build_report_data([full, one_class, two_wrong], n_resamples=N_RESAMPLES, seed=SEED)
    assert any(issubclass(w.category, TracWarning) for w in caught)  # the evaluation says why heads are NaN
    return built


def test_small_and_one_class_pairs_show_nan_with_the_reason(edge):
    table = per_pair_table(edge)
    one_class, two_wrong = "edge/one-class / gsm8k", "edge/two-wrong / gsm8k"
    assert list(table.frame.index) == ["edge/full / gsm8k", one_class, two_wrong]
    for method in LEARNED:
        assert math.isnan(table.frame.loc[one_class, method_label(method, str(K))])
        assert math.isnan(table.frame.loc[two_wrong, method_label(method, str(K))])
        assert not math.isnan(table.frame.loc["edge/full / gsm8k", method_label(method, str(K))])
    assert math.isnan(table.frame.loc[one_class, "Mean log-probability"])
    assert not math.isnan(table.frame.loc[two_wrong, "Mean log-probability"])
    n_correct = int(table.frame.loc[one_class, "n"])
    assert f"AUROC undefined (all {n_correct} answers correct: one class only)" in table.note
    assert f"not cross-fitted ({n_correct} correct / 2 wrong answers" in table.note
    assert f"{one_class}: " in table.note and f"{two_wrong}: " in table.note

    main = main_table(edge)
    assert _row(main, "trac")["macro AUROC"] == table.frame.loc["edge/full / gsm8k", "TrAC"]
    expected = np.nanmean(table.frame["Mean log-probability"])
    assert _row(main, "mean_logprob")["macro AUROC"] == pytest.approx(expected)
    assert one_class in main.note and two_wrong in main.note
    assert "excess AURC undefined (no wrong answer" in main.note


def test_p_true_is_shown_when_present_on_the_pairs_that_have_it(edge):
    main = main_table(edge)
    labels = list(main.frame.index.get_level_values("method"))
    assert labels.index("P(True)") == labels.index("DeepConf-bottom") + 1
    aurocs = [
        selective.auroc([e["baselines"]["p_true"] for e in pair.evidences], pair.labels)
        for pair in (edge.pairs[0], edge.pairs[2])
    ]
    assert _row(main, "p_true")["macro AUROC"] == pytest.approx(np.mean(aurocs))
    assert _row(main, "p_true")["latency ×"] == pytest.approx(1.5)
    assert "P(True) (2 of 3 pairs)" in main.note
    ci = ci_table(edge)
    assert math.isnan(_row(ci, "p_true")["AUROC lo"]) and "No interval" in ci.note and "P(True)" in ci.note


def test_resamples_without_a_defined_pair_are_counted_in_the_notes_not_warned(edge):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracWarning)
        ci, paired = ci_table(edge), paired_table(edge)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        samples = _independent_samples(edge, "auroc")
    assert _row(ci, "trac")["AUROC lo"] == pytest.approx(percentile_interval(samples["trac"])[0], abs=1e-12)
    trac, sc_modal = samples["trac"], samples["sc_modal"]
    assert np.isnan(trac).sum() > np.isnan(sc_modal).sum() > 0  # TrAC is defined on one pair, SC@K on two
    assert f"AUROC TrAC {np.isnan(trac).sum()}," in ci.note
    assert f"AUROC SC@4 (modal answer) {np.isnan(sc_modal).sum()}," in ci.note
    assert f"AUROC TrAC − SC@4 (modal answer) {np.isnan(trac - sc_modal).sum()}," in paired.note


def test_k_is_named_when_every_pair_shares_it(pairs):
    assert k_label(pairs) == str(K)
    eight = replace(pairs[1], evidences=tuple({**e, "num_samples": 8} for e in pairs[1].evidences))
    assert k_label([pairs[0], eight]) == "K"
    assert method_label("sc_modal", "K") == "SC@K (modal answer)" and method_label("trac", "K") == "TrAC"


def test_the_leaderboard_reads_each_method_metric_once_whatever_the_tasks(six_task_report, monkeypatch):
    calls = []
    per_pair = ReportData.per_pair
    monkeypatch.setattr(ReportData, "per_pair", lambda self, m, k: calls.append((m, k)) or per_pair(self, m, k))
    leaderboard.main_table(six_task_report)
    assert len({pair.task for pair in six_task_report.pairs}) == 6
    assert len(calls) <= 2 * len(set(calls))  # per-task means, then the macro: not once per task


def test_each_pair_has_its_own_paired_difference_from_a_bootstrap_of_its_questions(data):
    """docs/method.md#paired-differences: per pair, TrAC − SC@K in AUROC, its interval and p from that pair's questions
    alone (the report's bootstrap restricted to the pair)."""
    table = paired_per_pair_table(data)
    k = str(K)
    for index, pair in enumerate(data.pairs):
        row = table.frame.loc[(pair.name, f"{method_label('trac', k)} − {method_label('sc_modal', k)}")]
        expected = data.per_pair("trac", "auroc")[index] - data.per_pair("sc_modal", "auroc")[index]
        assert row["difference"] == pytest.approx(expected)
        alone = data.bootstrap_subset([index], ["trac", "sc_modal"], ["auroc"])["auroc"]
        interval = alone.paired_difference("trac", "sc_modal", 0.95, higher_is_better=True)
        assert (row["lo"], row["hi"]) == pytest.approx((interval["lo"], interval["hi"]))
        differences = alone.samples[:, 0] - alone.samples[:, 1]
        assert row["p"] == pytest.approx(np.mean(differences[~np.isnan(differences)] <= 0))
    assert len(table.frame) == len(data.pairs) * 4


def _to_leader(lo: float, hi: float) -> report_statistics.PairedDifference:
    return report_statistics.PairedDifference((lo + hi) / 2, lo, hi, 0.5, 0, 0, 0, 2, 0)


def test_best_only_where_every_paired_difference_to_the_leader_excludes_zero():
    """docs/method.md#paired-differences: 0.973 against 0.972 with an interval through 0 is a tie, not a win."""
    marks = report_statistics.winner_marks
    apart = {"b": _to_leader(-0.05, -0.01), "c": _to_leader(-0.2, -0.1)}
    assert marks(["a", "b", "c"], apart, frozenset()) == {"a": "best"}
    close = {"b": _to_leader(-0.01, 0.002), "c": _to_leader(-0.2, -0.1)}
    assert marks(["a", "b", "c"], close, frozenset()) == {"a": "tied", "b": "tied"}
    third = {"b": _to_leader(-0.05, -0.01), "c": _to_leader(-0.3, 0.1)}  # a wide interval still reaches the leader
    assert marks(["a", "b", "c"], third, frozenset()) == {"a": "tied", "c": "tied"}
    assert marks(["a", "b"], {"b": _to_leader(math.nan, math.nan)}, frozenset()) == {}  # no interval: no claim
    assert marks(["a", "b", "c"], close, frozenset({"b"})) == {"a": "best"}  # a constant score is no rival
