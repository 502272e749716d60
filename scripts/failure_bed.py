"""Run the failure-mode test bed (docs/guide/failure-modes.md): train each setting's reasoners, run each through the
real ``lm_eval --model vllm`` on its setting's task, and report every method per setting split by the error each
question invites.

    python scripts/failure_bed.py --out bed                      # every pre-registered setting and seed
    python scripts/failure_bed.py --out bed --settings drift:0.15 --seeds 1   # one of them
    python scripts/failure_bed.py --out bed --settings drift:0.15 --seeds 1 --steps 60 --limit 20   # a smoke slice

Each step is skipped when its output is already there (a model folder with its weights, a run folder with its TrAC
records), so the command resumes; ``--force-report`` is implied: the reports are always written again. A method a user
registered (docs/guide/extending.md) is in every report: register it, rerun, read its row.

Outputs under ``--out``: ``models/<setting>-s<seed>/`` (the reasoners), ``runs/<setting>-s<seed>/`` (lm-eval output
folders with ``trac_records/``), ``reports/<setting>/`` (``trac report`` over the setting's seeds as its pairs, with
``--by invites``: the hierarchical bootstrap resamples seeds, then questions; ``report.html``, its page, with the
cost-matched figure: SC@2/4/8 and TrAC at their cost) and ``table.md``: the seeds measured per setting; the guide's
two tables — per setting, who sees the errors it is built to cause, and the cost-matched comparison; then one row per
setting, error type and method, built from those reports; each setting's error profile by error type and by error
made (how many wrong answers every sample shares, how often the probe re-states a wrong answer unchanged); each
method's AUROC and AURC by the error the primary actually made (drift; slip; rule: a wrong rule, a followed
distractor; slip+rule: both; format). ``--trained-only`` trains nothing and reports each setting over the seeds whose
model is there.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trac_metrics.records import iter_records  # noqa: E402
from trac_metrics.reporting.report_data import build_report_data  # noqa: E402
from trac_metrics.reporting.runs import PairRun, load_pairs  # noqa: E402
from trac_metrics.reporting.subsets import metrics_on  # noqa: E402
from trac_tasks.data import tiny_reasoner  # noqa: E402
from trac_tasks.data.failure_modes import (  # noqa: E402
    ERRORS_MADE,
    N_TEST,
    PREREGISTERED_SETTINGS,
    TEST_SEED,
    Setting,
    error_made,
    held_out_rows,
    preregistered_seeds,
)

TABLE_METHODS = (
    "trac",
    "pce",
    "tup",
    "sequence_only",
    "answer_token",
    "answer_confidence",
    "mean_logprob",
    "deepconf_bottom",
    "cross_model",
    "sc_primary",
    "sc_modal",
    "sc4_modal",
    "sc2_modal",
)
"""The rows of ``table.md``: TrAC, its probe alone, the heads without the probe (TUP, sequence-only, the answer
tokens' log-probability alone and with the mean), token confidence, the cross-model score, and self-consistency at
the cost-matched K = 2, 4 and 8."""
TARGETED_ERRORS = {
    "slips": ("slip",),
    "drift": ("drift",),
    "drift_large": ("drift",),
    "misconception": ("rule", "slip+rule"),
    "distractor": ("rule", "slip+rule"),
}
"""Per kind of setting, the errors (as ``failure_modes.error_made`` names them) it is built to cause: the rows of
``table.md``'s first table."""
SUMMARY_METHODS = (
    "trac",
    "pce",
    "tup",
    "answer_confidence",
    "mean_logprob",
    "sc_modal",
    "sc_primary",
    "sc4_modal",
    "cross_model",
)
"""The columns of ``table.md``'s first table: TrAC, its probe alone, the heads without the probe, token confidence,
self-consistency at K = 8 (both answers) and 4, the cross-model score."""
COST_METHODS = (
    "TrAC",
    "SC@2 (first 2 samples)",
    "SC@4 (first 4 samples)",
    "SC@8 (modal answer)",
    "SC@8 (primary answer)",
)
"""The columns of ``table.md``'s cost-matched table, as the reports name the methods."""
ENGINE_ARGS = (
    "dtype=float32,max_model_len=1024,enable_prefix_caching=True,block_size=32,enforce_eager=True,"
    "distributed_executor_backend=uni,seed=1234"
)


def folder_name(setting: Setting, seed: int) -> str:
    return f"{setting.name.replace(':', '-')}-s{seed}"


def run(command: list[str]) -> None:
    print("+", shlex.join(command), flush=True)
    subprocess.run(command, check=True, cwd=REPO)


def train(setting: Setting, seed: int, folder: Path, steps: int | None, threads: int) -> None:
    if (folder / "model.safetensors").is_file():
        return
    extra = ["--steps", str(steps)] if steps else []
    run(
        [sys.executable, "scripts/train_tiny_reasoner.py", "--setting", setting.name, "--seed", str(seed)]
        + ["--out", str(folder), "--threads", str(threads), *extra]
    )


def generate(setting: Setting, model: Path, folder: Path, limit: int | None) -> None:
    if any(folder.rglob("trac_records/*.jsonl")):
        return
    run(
        ["lm_eval", "--tasks", f"trac_failure_{setting.kind}", "--model", "vllm"]
        + ["--model_args", f"pretrained={model},{ENGINE_ARGS}", "--apply_chat_template"]
        + ["--output_path", str(folder), "--log_samples", *(["--limit", str(limit)] if limit else [])]
    )


JUDGE_NAME = "tiny-reasoner"
"""The cross-model score's judge (docs/method.md#cross-model-score): the shipped tiny reasoner, trained on ``slips``
with no injected error, a second model to every test-bed reasoner but the shipped one itself."""


def judge(folder: Path) -> None:
    if any(folder.rglob(f"trac_judgements/*.{JUDGE_NAME}.jsonl")):
        return
    run(
        [sys.executable, "-m", "trac_tasks.engines.judge", str(folder), "--judge", str(tiny_reasoner.reasoner_path())]
        + ["--name", JUDGE_NAME]
    )


def report(runs: list[Path], out: Path, resamples: int) -> None:
    run(
        [sys.executable, "-m", "trac_metrics.cli", "report", *map(str, runs), "--out", str(out), "--by", "invites"]
        + ["--resamples", str(resamples), "--html", str(out / "report.html")]
    )


def error_profile(settings: dict[str, list[tuple[PairRun, list[str]]]]) -> str:
    """Per setting and error type, then per setting and error made (:func:`pair_errors`): questions (by error type),
    wrong primary answers, the share of those wrong answers that all K samples share (unanimous and wrong: no sampling
    method can see them), and the share the probe re-states unchanged among those it re-stated (agreement on wrong
    answers: a probe that copies shows ≈ 100 %)."""
    by_invites = [
        "| setting | invites | questions | wrong | unanimous among wrong | probe agrees among wrong |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    by_made = [
        "| setting | error made | wrong | unanimous among wrong | probe agrees among wrong |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, pairs in settings.items():
        invited: dict[str, list[dict]] = {}
        made: dict[str, list[dict]] = {}
        for pair, errors in pairs:
            for evidence, error in zip(pair.evidences, errors, strict=True):
                invited.setdefault(str(evidence["metadata"].get("invites")), []).append(evidence)
                if not evidence["correct"]:
                    made.setdefault(error, []).append(evidence)
        for invites, evidences in sorted(invited.items()):
            wrong = [evidence for evidence in evidences if not evidence["correct"]]
            by_invites.append(f"| {name} | {invites} | {len(evidences)} | {len(wrong)} | {_wrong_shares(wrong)} |")
        for error in ERRORS_MADE:
            if error in made:
                by_made.append(f"| {name} | {error} | {len(made[error])} | {_wrong_shares(made[error])} |")
    return "\n".join(by_invites) + "\n\n" + "\n".join(by_made) + "\n"


def _wrong_shares(wrong: list[dict]) -> str:
    """The error profile's two shares of wrong answers: all K samples shared the answer; the probe re-stated it
    unchanged (among the answers it re-stated: no agreement, NaN or missing, is left out)."""
    unanimous = sum(len(set(evidence["answer_classes"])) == 1 for evidence in wrong)
    agreeing = [evidence["agree"] for evidence in wrong if pd.notna(evidence["agree"])]
    return f"{_share(unanimous, len(wrong))} | {_share(sum(value == 1 for value in agreeing), len(agreeing))}"


@functools.cache
def test_rows(kind: str) -> list[dict[str, object]]:
    """The test questions of ``trac_failure_<kind>``, generated as the task's bundled file was (the tests pin the two
    equal), in the order of the task's documents."""
    return held_out_rows(kind, N_TEST, TEST_SEED)


def primary_errors(path: Path) -> dict[str, str]:
    """Per question of a record file, what went wrong in its primary reply (``failure_modes.error_made`` against the
    question's worked solution)."""
    errors = {}
    for record in iter_records(path):
        if record.repeat == 0:
            rows = test_rows(record.task.removeprefix("trac_failure_"))
            errors[str(record.doc_id)] = error_made(rows[int(record.doc_id)], record.generated_text or record.text)
    return errors


def pair_errors(pair: PairRun) -> list[str]:
    """What went wrong in each primary reply of ``pair`` (:func:`primary_errors`), in the order of its questions."""
    errors = {doc: error for path in pair.sources for doc, error in primary_errors(path).items()}
    return [errors[str(evidence["doc_id"])] for evidence in pair.evidences]


def read_settings(runs: dict[str, list[Path]]) -> dict[str, list[tuple[PairRun, list[str]]]]:
    """Per setting, its runs' pairs, each with what went wrong in each primary reply (:func:`pair_errors`): read once
    for :func:`error_cause_rows` and :func:`error_profile`."""
    return {name: [(pair, pair_errors(pair)) for pair in load_pairs(folders, jobs=1)] for name, folders in runs.items()}


def error_cause_rows(settings: dict[str, list[tuple[PairRun, list[str]]]], resamples: int) -> list[dict]:
    """Per setting and error the primary made (:func:`primary_errors`), each method's AUROC and AURC on the right
    answers and the wrong ones of that cause only, with intervals and the difference to SC@8 (modal): which method
    sees which error, whatever the question invited. One dict per row: ``setting``, ``cause``, ``wrong``, ``method``
    and the metrics of :func:`~trac_metrics.reporting.subsets.metrics_on`."""
    rows = []
    for name, pairs in settings.items():
        data = build_report_data([pair for pair, _ in pairs], n_resamples=resamples, seed=0, jobs=1)
        made = [errors for _, errors in pairs]
        methods = [method for method in TABLE_METHODS if method in data.common_methods]
        for cause in ERRORS_MADE:
            masks = [np.asarray([m in ("none", cause) for m in pair], dtype=bool) for pair in made]
            wrong = sum(pair.count(cause) for pair in made)
            if not wrong:
                continue
            measured = metrics_on(data, masks, methods, "sc_modal" if "sc_modal" in methods else None, 0.95)
            rows += [
                {"setting": name, "cause": cause, "wrong": wrong, "method": m, **row} for m, row in measured.items()
            ]
    return rows


def error_causes(rows: list[dict]) -> str:
    """``table.md``'s last table: every row of :func:`error_cause_rows`."""
    lines = [
        "| setting | error made | wrong | method | AUROC [95 % CI] | − SC@8 modal [95 % CI] | AURC [95 % CI] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(f"| {row['setting']} | {row['cause']} | {row['wrong']} | {row['method']} | {_metric_cells(row)}")
    return "\n".join(lines) + "\n"


def accuracies(report: Path, models: list[Path]) -> list[float]:
    """The accuracy of each of ``models`` (in that order) in a report's ``per_pair.csv``, whose pairs are named
    ``<model> / <task> [decoding]`` and sorted by name."""
    frame = pd.read_csv(report / "per_pair.csv")
    values = []
    for model in models:
        rows = frame.index[frame["pair"].str.startswith(f"{model} / ")]
        if len(rows) != 1:
            raise ValueError(f"{report / 'per_pair.csv'}: {len(rows)} pairs of the model {model}, expected one")
        values.append(float(frame.loc[rows[0], "accuracy"]))
    return values


def targeted(
    rows: list[dict], reports: dict[str, Path], seeds: dict[str, list[str]], models: dict[str, list[Path]]
) -> str:
    """``table.md``'s first table (docs/guide/failure-modes.md#measured): per setting, the accuracy of each seed's
    reasoner (:func:`accuracies`), then for each error the setting is built to cause (:data:`TARGETED_ERRORS`) the
    AUROC of :data:`SUMMARY_METHODS` on the right answers and the wrong ones of that cause, and TrAC − SC@8 (modal)
    with its paired interval."""
    lines = [
        "| setting (seeds) | accuracy per seed | error (wrong answers) | "
        + " | ".join(SUMMARY_METHODS)
        + " | TrAC − SC@8 modal [95 % CI] |",
        "| --- " * (len(SUMMARY_METHODS) + 4) + "|",
    ]
    cells = {(row["setting"], row["cause"], row["method"]): row for row in rows}
    for name, folder in reports.items():
        accuracy = ", ".join(f"{value:.2f}" for value in accuracies(folder, models[name]))
        first = True
        for cause in TARGETED_ERRORS[Setting.parse(name).kind]:
            if (name, cause, "trac") not in cells:
                continue
            trac = cells[name, cause, "trac"]
            aurocs = [
                f"{cells[name, cause, m]['auroc']:.3f}" if (name, cause, m) in cells else "—" for m in SUMMARY_METHODS
            ]
            head = f"{name} ({', '.join(seeds[name])}) | {accuracy}" if first else " | "
            lines.append(
                f"| {head} | {cause} ({trac['wrong']}) | " + " | ".join(aurocs) + f" | {_difference_cell(trac)} |"
            )
            first = False
    return "\n".join(lines) + "\n"


def cost_matched(reports: dict[str, Path], seeds: dict[str, list[str]]) -> str:
    """``table.md``'s cost-matched table: per setting, the macro AUROC with its interval of TrAC and of
    self-consistency at K = 2, 4 and 8 (each setting's ``confidence_intervals.csv``), and TrAC's relative latency as
    the records measured it (``leaderboard.csv``)."""
    lines = [
        "| setting (seeds) | TrAC latency × | " + " | ".join(COST_METHODS) + " |",
        "| --- " * (len(COST_METHODS) + 2) + "|",
    ]
    for name, folder in reports.items():
        intervals = pd.read_csv(folder / "confidence_intervals.csv").set_index("method")
        latency = pd.read_csv(folder / "leaderboard.csv").set_index("method").loc["TrAC", "latency ×"]
        aurocs = [_interval(*intervals.loc[m, ["macro AUROC", "AUROC lo", "AUROC hi"]]) for m in COST_METHODS]
        lines.append(f"| {name} ({', '.join(seeds[name])}) | {latency:.2f} | " + " | ".join(aurocs) + " |")
    return "\n".join(lines) + "\n"


def _metric_cells(row: dict) -> str:
    """AUROC with its interval, its difference to SC@8 (modal), and AURC with its interval (lower is better)."""
    auroc, aurc = (_interval(row[m], row[f"{m}_lo"], row[f"{m}_hi"]) for m in ("auroc", "aurc"))
    return f"{auroc} | {_difference_cell(row)} | {aurc} |"


def _difference_cell(row: dict) -> str:
    """The AUROC difference to SC@8 (modal) with its paired interval; empty for SC@8 (modal) itself."""
    if pd.isna(row.get("auroc_minus_reference", float("nan"))):
        return ""
    return _interval(row["auroc_minus_reference"], row["diff_lo"], row["diff_hi"], "+.3f")


def _interval(value: float, lo: float, hi: float, form: str = ".3f") -> str:
    return f"{value:{form}} [{lo:{form}}, {hi:{form}}]"


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%} ({count} of {total})" if total else "—"


def table(reports: dict[str, Path]) -> str:
    """``table.md``: per setting, method and error type, AUROC with its interval, the difference to SC@8 (modal) with
    its paired interval and AURC with its interval, read from each setting's ``by_invites.csv``."""
    lines = [
        "| setting | invites | questions | wrong | method | AUROC [95 % CI] | − SC@8 modal [95 % CI] "
        "| AURC [95 % CI] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, folder in reports.items():
        frame = pd.read_csv(folder / "by_invites.csv")
        for _, row in frame[frame["method"].isin(TABLE_METHODS)].iterrows():
            lines.append(
                f"| {name} | {row['invites']} | {row['questions']} | {row['wrong']} | {row['method']} | "
                + _metric_cells(row.to_dict())
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="the test bed's folder (models, runs, reports)")
    parser.add_argument(
        "--settings",
        nargs="+",
        type=Setting.parse,
        default=[Setting.parse(text) for text in PREREGISTERED_SETTINGS],
        help="KIND:RATE settings (default: the pre-registered ones)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, help="training seeds (default: each setting's pre-registered)")
    parser.add_argument("--steps", type=int, help="training steps (default: the shipped model's)")
    parser.add_argument("--limit", type=int, help="questions per run (default: all 200)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per training (default 1)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of the reports")
    parser.add_argument(
        "--trained-only",
        action="store_true",
        help="train nothing: each setting over its seeds whose model is there (a setting with none is left out)",
    )
    args = parser.parse_args(argv)
    reports, all_runs, seeds_of, models_of = {}, {}, {}, {}
    for setting in args.settings:
        runs, seeds, models = [], [], []
        for seed in args.seeds or preregistered_seeds(setting):
            name = folder_name(setting, seed)
            if setting.kind == "slips" and seed == tiny_reasoner.TRAINING_SEED and not args.steps:
                model = tiny_reasoner.reasoner_path()  # the shipped weights are this setting at this seed
            else:
                model = args.out / "models" / name
                if args.trained_only and not (model / "model.safetensors").is_file():
                    continue
                train(setting, seed, model, args.steps, args.threads)
            generate(setting, model, args.out / "runs" / name, args.limit)
            judge(args.out / "runs" / name)
            runs.append(args.out / "runs" / name)
            seeds.append(str(seed))
            models.append(model)
        if not runs:
            continue
        all_runs[setting.name] = runs
        seeds_of[setting.name], models_of[setting.name] = seeds, models
        reports[setting.name] = args.out / "reports" / setting.name.replace(":", "-")
        report(runs, reports[setting.name], args.resamples)
    if not all_runs:
        parser.error("no setting has a trained model (--trained-only)")
    settings = read_settings(all_runs)
    causes = error_cause_rows(settings, args.resamples)
    measured = "; ".join(f"{name} (seeds {', '.join(seeds)})" for name, seeds in seeds_of.items())
    text = "\n".join(
        [
            f"Measured: {measured}.\n",
            targeted(causes, reports, seeds_of, models_of),
            cost_matched(reports, seeds_of),
            table(reports),
            error_profile(settings),
            error_causes(causes),
        ]
    )
    (args.out / "table.md").write_text(text, encoding="utf-8")
    print(args.out / "table.md")


if __name__ == "__main__":
    main()
