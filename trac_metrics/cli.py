"""``trac``: command-line access to TrAC results without rerunning a model.

- ``trac summary OUT_DIR [--all]``: accuracy and the headline TrAC / baseline metrics (``--all``: every metric) of
  every task in the newest lm-eval results file under ``OUT_DIR`` (what ``lm_eval ... --output_path OUT_DIR`` wrote),
  with the end-of-thinking marker and the probe cache share of the task's newest records.
- ``trac evaluate RECORDS.jsonl ...``: recompute labels, features and every metric from stored TrAC records
  (``<OUT_DIR>/trac_records/*.jsonl``) with the installed answer normalizer; no model, no lm-eval run.
- ``trac report RUN_DIR... --out DIR``: the paper's tables and figures over every (model, task) pair of the runs;
  ``--html FILE``: the same leaderboard, figures and every question's trace as one self-contained HTML page.
- ``trac rescore RUN_DIR...``: labels, features and metrics under another answer normalizer or TUP configuration,
  and what changed against the default configuration.
- ``trac fit RUN_DIR... --out head.json`` / ``trac score head.json RUN_DIR...``: fit a head (or a baseline's
  calibration map) on some runs (with an abstention threshold chosen on calibration runs), score the records of other
  runs and report the calibration of its probabilities there.

Unusable input (a folder without TrAC records, another record schema, a question stored twice, a malformed head file
or one that does not fit the runs, a request larger than the memory available) ends with a one-line message on
stderr and exit status 2, and so does an output that breaks the one output rule: one that could not be written, an
input of the run, a file another output writes, a link, a path inside ``trac_records/``, a name too long; checked
with every argument before any work, links resolved (docs/guide/reliability.md#one-output-rule). Every file
is written atomically (complete, or the old file left as it was; never over a pipe or a device), and a head file is
data only: a custom ``--equivalence`` is code and comes from the command line alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

from trac_metrics._util.files import Output, atomic_write, check_output
from trac_metrics._util.limits import require_memory
from trac_metrics._warnings import TracWarning
from trac_metrics.answers import ANSWER_KINDS, UNDECIDED_KEY
from trac_metrics.features import LOW_THRESHOLD, N_BINS, TAIL_WINDOW
from trac_metrics.features.cache_share import ProbeCacheCounts, low_share_warning, probe_cache_counts
from trac_metrics.features.evidence import (
    DEFAULT_OPTIONS,
    REASONING_SPAN,
    TUP_SPANS,
    EvidenceOptions,
    task_accuracy,
)
from trac_metrics.features.probe_agreement import (
    AGREE_CORRECT_KEY,
    AGREE_WRONG_KEY,
    LEGACY_PROBE_NOTE,
    agreement_line,
)
from trac_metrics.heads import newton_memory
from trac_metrics.heads.calibration_maps import CALIBRATION_MAPS, DEFAULT_CALIBRATION_MAP
from trac_metrics.heads.saved_heads import (
    DEFAULT_TARGET_RISK,
    fit_online_head,
    format_scores,
    head_feature_names,
    head_options,
    load_head,
    saved_methods,
    score_lines,
    score_pairs,
)
from trac_metrics.methods import saved_head_methods
from trac_metrics.records import AFTER_ANSWER, iter_records
from trac_metrics.reporting.html import primary_trace, write_html_report
from trac_metrics.reporting.html.page import docs_url
from trac_metrics.reporting.html.prompts import readable_samples_files
from trac_metrics.reporting.html.tokens import parse_tokenizer_specs
from trac_metrics.reporting.report_data import BOOTSTRAP_METRICS, build_report_data, report_notes
from trac_metrics.reporting.report_model import build_report_model
from trac_metrics.reporting.report_writer import REPORT_FILES, write_report
from trac_metrics.reporting.rescore import changes_to_json, format_changes, rescore
from trac_metrics.reporting.runs import (
    RECORDS_FOLDER,
    Details,
    PairRun,
    check_labellers,
    evaluate_pairs,
    find_record_files,
    load_pairs,
    with_min_errors,
)
from trac_metrics.reporting.subsets import field_values
from trac_metrics.reporting.summary_table import (
    HEADLINE_TABLES,
    SUMMARY_TABLES,
    format_table,
    method_table,
    probe_cache_line,
)
from trac_metrics.selective import DEFAULT_ECE_BINS
from trac_metrics.selective.bootstrap import bootstrap_memory

T = TypeVar("T")


def newest_results_file(out_dir: Path) -> Path:
    """The most recent ``results_*.json`` lm-eval wrote under ``out_dir`` (it nests one folder per model)."""
    candidates = sorted(out_dir.rglob("results_*.json"), key=lambda path: path.stat().st_mtime)
    if not candidates:
        raise ValueError(f"no lm-eval results_*.json under {out_dir}")
    return candidates[-1]


Tables = Sequence[tuple[str, Sequence[str]]]


def _task_block(task: str, metrics: dict[str, float], tables: Tables = SUMMARY_TABLES) -> str:
    """A task's accuracy line (``acc``, ``maj_acc`` when K > 1, the comparisons that ran out of the work budget when
    the results count them) and its method × metric ``tables`` (title, metric
    names; default every metric, :data:`~trac_metrics.reporting.summary_table.SUMMARY_TABLES`)."""
    accuracy = f"acc = {metrics.get('acc', math.nan):.4f}"
    if "maj_acc" in metrics:
        accuracy += f", majority-vote acc = {metrics['maj_acc']:.4f}"
    if UNDECIDED_KEY in metrics:  # docs/method.md#the-symbolic-work-budget
        accuracy += f", comparisons undecided (work budget ran out, not equivalent) = {metrics[UNDECIDED_KEY]:g}"
    shown = "\n".join(f"{title}:\n{format_table(method_table(metrics, names))}" for title, names in tables)
    if AGREE_CORRECT_KEY in metrics:  # docs/method.md#probe-agreement
        agreement = agreement_line(metrics[AGREE_CORRECT_KEY], metrics.get(AGREE_WRONG_KEY, math.nan))
    else:
        agreement = "probe agreement with the primary answer: not reported (results of an older trac-eval)"
    return f"{task}: {accuracy}\n{agreement}\n{shown}"


def _record_notes(out_dir: Path, task: str) -> str:
    """What the task's newest records say about the run: the end-of-thinking marker it used, its probe cache share
    (docs/method.md#probe-cache-share) and, below 50 %, the warning naming the likely causes; for records whose probe
    read the answer it tests (schema trac-record/1), the note saying so (docs/method.md#probe-agreement)."""
    files = sorted(out_dir.rglob(f"trac_records/{task}.*.jsonl"), key=lambda path: path.stat().st_mtime)
    records = iter_records(files[-1]) if files else iter(())
    first = next(records, None)
    counts = probe_cache_counts(itertools.chain([first], records)) if first is not None else ProbeCacheCounts()
    if first is None or first.marker is None:
        marker = "end-of-thinking marker: not recorded"
    else:
        marker = f"end-of-thinking marker: {first.marker!r}" if first.marker else "end-of-thinking marker: none"
    warning = low_share_warning(f"task {task}", counts)
    trace_probe = first.probes.get("trace") if first is not None else None
    legacy = [f"note: {LEGACY_PROBE_NOTE}"] if trace_probe is not None and trace_probe.context == AFTER_ANSWER else []
    return "\n".join([marker, probe_cache_line(counts), *([warning] if warning else []), *legacy])


def summary(out_dir: Path, tables: Tables = SUMMARY_TABLES) -> str:
    """Every TrAC task of the newest results file under ``out_dir``: accuracy, the method × metric ``tables`` (default
    every metric; ``trac summary`` without ``--all`` shows
    :data:`~trac_metrics.reporting.summary_table.HEADLINE_TABLES`), the end-of-thinking marker its records name and
    their probe cache share."""
    path = newest_results_file(out_dir)
    try:
        payload = json.loads(path.read_text())
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, dict):
        raise ValueError(f"{path}: no 'results' object (not an lm-eval results file)")
    blocks = [f"results: {path}"]
    for task, values in sorted(results.items()):
        metrics = {
            key.split(",")[0]: value for key, value in values.items() if "," in key and isinstance(value, (int, float))
        }
        if "trac_auroc" in metrics:
            blocks.append(f"\n{_task_block(task, metrics, tables)}\n{_record_notes(out_dir, task)}")
    if len(blocks) == 1:
        raise ValueError(f"{path} holds no TrAC task")
    return "\n".join(blocks)


def evaluate_records(paths: Sequence[Path]) -> dict[str, dict[str, float]]:
    """Metrics per task recomputed from record files: lm-eval's per-task numbers for the run that wrote them
    (``acc``, ``maj_acc`` when K > 1, the probe's agreement on correct and wrong responses, and every
    ``<method>_<metric>``) and the comparisons that ran out of the work budget (``undecided_comparisons``). A task
    whose probe read the answer it tests (records of schema trac-record/1) gets a warning saying so
    (docs/method.md#probe-agreement), and so does a task with methods some of its questions lack, left out as the
    report leaves them out (:func:`~trac_metrics.reporting.report_data.report_notes` warns of the baselines; the
    evaluation itself of the heads)."""
    metrics: dict[str, dict[str, float]] = {}
    pairs = load_pairs(paths)
    report_notes(pairs, heads={})
    for pair, evaluation in zip(pairs, evaluate_pairs(pairs), strict=True):
        if pair.task in metrics:
            raise ValueError(
                f"task {pair.task} appears in records of several models or decodings; compare them with `trac report`"
            )
        agreement = pair.probe_agreement
        if agreement.reads_answer:
            warnings.warn(f"task {pair.task}: {LEGACY_PROBE_NOTE}", TracWarning, stacklevel=2)
        metrics[pair.task] = {
            **task_accuracy(pair.evidences),
            **agreement.results(),
            **evaluation.metrics,
            UNDECIDED_KEY: pair.undecided_comparisons,
        }
    return metrics


PROGRESS_LOG_EVERY_S = 30.0
"""Where stderr is not a terminal (a log file, CI), the shortest time between two progress lines."""


def _progress(description: str, unit: str) -> Callable[[Iterable[T]], Iterable[T]]:
    """A tqdm progress bar on stderr; where stderr is not a terminal, a line ``progress: DESCRIPTION: 3/10 UNITs after
    41 s`` when an item arrives at least ``PROGRESS_LOG_EVERY_S`` seconds after the last line (or the start), so that
    a long run is never silent and a short one prints nothing."""

    def wrap(items: Iterable[T]) -> Iterable[T]:
        if sys.stderr.isatty():
            return tqdm(items, desc=description, unit=unit, file=sys.stderr)
        return _logged_progress(items, description, unit)

    return wrap


def _logged_progress(items: Iterable[T], description: str, unit: str) -> Iterator[T]:
    total = f"/{len(items)}" if hasattr(items, "__len__") else ""
    start = last = time.monotonic()
    for done, item in enumerate(items, 1):
        now = time.monotonic()
        if now - last >= PROGRESS_LOG_EVERY_S:
            print(
                f"progress: {description}: {done}{total} {unit}s after {now - start:.0f} s", file=sys.stderr, flush=True
            )
            last = now
        yield item


def _read(
    paths: Sequence[Path],
    options: EvidenceOptions = DEFAULT_OPTIONS,
    jobs: int | None = None,
    details: Details | None = None,
) -> list[PairRun]:
    return load_pairs(paths, progress=_progress("reading records", "file"), options=options, jobs=jobs, details=details)


def _inputs(runs: Sequence[Path], equivalence: str | None = None) -> dict[Path, str]:
    """The files of ``runs`` no output may replace (docs/guide/reliability.md#one-output-rule), each with what it is:
    their record files, lm-eval's samples files (the HTML page reads prompts from them) and results files (``trac
    summary`` reads them) beside the records, and the Python file of a FILE.py:FUNCTION ``equivalence``."""
    records = find_record_files(runs)
    inputs = dict.fromkeys(records, "a record file this command reads")
    inputs.update(dict.fromkeys(readable_samples_files(records), "an lm-eval samples file of the run"))
    outputs = {path.parent.parent for path in records if path.parent.name == RECORDS_FOLDER}
    results = [path for output in sorted(outputs) for path in sorted(output.glob("*/results_*.json"))]
    inputs.update(dict.fromkeys(results, "an lm-eval results file of the run"))
    source = (equivalence or "").rpartition(":")[0]
    if source.endswith(".py"):
        inputs[Path(source)] = "the --equivalence file this command reads"
    return inputs


def _check_outputs(*outputs: Output, inputs: Mapping[Path, str]) -> None:
    """The one output rule (:func:`~trac_metrics._util.files.check_output`) over a command's outputs that are given,
    before any work."""
    check_output([output for output in outputs if output.path is not None], inputs, RECORDS_FOLDER)


def _check_n_bins(n_bins: int, request: str) -> None:
    """Refuse a TUP J whose heads cannot be fitted in the memory available: a cf head has 2·J + 18 features (the
    names of J = 0 plus 2·J bins), at most as many missingness indicators, and an intercept."""
    columns = 2 * (len(head_feature_names("cf", 0)) + 2 * n_bins) + 1
    require_memory(request, newton_memory(columns), f"for TUP with {n_bins} bins (heads on up to {columns} columns)")


def _options(args: argparse.Namespace) -> EvidenceOptions:
    _check_n_bins(args.n_bins, f"--n-bins {args.n_bins}")
    return EvidenceOptions(
        answer_kind=args.answer_kind,
        equivalence=args.equivalence,
        n_bins=args.n_bins,
        tail_window=args.tail_window,
        low_threshold=args.low_threshold,
        re_extract=args.re_extract,
        tup_span=args.tup_span,
    )


def _report(args: argparse.Namespace) -> None:
    if args.out is None and args.html is None:
        raise ValueError("nothing to write: give --out DIR, --html FILE or both")
    if (args.tokenizer or args.tokenizer_from_records) and args.html is None:
        option = "--tokenizer" if args.tokenizer else "--tokenizer-from-records"
        raise ValueError(f"{option} chooses the tokenizer of the HTML report's traces: give --html FILE too")
    if args.docs_url is not None:
        if args.html is None:
            raise ValueError("--docs-url chooses where the HTML report's definitions link: give --html FILE too")
        docs_url(args.docs_url)  # refused before the slow evaluation
    tokenizers = parse_tokenizer_specs(args.tokenizer or [])
    _check_outputs(
        Output("--out", args.out, "folder", parents=True, takes=REPORT_FILES),
        Output("--html", args.html, "file", parents=True, noun="page"),
        inputs=_inputs(args.runs, args.equivalence),
    )
    pairs = _read(args.runs, _options(args), args.jobs, primary_trace if args.html is not None else None)
    check_labellers(pairs, allow_mixed=args.mix_labellers)
    notes = []
    if args.min_errors:
        pairs, note = with_min_errors(pairs, args.min_errors)
        notes += [note] if note else []
    for name in args.by:  # a split that cannot be made is refused before the slow evaluation
        field_values(pairs, name)
    questions = [len(pair.evidences) for pair in pairs]
    # checked before the slow evaluation, with one score column: the least a report bootstraps
    needed = bootstrap_memory(questions, args.resamples, n_columns=1, n_metrics=len(BOOTSTRAP_METRICS))
    require_memory(
        f"--resamples {args.resamples}", needed, f"for {len(pairs)} pair(s) with {sum(questions)} questions in all"
    )
    data = build_report_data(
        pairs,
        n_resamples=args.resamples,
        seed=args.seed,
        progress=_progress("evaluating pairs", "pair"),
        jobs=args.jobs,
        calibration_map=args.calibration_map,
        ece_bins=args.ece_bins,
        extra_notes=notes,
    )
    # every number, once for both outputs
    model = build_report_model(
        data, with_pairs=args.html is not None, classifier_capacity=args.classifier_capacity, by_fields=args.by
    )
    if args.out is not None:
        print(write_report(model, args.out, latex=args.latex))
    if args.html is not None:
        size = write_html_report(
            model,
            args.html,
            tokenizers,
            progress=_progress("writing the HTML report", "pair"),
            tokenizer_from_records=args.tokenizer_from_records,
            tail_window=args.tail_window,
            docs=args.docs_url,
        )
        print(f"HTML report: {args.html} ({size / 1e6:.1f} MB)")


def _rescore(args: argparse.Namespace) -> None:
    options = _options(args)
    changes = rescore(args.runs, options, progress=lambda phase: _progress(f"rescoring: {phase}", "item"))
    print(json.dumps(changes_to_json(changes, options), indent=2) if args.json else format_changes(changes, options))


def _fit(args: argparse.Namespace) -> None:
    if args.target_risk is not None and not args.calibration:
        raise ValueError("--target-risk needs --calibration runs to choose the threshold on")
    _check_outputs(
        Output("--out", args.out, "file"), inputs=_inputs([*args.runs, *(args.calibration or [])], args.equivalence)
    )
    options = _options(args)
    training = _read(args.runs, options)
    calibration = _read(args.calibration, options) if args.calibration else []
    target_risk = (DEFAULT_TARGET_RISK if args.target_risk is None else args.target_risk) if calibration else None
    head = fit_online_head(training, args.method, options, calibration, target_risk, args.calibration_map)
    head.save(args.out)
    metadata = head.metadata
    model = "head" if args.method in saved_head_methods() else f"{args.calibration_map} calibration map"
    message = f"{args.method} {model} fitted on {metadata['training_questions']} questions → {args.out}"
    if metadata["threshold"] is not None:
        message += (
            f"\nabstention threshold {metadata['threshold']:.4f}: calibration coverage "
            f"{metadata['calibration_coverage']:.4f}, risk {metadata['calibration_risk']:.4f} "
            f"(target {metadata['target_risk']:g})"
        )
    print(message)


def _score(args: argparse.Namespace) -> None:
    inputs = {**_inputs(args.runs, args.equivalence), args.head: "the head file this command reads"}
    _check_outputs(Output("--out", args.out, "file"), inputs=inputs)
    head = load_head(args.head)
    options = head_options(head, args.equivalence)
    _check_n_bins(options.n_bins, f"n_bins {options.n_bins} of {args.head}")
    scored = score_pairs(head, _read(args.runs, options))
    if args.out is not None:
        atomic_write(args.out, "".join(json.dumps(line, allow_nan=False) + "\n" for line in score_lines(scored)))
    print(format_scores(head, scored))


def _summary(args: argparse.Namespace) -> None:
    print(summary(args.out_dir, SUMMARY_TABLES if args.all else HEADLINE_TABLES))


def _evaluate(args: argparse.Namespace) -> None:
    metrics = evaluate_records(args.records)
    if args.json:  # a metric that could not be computed (NaN) is null: valid JSON
        print(
            json.dumps(
                {
                    task: {name: value if math.isfinite(value) else None for name, value in values.items()}
                    for task, values in metrics.items()
                },
                indent=2,
                allow_nan=False,
            )
        )
        return
    for task, values in metrics.items():
        print(_task_block(task, values) + "\n")


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def _seed(text: str) -> int:
    """argparse type: a seed, an integer >= 0 (what NumPy's generators take), refused before any work
    (docs/guide/reliability.md#one-output-rule)."""
    return _int_at_least(text, 0)


def _field_name(text: str) -> str:
    """argparse type: a metadata field name (letters, digits, underscores; it names a table file)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a metadata field name (letters, digits and _, at most 64)")
    return text


def _risk(text: str) -> float:
    """argparse type: a target risk in [0, 1), refused before any work (docs/guide/reliability.md#one-output-rule)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a risk in [0, 1), got {text!r}")
    return value


EQUIVALENCE_HELP = (
    "f(answer, other, kind) -> bool replacing the built-in answer equivalence everywhere (labels, "
    "agreement, answer classes): a module on the Python path, or FILE.py:FUNCTION; 'math-verify' for Math-Verify's "
    "default verdict (the math kind)"
)


CALIBRATION_MAP_OPTION = {"choices": CALIBRATION_MAPS, "default": DEFAULT_CALIBRATION_MAP}
"""``--calibration-map``: the form of a baseline's calibration map (docs/method.md#calibration-maps)."""


def _evidence_arguments() -> argparse.ArgumentParser:
    """Options of :class:`~trac_metrics.features.evidence.EvidenceOptions`, shared by ``report``, ``rescore`` and
    ``fit``."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("evidence options (default: the paper's configuration)")
    group.add_argument(
        "--answer-kind",
        choices=ANSWER_KINDS,
        help="normalize and compare answers as this kind instead of the kind stored in the records",
    )
    group.add_argument("--equivalence", metavar="MODULE:FUNCTION", help=EQUIVALENCE_HELP)
    group.add_argument(
        "--re-extract",
        action="store_true",
        help="read each response's answer again from its stored text with the current extractor (a stored 'no "
        "answer' stays)",
    )
    group.add_argument(
        "--n-bins", type=_positive_int, default=N_BINS, metavar="J", help=f"TUP position bins (default {N_BINS})"
    )
    group.add_argument(
        "--tail-window",
        type=_positive_int,
        default=TAIL_WINDOW,
        metavar="W",
        help=f"TUP tail window in tokens (default {TAIL_WINDOW})",
    )
    group.add_argument(
        "--low-threshold",
        type=float,
        default=LOW_THRESHOLD,
        metavar="TAU",
        help=f"TUP low-logprob threshold (default {LOW_THRESHOLD})",
    )
    group.add_argument(
        "--tup-span",
        choices=TUP_SPANS,
        default=REASONING_SPAN,
        help="the tokens TUP profiles: the reasoning body the probe reads (default, the paper's algorithm) or the "
        "whole generation",
    )
    return parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trac", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    summary_command = commands.add_parser("summary", help="accuracy + TrAC metrics of an lm-eval output folder")
    summary_command.add_argument("out_dir", type=Path)
    summary_command.add_argument(
        "--all", action="store_true", help="every metric of every method (default: AUROC, AURC and ECE)"
    )
    summary_command.set_defaults(run=_summary)
    evaluate = commands.add_parser("evaluate", help="recompute metrics from stored TrAC records")
    evaluate.add_argument("records", type=Path, nargs="+")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    evaluate.set_defaults(run=_evaluate)

    evidence_options = _evidence_arguments()
    report = commands.add_parser(
        "report", parents=[evidence_options], help="leaderboard tables and figures over many runs"
    )
    report.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    report.add_argument("--out", type=Path, metavar="DIR", help="write the tables (Markdown, CSV) and figures here")
    report.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write the report as one self-contained HTML page: leaderboard, figures, every question's trace",
    )
    report.add_argument(
        "--tokenizer",
        action="append",
        metavar="[MODEL=]PATH_OR_ID",
        help="the tokenizer that turns a model's token ids into the HTML report's shaded tokens (default: none, "
        "unshaded text; 'none': unshaded text for that model); repeat per model; loaded without running any code",
    )
    report.add_argument(
        "--tokenizer-from-records",
        action="store_true",
        help="load each model's tokenizer (from this machine's files only) by the model name its records give, for "
        "models --tokenizer does not name",
    )
    report.add_argument(
        "--docs-url",
        metavar="URL",
        help="where the HTML report's definitions link: an http(s) or file address of trac-eval's docs/ folder "
        "(default: none; the page shows each definition in place and names its docs section)",
    )
    report.add_argument("--latex", action="store_true", help="also write LaTeX tables")
    report.add_argument(
        "--mix-labellers",
        action="store_true",
        help="compare runs labelled by different labellers (trac-eval's checker, Math-Verify); refused by default",
    )
    report.add_argument("--resamples", type=_positive_int, default=2000, help="bootstrap resamples (default 2000)")
    report.add_argument(
        "--min-errors",
        type=_positive_int,
        metavar="N",
        help="leave out the pairs with fewer than N wrong answers (the paper keeps BBH subtask pairs with >= 15)",
    )
    report.add_argument(
        "--classifier-capacity",
        action="store_true",
        help="add the classifier-capacity table: PCE under random-forest, gradient-boosting and MLP heads beside the "
        "logistic one, in-domain and leave-one-dataset-out (75 more fits a pair; docs/method.md#classifier-capacity)",
    )
    report.add_argument(
        "--by",
        action="append",
        default=[],
        type=_field_name,
        metavar="FIELD",
        help="add a table of every method's AUROC / AURC split by a metadata field of the questions (e.g. "
        "level, invites), with intervals and the paired difference to the reference; repeatable "
        "(docs/method.md#metrics-by-field)",
    )
    report.add_argument("--seed", type=_seed, default=0, help="bootstrap seed, an integer >= 0 (default 0)")
    report.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help="worker processes (default: every CPU; the numbers do not depend on it)",
    )
    report.add_argument(
        "--ece-bins",
        type=_positive_int,
        default=DEFAULT_ECE_BINS,
        metavar="B",
        help=f"equal-mass bins of the ECE and the reliability diagrams (default {DEFAULT_ECE_BINS})",
    )
    report.add_argument(
        "--calibration-map", **CALIBRATION_MAP_OPTION, help="the baselines' calibration maps (default isotonic)"
    )
    report.set_defaults(run=_report)

    rescore_command = commands.add_parser(
        "rescore", parents=[evidence_options], help="recompute labels, features and metrics with changed options"
    )
    rescore_command.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    rescore_command.add_argument("--json", action="store_true", help="print the changes as JSON")
    rescore_command.set_defaults(run=_rescore)

    fit = commands.add_parser("fit", parents=[evidence_options], help="fit a head on runs and save it")
    fit.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    fit.add_argument("--out", type=Path, required=True, metavar="HEAD.json")
    fit.add_argument(
        "--method",
        choices=saved_methods(),
        default="trac",
        help="a head, or a baseline saved as its calibration map",
    )
    fit.add_argument(
        "--calibration-map",
        **CALIBRATION_MAP_OPTION,
        help="the form of a baseline's calibration map (default isotonic)",
    )
    fit.add_argument(
        "--calibration",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="held-out runs on which the abstention threshold is chosen",
    )
    fit.add_argument(
        "--target-risk",
        type=_risk,
        metavar="RISK",
        help=f"risk the threshold must reach on the calibration runs (default {DEFAULT_TARGET_RISK})",
    )
    fit.set_defaults(run=_fit)

    score = commands.add_parser("score", help="score the records of runs with a saved head")
    score.add_argument("head", type=Path, metavar="HEAD.json")
    score.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    score.add_argument("--out", type=Path, metavar="SCORES.jsonl", help="write one JSON line per question")
    score.add_argument(
        "--equivalence",
        metavar="MODULE:FUNCTION",
        help=EQUIVALENCE_HELP + "; required, with the "
        "same spec, when the head was fitted with one (a head file stores the spec as data only)",
    )
    score.set_defaults(run=_score)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (ValueError, OSError) as error:  # unusable records, heads (HeadFormatError), requests, files
        print(f"trac {args.command}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
