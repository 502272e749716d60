"""The paper's analysis tables of ``trac report`` (trac_metrics.reporting.analyses), each checked against values
recomputed here from the records' evidence with the lower-level functions (selective, heads)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from bootstrap_reference import percentile_interval, reference_samples
from record_factory import synthetic_question
from run_factory import pair_specs, write_runs

from trac_metrics import selective
from trac_metrics._warnings import TracWarning
from trac_metrics.heads import cross_fit, fit_head, oof_metric, transfer_scores
from trac_metrics.records import RecordWriter
from trac_metrics.reporting import analyses
from trac_metrics.reporting.report_data import ReportData, build_report_data
from trac_metrics.reporting.runs import decoding_label, load_pairs

GREEDY = {"temperature": 0.0, "top_p": 1.0, "probe_temperature": 0.0}
STAMP = "2026-01-01T00-00-00"


@pytest.fixture(autouse=True)
def _quiet_degenerate_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        yield


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """3 models × 2 tasks × 60 questions (K = 4), plus m1 / t1 again under greedy → greedy decoding."""
    root = tmp_path_factory.mktemp("runs")
    write_runs(root / "default", pair_specs(["m1", "m2", "m3"], ["t1", "t2"], 60, seed=1), k=4, seed=0)
    write_runs(root / "greedy", pair_specs(["m1"], ["t1"], 60, seed=1), k=4, seed=5, decoding=GREEDY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return build_report_data(load_pairs([root]), n_resamples=200, seed=0)


def _with_extras(records, rng):
    """The question's primary response gets the three ablation probes, the two cue variants and a P(True) score."""
    primary = records[0]
    correct = primary.answer == primary.reference
    trace = primary.probes["trace"]
    variants = {}
    for variant in ("question_only", "shuffled_trace", "teacher_forced", "cue_answer", "cue_therefore"):
        answer = primary.answer if rng.random() < (0.65 if correct else 0.4) else str(int(primary.answer) + 5)
        variants[variant] = replace(
            trace,
            variant=variant,
            answer=answer,
            text=f"{answer}}}",
            token_logprobs=np.minimum(rng.normal(-0.8, 0.4, 3), 0.0),
            context="question" if variant == "question_only" else trace.context,
            context_tokens=0 if variant == "question_only" else trace.context_tokens,
        )
    p_true = float(np.clip(rng.normal(0.65 if correct else 0.45, 0.15), 0.01, 0.99))
    return [replace(primary, probes={**primary.probes, **variants}, p_true=p_true), *records[1:]]


@pytest.fixture(scope="module")
def extras(tmp_path_factory):
    """One task, 3 models × 60 questions; m1 and m2 ran the ablation probes and P(True), m3 did not."""
    root = tmp_path_factory.mktemp("extras")
    rng = np.random.default_rng(3)
    for model, accuracy in (("m1", 0.5), ("m2", 0.6), ("m3", 0.45)):
        writer = RecordWriter(root / model / "trac_records" / f"t9.{STAMP}.jsonl")
        for doc_id in range(60):
            records = synthetic_question(rng, doc_id, rng.random() < accuracy, k=4, signal=0.3, task="t9", model=model)
            writer.write_batch(records if model == "m3" else _with_extras(records, rng))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        return build_report_data(load_pairs([root]), n_resamples=200, seed=0)


def _rows(pair, method):
    """Feature rows of a head, built here from the evidence (not via the method registry)."""

    def row(evidence):
        features = evidence["features"]
        return {
            "tup": features["tup"],
            "pce": features["pce"],
            "trac": [*features["pce"], *features["tup"]],
            "pce_agreement": features["pce"][:1],
            "pce_question_only": features.get("pce_question_only"),
            "pce_cue_answer": features.get("pce_cue_answer"),
            "pce_cue_therefore": features.get("pce_cue_therefore"),
            "tup_generation": features["tup_generation"],
            "sequence_only": [evidence["baselines"]["mean_logprob"]],
            "trac_tup_generation": [*features["pce"], *features["tup_generation"]],
        }[method]

    return np.asarray([row(evidence) for evidence in pair.evidences], dtype=np.float64)


