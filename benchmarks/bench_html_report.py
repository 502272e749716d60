"""Size and speed of ``trac report --html`` on a synthetic run the size of a real one.

Default shape: 3 models × MATH-500 (500 questions) × K = 8 responses × 4,000 generated tokens per response, 2,000
bootstrap resamples; the traces are shaded with the tiny model's tokenizer (SmolLM2, 49,152 tokens), so each token
becomes a text piece as on a real run. The synthetic records are realistic where size and time depend on it: token ids
drawn from a Zipf law over the vocabulary (as words are), the text the tokenizer decodes from them (~4 characters a
token), most token log-probabilities near 0 with a heavy tail, entropies that follow them.

Stages timed (wall and CPU seconds): reading the records with the primary traces kept, the report's evaluation and
bootstrap (``trac report`` does it with or without ``--html``), and writing the HTML (per-pair intervals, paired
differences, token pieces, compression, the file). Then Chromium (Debian's, headless, offline) opens the file, in
``--browser-runs`` fresh browsers (default 3; each timing is their median): the time until the page is interactive
(its script has drawn the leaderboard), the time to list the questions (one page of rows), to the first sorted list (a
click on a column header until the list is sorted) and to open one question's trace. The records are written first
(not timed) and kept with ``--runs DIR`` for a rerun. Each page is written ``--write-rounds`` times (default 3; its
write time is the median), the pages' writes interleaved so both see the same machine load. The last line printed is
one JSON object.

``--scale`` measures a second, larger page in the same run (``--scale-models`` × ``--scale-questions``, default 4 ×
2,500 = 10,000 questions, with the same K, tokens and resamples) and the ratio of its size, write time, time to
interactive and time to the first sorted list to the first page's, and the write-time ratio of each round
(docs/guide/reports.md, "Size and speed").

    python benchmarks/bench_html_report.py [--models 3] [--questions 500] [--k 8] [--tokens 4000]
        [--resamples 2000] [--jobs N] [--runs DIR] [--tokenizer PATH] [--chromium /usr/bin/chromium]
        [--browser-runs 3] [--write-rounds 3] [--scale [--scale-models 4] [--scale-questions 2500]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from trac_metrics.records import ProbeRecord, RecordWriter, ResponseRecord  # noqa: E402
from trac_metrics.reporting.html import primary_trace, write_html_report  # noqa: E402
from trac_metrics.reporting.report_data import build_report_data  # noqa: E402
from trac_metrics.reporting.runs import load_pairs  # noqa: E402
from trac_tasks.data.tiny_model import DEFAULT_DIR  # noqa: E402

TASK = "trac_math500"
STAMP = "2026-01-01T00-00-00"


def timed(stages: dict[str, dict[str, float]], name: str, work: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    stages[name] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    return result


def _token_arrays(rng: np.random.Generator, n: int, vocabulary: np.ndarray) -> dict[str, np.ndarray]:
    ranks = np.minimum(rng.zipf(1.15, n), vocabulary.size) - 1
    logprobs = np.where(rng.random(n) < 0.8, -rng.exponential(0.02, n), -rng.exponential(1.2, n))
    entropy = np.minimum(np.log(5), 0.7 * -logprobs + rng.exponential(0.05, n))
    return {
        "token_ids": vocabulary[ranks],
        "token_logprobs": logprobs,
        "topk_entropy": entropy,
        "topk_mean_logprob": logprobs - rng.uniform(1.0, 4.0, n),
    }


def write_question(
    writer: RecordWriter, rng: np.random.Generator, model: str, doc_id: int, args: argparse.Namespace, decode: Any
) -> None:
    """K records of one question: the primary right with probability 0.6, the others agreeing with it mostly."""
    reference = str(doc_id)
    primary_right = rng.random() < 0.6
    arrays = [_token_arrays(rng, args.tokens, args.vocabulary) for _ in range(args.k)]
    texts = decode([array["token_ids"].tolist() for array in arrays])
    records = []
    for repeat in range(args.k):
        right = primary_right if repeat == 0 else rng.random() < (0.75 if primary_right else 0.35)
        answer = reference if right else str(doc_id + int(rng.integers(1, 4)))
        probe_answer = answer if rng.random() < 0.85 else str(doc_id + 7)
        probe = ProbeRecord(
            variant="trace",
            appended_text="\n\nThe final answer is \\boxed{",
            text=probe_answer + "}",
            answer=probe_answer,
            token_ids=np.arange(3),
            token_logprobs=np.minimum(rng.normal(-0.3, 0.3, 3), 0.0),
            top_logprobs=np.full((3, 5), -4.0),
            answer_token_count=2,
            finish_reason="stop",
            num_prompt_tokens=200 + args.tokens,
            num_cached_tokens=192 + args.tokens,
            context="reasoning",
            context_tokens=args.tokens - 1,
            seconds=0.01,
        )
        records.append(
            ResponseRecord(
                task=TASK,
                doc_id=doc_id,
                repeat=repeat,
                model=model,
                answer_kind="math",
                prompt_token_count=200,
                text=texts[repeat],
                answer=answer,
                reference=reference,
                finish_reason="eos",
                top_k=5,
                probes={"trace": probe},
                num_samples=args.k,
                decoding={"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0},
                timing={"generation_seconds": 0.002 * args.tokens},
                marker="",
                **arrays[repeat],
            )
        )
    writer.write_batch(records)


def write_runs(root: Path, args: argparse.Namespace, tokenizer: Any) -> list[Path]:
    """``root/<shape>/<model>/trac_records/trac_math500.<stamp>.jsonl`` per model, unless already written (the shape:
    models, questions, K and tokens, so runs of several shapes share ``root``)."""
    shape = root / f"{args.models}x{args.questions}x{args.k}x{args.tokens}"
    folders = [shape / f"model-{index}" for index in range(args.models)]
    if all((folder / "trac_records" / f"{TASK}.{STAMP}.jsonl").is_file() for folder in folders):
        return folders
    rng = np.random.default_rng(args.seed)
    if tokenizer is None:
        args.vocabulary = np.arange(50_000, dtype=np.int32)
        words = np.array(["the", "so", "we", "have", "x", "=", "2", "+", "then", "number", "\n"])

        def decode(runs):
            return [" ".join(words[np.asarray(run) % words.size]) for run in runs]
    else:
        args.vocabulary = rng.permutation(len(tokenizer)).astype(np.int32)

        def decode(runs):
            return tokenizer.batch_decode(runs, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    for folder in folders:
        writer = RecordWriter(folder / "trac_records" / f"{TASK}.{STAMP}.jsonl")
        for doc_id in range(args.questions):
            write_question(writer, rng, folder.name, doc_id, args, decode)
    return folders


def page_parts(page: bytes) -> dict[str, int]:
    """Bytes of the page's traces (the per-question lines), its data (the JSON) and the rest (code, style)."""
    traces = sum(map(len, re.findall(rb'<script type="text/plain" id="trac-traces-\d+">(.*?)</script>', page, re.S)))
    data = sum(map(len, re.findall(rb'<script type="application/json" id="trac-[a-z]+">(.*?)</script>', page, re.S)))
    return {"traces": traces, "data": data, "code_and_style": len(page) - traces - data}