def _cross_fitted_auroc(pair, method):
    labels = pair.labels
    return oof_metric(cross_fit(_rows(pair, method), labels, np.arange(labels.size)), labels, selective.auroc)


# ----------------------------------------------------------------------------------------------- ablations


def test_component_ablation_recomputes_trac_and_uses_shared_bootstrap(data):
    table = analyses.component_ablation(data)
    assert list(table.frame.index) == ["TUP only", "PCE only", "PCE + TUP (= TrAC)"]
    trac = table.frame.loc["PCE + TUP (= TrAC)"]
    assert trac["AUROC"] == pytest.approx(np.mean([_cross_fitted_auroc(pair, "trac") for pair in data.pairs]))
    for label, method in (("TUP only", "tup"), ("PCE only", "pce"), ("PCE + TUP (= TrAC)", "trac")):
        row = table.frame.loc[label]
        assert (row["CI lo"], row["CI hi"]) == data.ci(method, "auroc")
        assert row["CI lo"] <= row["AUROC"] <= row["CI hi"] and row["CI lo"] < row["CI hi"]
        assert row["AURC"] == pytest.approx(np.mean([e.metrics[f"{method}_aurc"] for e in data.evaluations]))
        assert row["pairs"] == len(data.pairs)
    assert table.rank_columns == {"AUROC": True, "AURC": False}


def test_pce_decomposition_agreement_only_is_a_head_on_e_alone(data):
    table = analyses.pce_decomposition(data)
    assert list(table.frame.index) == [
        "Agreement only (the paper's AC)",
        "Likelihood only",
        "Agreement + likelihood (= PCE)",
    ]
    expected = np.mean([_cross_fitted_auroc(pair, "pce_agreement") for pair in data.pairs])
    assert table.frame.loc["Agreement only (the paper's AC)", "AUROC"] == pytest.approx(expected)
    assert table.frame.loc["Agreement + likelihood (= PCE)", "AUROC"] == pytest.approx(
        np.mean([_cross_fitted_auroc(pair, "pce") for pair in data.pairs])
    )


def test_tables_without_probe_variants_or_p_true_are_empty_and_say_how_to_get_them(data):
    controls, p_true = analyses.trace_controls(data), analyses.p_true_fusion(data)
    assert controls.frame.empty and p_true.frame.empty
    assert "probe_variants: [trace, question_only, shuffled_trace, teacher_forced, after_answer]" in controls.note
    assert "generation_kwargs" in controls.note and "Question-only probe" in controls.note
    assert "trac: p_true: true" in p_true.note


def test_cue_variants_compare_pce_under_three_cues_on_the_pairs_that_ran_them(extras, data):
    table = analyses.cue_variants(extras)
    assert list(table.frame.index) == [
        'PCE, the task\'s cue (default "The final answer is")',
        'PCE, cue "The answer is"',
        'PCE, cue "Therefore, the final answer is"',
    ]
    with_probes = [i for i, pair in enumerate(extras.pairs) if pair.model != "m3"]
    for label, method in zip(table.frame.index, ("pce", "pce_cue_answer", "pce_cue_therefore"), strict=True):
        expected = np.mean([_cross_fitted_auroc(extras.pairs[i], method) for i in with_probes])
        assert table.frame.loc[label, "AUROC"] == pytest.approx(expected)
    spread = table.frame["AUROC"].max() - table.frame["AUROC"].min()
    assert spread > 0 and f"(max − min): {spread:.3f}." in table.note
    absent = analyses.cue_variants(data)
    assert absent.frame.empty and "probe_variants: [trace, cue_answer, cue_therefore]" in absent.note


def test_trace_controls_cover_only_the_pairs_with_the_probes(extras):
    table = analyses.trace_controls(extras)
    assert list(table.frame.index) == [
        "Question-only probe",
        "Shuffled-trace probe",
        "Teacher-forced support",
        "PCE + answer support",
        "PCE with completed trace",
    ]
    with_probes = [i for i, pair in enumerate(extras.pairs) if pair.model != "m3"]
    assert len(with_probes) == 2
    question_only = np.mean([_cross_fitted_auroc(extras.pairs[i], "pce_question_only") for i in with_probes])
    assert table.frame.loc["Question-only probe", "AUROC"] == pytest.approx(question_only)
    # PCE is averaged over the same two pairs, not over all three
    pce = np.mean([_cross_fitted_auroc(extras.pairs[i], "pce") for i in with_probes])
    assert table.frame.loc["PCE with completed trace", "AUROC"] == pytest.approx(pce)
    assert (table.frame["pairs"] == 2).all()
    # the interval comes from the same bootstrap restricted to those pairs (the shared one has no interval here)
    methods = ["pce_question_only", "pce_shuffled_trace", "pce_teacher_forced", "pce"]
    samples = reference_samples(
        [extras.pairs[i] for i in with_probes],
        [extras.evaluations[i] for i in with_probes],
        methods,
        "auroc",
        extras.n_resamples,
        extras.seed,
    )
    assert tuple(table.frame.loc["Question-only probe", ["CI lo", "CI hi"]]) == pytest.approx(
        percentile_interval(samples["pce_question_only"]), abs=1e-12
    )
    lo, hi = table.frame.loc["Question-only probe", ["CI lo", "CI hi"]]
    assert lo <= table.frame.loc["Question-only probe", "AUROC"] <= hi
    assert math.isnan(extras.ci("pce_question_only", "auroc")[0])
    assert "2 of 3 pair(s)" in table.note and "m3 / t9" in table.note


def test_p_true_fusion_macro_of_raw_p_true(extras):
    table = analyses.p_true_fusion(extras)
    assert list(table.frame.index) == ["P(True)", "PCE", "P(True) + PCE"]
    pairs = [pair for pair in extras.pairs if pair.model != "m3"]
    expected = np.mean(
        [selective.auroc([e["baselines"]["p_true"] for e in pair.evidences], pair.labels) for pair in pairs]
    )
    assert table.frame.loc["P(True)", "AUROC"] == pytest.approx(expected)
    assert "m3 / t9" in table.note


# ----------------------------------------------------------------------------------------------- blind spot


def test_consensus_blind_spot_counted_by_hand(data):
    thresholds = (0.5, 0.75, 1.0)
    table = analyses.consensus_blind_spot(data, thresholds)
    for threshold in thresholds:
        pairs = n = wrong = 0
        sc, pce = [], []
        for pair, evaluation in zip(data.pairs, data.evaluations):
            votes = np.asarray([e["features"]["consensus"]["q_K"] for e in pair.evidences])
            subset = votes >= threshold - 1e-9
            labels = pair.labels[subset]
            if 0 < labels.sum() < labels.size:
                pairs, n, wrong = pairs + 1, n + labels.size, wrong + int((labels == 0).sum())
                sc.append(selective.auroc(votes[subset], labels))
                pce.append(selective.auroc(evaluation.scores["pce"][subset], labels))
        row = table.frame.loc[threshold]
        assert (row["pairs"], row["n"], row["wrong"]) == (pairs, n, wrong)
        assert row["SC"] == pytest.approx(np.mean(sc))
        assert row["PCE"] == pytest.approx(np.mean(pce))
    assert table.frame.loc[1.0, "pairs"] > 0
    assert table.frame.loc[1.0, "SC"] == 0.5  # unanimous votes: one constant score
    assert table.frame.loc[0.5, "n"] > table.frame.loc[1.0, "n"]


# ----------------------------------------------------------------------------------------------- transfer

SCHEMES = {
    "LODO": lambda target, other: other.task != target.task,
    "Global": lambda target, other: (other.model, other.task) != (target.model, target.task),
    "LOMO": lambda target, other: other.model != target.model,
}


def _transfer_auroc(data, target, method, scheme):
    sources = [pair for pair in data.pairs if SCHEMES[scheme](target, pair)]
    x_source = np.vstack([_rows(pair, method) for pair in sources])
    y_source = np.concatenate([pair.labels for pair in sources])
    names = [str(c) for c in range(x_source.shape[1])]
    return selective.auroc(transfer_scores(x_source, y_source, _rows(target, method), names), target.labels)