def browser_timings(html: Path, chromium: str) -> dict[str, float]:
    """Seconds until the page is interactive (its leaderboard drawn; wall clock from navigation and the page's own
    clock), to list the questions, to sort the list by a column, and to open one question's shaded trace; and the
    page's console errors."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_context(offline=True, viewport={"width": 1500, "height": 1000}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        start = time.perf_counter()
        page.goto(html.as_uri(), timeout=300_000, wait_until="commit")  # not the load event: the file's end
        # selectors, not wait_for_function: the page's Content-Security-Policy forbids the eval it polls with
        page.wait_for_selector("html[data-ready=true]", state="attached", timeout=300_000)
        interactive = time.perf_counter() - start
        page_clock = page.evaluate("window.tracReport.readyAt") / 1000
        start = time.perf_counter()
        page.click("button[data-tab=questions]")
        page.wait_for_selector("#question-list tbody tr")
        listed = time.perf_counter() - start
        start = time.perf_counter()
        page.click("#question-list thead th[data-key=doc] button")
        page.wait_for_selector("#question-list thead th[data-key=doc][aria-sort=descending]", state="attached")
        page.wait_for_selector("#question-list tbody tr")
        first_sorted = time.perf_counter() - start
        start = time.perf_counter()
        page.click("#question-list tbody tr:first-child")
        page.wait_for_selector("#question-view[data-loaded]:not([data-loaded=''])", state="attached")
        opened = time.perf_counter() - start
        browser.close()
    return {
        "interactive_s": interactive,
        "interactive_page_clock_s": page_clock,
        "question_list_s": listed,
        "first_sorted_list_s": first_sorted,
        "open_question_s": opened,
        "console_errors": len(errors),
    }


def prepared(root: Path, args: argparse.Namespace, tokenizer: Any) -> dict[str, Any]:
    """The records of ``args``' shape written under ``root`` (unless there), then read and evaluated (timed)."""
    folders = write_runs(root, args, tokenizer)
    stages: dict[str, dict[str, float]] = {}
    pairs = timed(stages, "read_records", lambda: load_pairs(folders, jobs=args.jobs, details=primary_trace))
    data = timed(
        stages,
        "evaluate_and_bootstrap",
        lambda: build_report_data(pairs, n_resamples=args.resamples, seed=args.seed, jobs=args.jobs),
    )
    record_bytes = sum(path.stat().st_size for folder in folders for path in folder.rglob("*.jsonl"))
    return {"args": args, "data": data, "stages": stages, "record_bytes": record_bytes, "writes": []}