def test_leave_one_dataset_out_by_target(data):
    table = analyses.transfer_by_target(data)
    assert list(table.frame.index) == ["t1", "t2"]
    for task in ("t1", "t2"):
        targets = [(pair, e) for pair, e in zip(data.pairs, data.evaluations) if pair.task == task]
        transfer = np.array([_transfer_auroc(data, pair, "pce", "LODO") for pair, _ in targets])
        in_domain = np.array([e.metrics["pce_auroc"] for _, e in targets])
        row = table.frame.loc[task]
        assert row["Transfer"] == pytest.approx(transfer.mean(), abs=1e-12)
        assert row["In-domain"] == pytest.approx(in_domain.mean())
        assert row["Δ"] == pytest.approx((transfer - in_domain).mean(), abs=1e-12)
        assert row["pairs"] == len(targets)


def test_representation_comparison_under_each_scheme(data):
    table = analyses.transfer_representations(data)
    assert list(table.frame.columns) == ["LODO", "Global", "LOMO"]
    for label, method in (("TUP", "tup"), ("PCE", "pce"), ("TrAC", "trac")):
        for scheme in SCHEMES:
            expected = np.mean([_transfer_auroc(data, pair, method, scheme) for pair in data.pairs])
            assert table.frame.loc[label, scheme] == pytest.approx(expected, abs=1e-12), (label, scheme)


def test_one_task_makes_lodo_nan_with_the_reason(extras):
    by_target = analyses.transfer_by_target(extras)
    assert math.isnan(by_target.frame.loc["t9", "Transfer"]) and math.isnan(by_target.frame.loc["t9", "Δ"])
    assert by_target.frame.loc["t9", "In-domain"] == pytest.approx(
        np.mean([e.metrics["pce_auroc"] for e in extras.evaluations])
    )
    assert "LODO is NaN: it needs at least 2 tasks" in by_target.note
    representations = analyses.transfer_representations(extras)
    assert representations.frame["LODO"].isna().all()
    assert representations.frame[["Global", "LOMO"]].notna().all().all()
    assert "LODO is NaN: it needs at least 2 tasks" in representations.note


# ----------------------------------------------------------------------------------------------- label efficiency


def test_label_split_is_stratified_nested_and_seeded():
    labels = np.array([1] * 37 + [0] * 23)
    split = analyses.label_split(labels, 0.4, seed=0, key="m / t")
    assert sorted(np.bincount(labels[split.test]).tolist()) == [9, 15]  # round(0.4·23), round(0.4·37)
    train = split.training(1.0)
    assert not set(train) & set(split.test) and sorted([*train, *split.test]) == list(range(60))
    quarter = split.training(0.25)
    assert np.bincount(labels[quarter]).tolist() == [math.ceil(0.25 * 14), math.ceil(0.25 * 22)]
    assert set(quarter) <= set(split.training(0.5)) <= set(train)
    again = analyses.label_split(labels, 0.4, seed=0, key="m / t")
    assert np.array_equal(again.test, split.test) and np.array_equal(again.training(0.25), quarter)
    assert not np.array_equal(analyses.label_split(labels, 0.4, seed=1, key="m / t").test, split.test)
    with pytest.raises(ValueError, match="test_fraction"):
        analyses.label_split(labels, 1.0, seed=0, key="m / t")