def write_page(run: dict[str, Any], html: Path) -> int:
    """Write ``run``'s page as ``html`` once, adding its wall and CPU seconds to ``run["writes"]``; its size."""
    stages: dict[str, dict[str, float]] = {}
    size = timed(stages, "write_html", lambda: write_html_report(run["data"], html, {"": run["args"].tokenizer}))
    run["writes"].append(stages["write_html"])
    return size


def measured(run: dict[str, Any], html: Path, size: int) -> dict[str, Any]:
    """Every number the benchmark reports for one page (its writes' median), printed as it goes: Chromium opens
    ``html``."""
    args, stages = run["args"], run["stages"]
    stages["write_html"] = {
        name: float(np.median([write[name] for write in run["writes"]])) for name in run["writes"][0]
    }
    parts = page_parts(html.read_bytes())
    opens = [browser_timings(html, args.chromium) for _ in range(args.browser_runs)]
    browser = {name: float(np.median([timings[name] for timings in opens])) for name in opens[0]}
    browser["console_errors"] = sum(timings["console_errors"] for timings in opens)
    per_token = size / (args.models * args.questions * args.tokens)
    print(f"— {args.models} models × {args.questions} questions = {args.models * args.questions:,} questions")
    records = run["record_bytes"] / 1e6
    print(f"records {records:.0f} MB → HTML {size / 1e6:.1f} MB ({per_token:.2f} bytes per primary token)")
    print(", ".join(f"{name} {count / 1e6:.2f} MB" for name, count in parts.items()))
    for name, stage in stages.items():
        print(f"{name:<26}{stage['wall_s']:>10.2f} s wall{stage['cpu_s']:>10.2f} s cpu")
    for name, value in browser.items():
        print(f"browser {name:<26}{value:>10.2f}")
    return {
        "models": args.models,
        "questions": args.questions,
        "k": args.k,
        "tokens_per_response": args.tokens,
        "resamples": args.resamples,
        "record_megabytes": run["record_bytes"] / 1e6,
        "html_megabytes": size / 1e6,
        "html_bytes_per_primary_token": per_token,
        "html_parts_megabytes": {name: count / 1e6 for name, count in parts.items()},
        "stages": stages,
        "write_rounds": run["writes"],
        "browser": browser,
    }


def scale_ratios(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    """The large page's size, write time, time to interactive and to the first sorted list over the small page's;
    size and write time also per question (the file carries every question's trace, so its whole size grows with
    the questions: per question it should not)."""
    questions = (large["models"] * large["questions"]) / (small["models"] * small["questions"])
    size = large["html_megabytes"] / small["html_megabytes"]
    write = large["stages"]["write_html"]["wall_s"] / small["stages"]["write_html"]["wall_s"]
    return {
        "questions": questions,
        "html_megabytes": size,
        "html_megabytes_per_question": size / questions,
        "write_html_s": write,
        "write_html_s_per_question": write / questions,
        "interactive_s": large["browser"]["interactive_s"] / small["browser"]["interactive_s"],
        "first_sorted_list_s": large["browser"]["first_sorted_list_s"] / small["browser"]["first_sorted_list_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4000, help="generated tokens per response")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--jobs", type=int, help="processes (default: every CPU)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=Path, help="keep the synthetic records here (reused when present)")
    parser.add_argument("--tokenizer", default=str(DEFAULT_DIR), help="tokenizer folder ('none': unshaded text)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--browser-runs", type=int, default=3, help="fresh browsers per page; timings are medians")
    parser.add_argument("--write-rounds", type=int, default=3, help="writes of each page, interleaved; the median")
    parser.add_argument("--scale", action="store_true", help="also the larger page, and its ratios to the first")
    parser.add_argument("--scale-models", type=int, default=4)
    parser.add_argument("--scale-questions", type=int, default=2500)
    args = parser.parse_args()

    tokenizer = None
    if args.tokenizer != "none":
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer, local_files_only=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.runs or Path(tmp) / "runs"
        pages = [(prepared(root, args, tokenizer), Path(tmp) / "report.html")]
        if args.scale:
            shape = argparse.Namespace(**{**vars(args), "models": args.scale_models, "questions": args.scale_questions})
            pages.append((prepared(root, shape, tokenizer), Path(tmp) / "report_large.html"))
        for _ in range(args.write_rounds):  # interleaved: both pages see the same machine load
            sizes = [write_page(run, html) for run, html in pages]
        results = [measured(run, html, size) for (run, html), size in zip(pages, sizes)]
        result = results[0]
        if args.scale:
            result["scale"] = results[1]
            result["scale_ratios"] = scale_ratios(result, result["scale"])
            rounds = [
                large["wall_s"] / small["wall_s"] for small, large in zip(pages[0][0]["writes"], pages[1][0]["writes"])
            ]
            result["scale_write_rounds"] = rounds
            ratios = ", ".join(f"{name} {ratio:.2f}" for name, ratio in result["scale_ratios"].items())
            print(f"large / small: {ratios} (write rounds: {', '.join(f'{ratio:.2f}' for ratio in rounds)})")
    result["peak_rss_megabytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["cpu_count"] = os.cpu_count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