def test_label_efficiency_is_recomputed_and_one_percent_leaves_no_pair_nan(data):
    """docs/method.md#label-efficiency: each column's head refitted here on the split's training questions, at least
    2 of each class however small the share (1 % of these pairs is 1 question a class), so no pair is NaN; the
    paper's sequence-only column a head on the mean log-probability."""
    fractions = (0.01, 0.25, 0.5, 1.0)
    table = analyses.label_efficiency(data, fractions, seed=0)
    assert list(table.frame.index) == ["1%", "25%", "50%", "100%"]
    expected = {}
    for label, method in (("TUP", "tup"), ("PCE", "pce"), ("TrAC", "trac"), ("Sequence only", "sequence_only")):
        for fraction in fractions:
            values = []
            for pair in data.pairs:
                split = analyses.label_split(pair.labels, 0.4, 0, pair.name)
                train, x = split.training(fraction), _rows(pair, method)
                if fraction == 0.01:
                    assert np.bincount(pair.labels[train]).tolist() == [2, 2], "the minimum of 2 a class"
                head = fit_head(x[train], pair.labels[train], [str(c) for c in range(x.shape[1])])
                values.append(selective.auroc(head.predict(x[split.test]), pair.labels[split.test]))
            expected[label, fraction] = np.mean(values)
            assert table.frame.loc[f"{fraction * 100:g}%", label] == pytest.approx(expected[label, fraction])
        assert table.frame.loc["25%", f"{label} retention"] == pytest.approx(
            expected[label, 0.25] / expected[label, 1.0]
        )
    assert (table.frame["pairs"] == len(data.pairs)).all()
    assert "NaN" not in table.note and "at least 2 of each class" in table.note
    assert "Not in these runs: Conv.+final" in table.note, "these runs have no prefix probes"
    assert table.frame.equals(analyses.label_efficiency(data, fractions, seed=0).frame)
    assert not table.frame.equals(analyses.label_efficiency(data, fractions, seed=1).frame)


def test_label_efficiency_rejects_bad_fractions(data):
    with pytest.raises(ValueError, match="fractions"):
        analyses.label_efficiency(data, (0.0, 1.0))


# ----------------------------------------------------------------------------------------------- decoding symmetry


def test_decoding_symmetry_rows_for_the_pair_run_twice(data):
    table = analyses.decoding_symmetry(data)
    assert list(table.frame.index) == ["t1 / m1 / T=0.7→greedy (default)", "t1 / m1 / greedy→greedy"]
    for pair, evaluation in zip(data.pairs, data.evaluations):
        if (pair.model, pair.task) != ("m1", "t1"):
            continue
        greedy = pair.decoding["temperature"] == 0.0
        row = table.frame.loc[f"t1 / m1 / {'greedy→greedy' if greedy else 'T=0.7→greedy (default)'}"]
        assert row["n"] == 60
        assert row["Acc"] == pytest.approx(pair.labels.mean())
        assert row["Agreement"] == pytest.approx(np.mean([e["features"]["pce"][0] for e in pair.evidences]))
        assert row["PCE AUROC"] == evaluation.metrics["pce_auroc"]
        assert row["TrAC AUROC"] == evaluation.metrics["trac_auroc"]


def test_decoding_symmetry_empty_without_variants(extras):
    table = analyses.decoding_symmetry(extras)
    assert table.frame.empty and "more than one primary/probe decoding" in table.note


def test_all_analyses_in_paper_order(extras):
    names = [table.name for table in analyses.all_analyses(extras)]
    assert names == [
        "ablation_components",
        "ablation_tup_span",
        "ablation_trace_controls",
        "ablation_pce_decomposition",
        "ablation_p_true",
        "robustness_cue_variants",
        "consensus_blind_spot",
        "answer_leakage",
        "transfer_lodo",
        "transfer_representations",
        "label_efficiency",
        "decoding_symmetry",
    ]


def test_blind_spot_without_votes(tmp_path):
    write_runs(tmp_path, pair_specs(["m1"], ["t1"], 30, seed=2), k=1, seed=0)
    data = build_report_data(load_pairs([tmp_path]), n_resamples=20, seed=0)
    table = analyses.consensus_blind_spot(data)
    assert table.frame.empty and "K = 1" in table.note and "m1 / t1" in table.note


def test_decodings_that_differ_only_in_top_p_or_top_k_get_distinct_labels():
    default = {"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0}
    labels = {
        decoding_label(default),
        decoding_label({**default, "top_p": 0.9}),
        decoding_label({**default, "top_k": 20}),
        decoding_label({**default, "temperature": 0.0, "top_p": 1.0}),
        decoding_label({}),
    }
    assert labels == {"T=0.7→greedy", "T=0.7,top-p=0.9→greedy", "T=0.7,top-k=20→greedy", "greedy→greedy", "?→?"}


def test_retention_over_a_zero_full_label_auroc_is_nan_with_a_warning(six_task_report, monkeypatch):
    """Features that rank the training questions right and every test question wrong: AUROC 0 at 100% labels."""

    def inverted(report: ReportData, method: str) -> list[np.ndarray]:
        matrices = []
        for pair in report.pairs:
            x = pair.labels.astype(float)
            test = analyses.label_split(pair.labels, 0.4, 0, pair.name).test
            x[test] = 1.0 - x[test]
            matrices.append(x[:, None])
        return matrices

    monkeypatch.setattr(analyses, "_feature_rows", inverted)
    with pytest.warns(TracWarning, match=r"retention is NaN: the full-label AUROC is 0 on m1 / t0") as caught:
        table = analyses.label_efficiency(six_task_report, (0.5, 1.0))
    assert table.frame.loc["100%", "TrAC"] == 0.0
    assert all(
        math.isnan(table.frame.loc[row, f"{label} retention"])
        for row in ("50%", "100%")
        for label in "TUP PCE TrAC".split()
    )
    assert {str(w.message).split(" retention")[0] for w in caught} == {
        f"label efficiency: {label}" for label in ("Sequence only", "TUP", "PCE", "TrAC")
    }


def test_transfer_groups_pairs_by_key_in_one_pass(six_task_report, monkeypatch):
    """Each scheme's key is read a bounded number of times per pair, not once per (target, source)."""
    calls = {"n": 0}

    def counted(key_of):
        def key(pair):
            calls["n"] += 1
            return key_of(pair)

        return key

    schemes = {name: (counted(key_of), needs) for name, (key_of, needs) in analyses.SCHEMES.items()}
    monkeypatch.setattr(analyses, "SCHEMES", schemes)
    matrices = analyses._feature_rows(six_task_report, "pce")
    for scheme in schemes:
        calls["n"] = 0
        analyses._transfer_aurocs(six_task_report, "pce", matrices, scheme)
        assert calls["n"] <= 3 * len(six_task_report.pairs), scheme


def test_transfer_fits_at_most_ten_heads_and_never_shows_a_target_its_key(six_task_report, monkeypatch):
    """With more held-out keys than MAX_TRANSFER_FOLDS, keys are dealt into folds: few fits, and no source row of a
    target's own key (docs/method.md#transfer-heads)."""
    monkeypatch.setattr(analyses, "MAX_TRANSFER_FOLDS", 4)  # 6 tasks: LODO and Global deal 6 keys into 4 folds
    matrices = analyses._feature_rows(six_task_report, "pce")
    tagged = [np.column_stack([matrix, np.full(len(matrix), j)]) for j, matrix in enumerate(matrices)]
    fits = []

    def recording(source_rows, source_labels, target_rows, names, fit=None):
        fits.append(({int(j) for j in source_rows[:, -1]}, {int(j) for j in target_rows[:, -1]}))
        return np.zeros(len(target_rows))

    monkeypatch.setattr(analyses, "transfer_scores", recording)
    for scheme in ("LODO", "Global"):
        fits.clear()
        analyses._transfer_aurocs(six_task_report, "pce", tagged, scheme)
        key_of = analyses.SCHEMES[scheme][0]
        assert len(fits) == 4
        assert sorted(j for _, targets in fits for j in targets) == list(range(len(matrices)))
        for sources, targets in fits:
            assert not {key_of(six_task_report.pairs[j]) for j in sources} & {
                key_of(six_task_report.pairs[j]) for j in targets
            }


def test_the_tup_span_table_sets_the_reasoning_against_the_whole_generation(extras):
    """docs/method.md#tup-span-analysis: TUP and TrAC on the span in force (the reasoning r) and on the whole
    generation, each row the macro of its method's cross-fitted AUROC."""
    table = analyses.tup_span(extras)
    methods = {"tup": 0, "tup_generation": 1, "trac": 2, "trac_tup_generation": 3}
    assert len(table.frame) == 4
    for method, row in methods.items():
        expected = np.mean([_cross_fitted_auroc(pair, method) for pair in extras.pairs])
        assert table.frame.iloc[row]["AUROC"] == pytest.approx(expected)
    assert table.frame.iloc[0]["AUROC"] != table.frame.iloc[1]["AUROC"], "the two spans are different tokens"


def test_answer_leakage_splits_by_whether_the_reasoning_states_the_answer(data):
    """docs/method.md#answer-leakage: the synthetic responses state their answer on one line, so no reasoning holds
    it; every question falls in the second subset, whose AUROC is then the pair's own out-of-fold AUROC."""
    table = analyses.answer_leakage(data)
    stated, unstated = table.frame.iloc[0], table.frame.iloc[1]
    assert stated["pairs"] == 0 and math.isnan(stated["PCE"])
    assert unstated["pairs"] == len(data.pairs) and unstated["n"] == sum(len(pair.evidences) for pair in data.pairs)
    for method in ("PCE", "TrAC"):
        scores = [evaluation.scores[method.lower()] for evaluation in data.evaluations]
        expected = np.mean([selective.auroc(s, e.labels) for s, e in zip(scores, data.evaluations, strict=True)])
        assert unstated[method] == pytest.approx(expected), "every question in the subset: the pair's scores whole"
    assert "states the primary answer in 0% of the questions" in table.note


# ------------------------------------------------------------------------------------------- classifier capacity


@pytest.fixture(scope="module")
def two_tasks(data):
    """m1 on t1 and on t2 under the default decoding: two tasks, so leave-one-dataset-out has a source."""
    kept = [i for i, pair in enumerate(data.pairs) if pair.model == "m1" and pair.decoding["temperature"] > 0]
    return replace(data, pairs=tuple(data.pairs[i] for i in kept), evaluations=tuple(data.evaluations[i] for i in kept))


def _forest_in_domain(pair, labels):
    """A random forest cross-fitted on the report's folds, built here from scikit-learn and roc_auc_score."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline

    from trac_metrics.heads.cross_fitting import FOLD_SEEDS, fold_assignments

    rows = _rows(pair, "pce")
    per_repetition = []
    for seed in FOLD_SEEDS:
        folds = fold_assignments(labels, np.arange(labels.size), seed)
        scores = np.empty(labels.size)
        for fold in np.unique(folds):
            model = make_pipeline(
                SimpleImputer(add_indicator=True, keep_empty_features=True),
                RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=0, n_jobs=1),
            ).fit(rows[folds != fold], labels[folds != fold])
            scores[folds == fold] = model.predict_proba(rows[folds == fold])[:, 1]
        per_repetition.append(roc_auc_score(labels, scores))
    return float(np.mean(per_repetition))


def test_classifier_capacity_compares_heads_on_the_same_pce_features_and_folds(two_tasks):
    table = analyses.classifier_capacity(two_tasks)
    assert list(table.frame.index) == ["Logistic regression", "Random forest", "Gradient-boosted trees", "MLP"]
    logistic = table.frame.loc["Logistic regression"]
    assert logistic["In-domain AUROC"] == pytest.approx(np.nanmean(two_tasks.per_pair("pce", "auroc")))
    assert logistic["Δ LR in-domain"] == 0 and logistic["Δ LR LODO"] == 0
    lodo = analyses.transfer_representations(two_tasks).frame.loc["PCE", "LODO"]
    assert logistic["LODO AUROC"] == pytest.approx(lodo)  # the logistic row is the transfer table's own head
    forest = np.mean([_forest_in_domain(p, e.labels) for p, e in zip(two_tasks.pairs, two_tasks.evaluations)])
    assert table.frame.loc["Random forest", "In-domain AUROC"] == pytest.approx(forest)
    assert table.frame.loc["Random forest", "Δ LR in-domain"] == pytest.approx(forest - logistic["In-domain AUROC"])
    assert table.frame["LODO AUROC"].notna().all() and (table.frame["pairs"] == 2).all()


def test_classifier_capacity_is_only_computed_when_asked_for(tmp_path):
    write_runs(tmp_path, pair_specs(["m1"], ["t1", "t2"], 24, seed=4), k=2, seed=4)
    small = build_report_data(load_pairs([tmp_path]), n_resamples=20, seed=0)
    names = [table.name for table in analyses.all_analyses(small)]
    assert "classifier_capacity" not in names
    asked = [table.name for table in analyses.all_analyses(small, classifier_capacity_table=True)]
    assert asked == [*names[:-1], "classifier_capacity", names[-1]]
