"""The HTML report's data and file, without a browser: the page holds exactly the numbers of ``trac report``'s tables,
selects the confidently wrong questions the records say, keeps every trace compact and faithful, and is one
self-contained file that no record text can break out of."""

from __future__ import annotations

import base64
import gzip
import importlib.metadata
import json
import math
import re
import struct
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from html_report_runs import MARKER, confidently_wrong_from_records, prompt_of, write_tokenized_runs
from run_factory import pair_specs, write_runs
from testenv import REPO

from trac_metrics._warnings import TracWarning
from trac_metrics.answers import answer_classes, equivalent, matches_reference
from trac_metrics.cli import main
from trac_metrics.features.vectors import TAIL_WINDOW
from trac_metrics.records import iter_records
from trac_metrics.reporting.html import primary_trace, write_html_report
from trac_metrics.reporting.html.page import STATIC, json_for_script, render_page
from trac_metrics.reporting.html.page_data import exact, number
from trac_metrics.reporting.html.tokens import (
    TokenizerMismatch,
    TokenPieces,
    TokenTexts,
    parse_tokenizer_specs,
    spec_for,
    trace_pieces,
    unmatched_specs,
)
from trac_metrics.reporting.html.traces import ENTROPY_STEP, SURPRISAL_STEP
from trac_metrics.reporting.model.pairs import top_decile
from trac_metrics.reporting.report_data import build_report_data
from trac_metrics.reporting.report_writer import write_report
from trac_metrics.reporting.runs import load_pairs

MODELS, TASKS, N_QUESTIONS, K = ["model-a", "model-b"], ["task-x", "task-y"], 30, 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer) -> Path:
    root = tmp_path_factory.mktemp("html_runs")
    write_tokenized_runs(root, tiny_tokenizer, MODELS, TASKS, N_QUESTIONS, k=K, samples_for=("model-a",))
    return root


@pytest.fixture(scope="module")
def report(runs: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """The report data of the runs (records read with their traces), its ``trac report`` folder and its page."""
    out = tmp_path_factory.mktemp("html_report")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        data = build_report_data(load_pairs([runs], jobs=1, details=primary_trace), n_resamples=50, jobs=1)
        write_report(data, out / "tables")
        size = write_html_report(data, out / "report.html", {"": str(tiny_model)})
    return data, out, size


def embedded(page: str) -> dict:
    """The page's data, read back as the browser reads it."""
    found = re.search(r'<script type="application/json" id="trac-data">(.*?)</script>', page, flags=re.DOTALL)
    data = json.loads(found.group(1))
    for part in ("figures", "questions"):  # after the script, in their own elements
        assert part not in data
        found = re.search(rf'<script type="application/json" id="trac-{part}">(.*?)</script>', page, flags=re.DOTALL)
        data[part] = json.loads(found.group(1))
    return data


def trace_lines(page: str, pair: int) -> list[str]:
    found = re.search(rf'<script type="text/plain" id="trac-traces-{pair}">(.*?)</script>', page, flags=re.DOTALL)
    return found.group(1).split("\n")


def unpacked(line: str) -> tuple[dict, bytes]:
    """A question's trace line: its header and the bytes after it."""
    payload = gzip.decompress(base64.b64decode(line))
    (length,) = struct.unpack("<I", payload[:4])
    return json.loads(payload[4 : 4 + length]), payload[4 + length :]


def test_the_tables_are_trac_reports_tables_cell_for_cell(report) -> None:
    data, out, _ = report
    page = embedded((out / "report.html").read_text(encoding="utf-8"))
    assert [table["name"] for table in page["tables"]][0] == "leaderboard"
    for table in page["tables"]:
        csv = pd.read_csv(out / "tables" / f"{table['name']}.csv", index_col=list(range(len(table["index"]))))
        labels = [tuple(map(str, label)) if isinstance(label, tuple) else (str(label),) for label in csv.index]
        assert [tuple(row) for row in table["rows"]] == labels, table["name"]
        assert table["columns"] == list(csv.columns), table["name"]
        # a text column (the ranked summary's mark: best, tied with the best, constant score) as text
        text = [i for i, column in enumerate(csv.columns) if not pd.api.types.is_numeric_dtype(csv[column])]
        numeric = [position for position in range(len(csv.columns)) if position not in text]
        assert [[row[i] for i in text] for row in table["values"]] == csv.iloc[:, text].fillna("").values.tolist()
        expected = csv.iloc[:, numeric].to_numpy(dtype=float)
        shown = np.array(
            [[math.nan if row[i] is None else row[i] for i in numeric] for row in table["values"]], float
        ).reshape(expected.shape)
        np.testing.assert_allclose(shown, expected, rtol=1e-12, equal_nan=True, err_msg=table["name"])


def test_every_pair_shows_its_accuracy_and_the_metrics_lm_eval_reported(report) -> None:
    data, out, _ = report
    page = embedded((out / "report.html").read_text(encoding="utf-8"))
    for shown, pair, evaluation in zip(page["pairs"], data.pairs, data.evaluations, strict=True):
        assert (shown["model"], shown["task"], shown["n"], shown["k"]) == (pair.model, pair.task, N_QUESTIONS, K)
        assert shown["accuracy"] == pytest.approx(pair.accuracy)
        for method in page["leaderboard_methods"]:
            value = evaluation.metrics[f"{method}_auroc"]
            assert (shown["metrics"]["auroc"][method] is None) == math.isnan(value)
            if not math.isnan(value):
                assert shown["metrics"]["auroc"][method] == value
                lo, hi = shown["intervals"]["auroc"][method]
                assert lo <= value <= hi or math.isnan(lo)
    assert page["macro"]["auroc"]["trac"]["value"] == data.macro("trac", "auroc")
    assert page["macro"]["auroc"]["trac"]["interval"] == list(data.ci("trac", "auroc"))


def cache_share_by_hand(records: list) -> tuple[float, str]:
    """The share of ``records``' trace-probe prompt tokens served from the cache and ``trac summary``'s line of it."""
    probes = [record.probes["trace"] for record in records]
    cached, prompt = sum(probe.num_cached_tokens for probe in probes), sum(probe.num_prompt_tokens for probe in probes)
    counted = f"{cached} of {prompt} prompt tokens over {len(probes)} probes"
    return cached / prompt, f"probe cache share: {100 * cached / prompt:.1f} % ({counted})"


def test_every_pair_shows_its_probe_cache_share(report, runs: Path) -> None:
    _, out, _ = report
    text = (out / "report.html").read_text(encoding="utf-8")
    page = embedded(text)
    assert [(pair["model"], pair["task"]) for pair in page["pairs"]] == [(m, t) for m in MODELS for t in TASKS]
    for pair in page["pairs"]:
        records = iter_records(next((runs / pair["model"] / "trac_records").glob(f"{pair['task']}.*.jsonl")))
        share, line = cache_share_by_hand(list(records))
        assert pair["probe_cache"] == {"share": pytest.approx(share, rel=1e-12), "line": line, "warning": None}
    assert len({pair["probe_cache"]["line"] for pair in page["pairs"]}) == len(page["pairs"])
    assert '<ul id="report-cache"></ul>' in text


def test_every_pair_shows_its_probe_agreement_counted_by_hand(report, runs: Path) -> None:
    """docs/method.md#probe-agreement: the share of correct and of wrong primaries whose probe answer equals the
    primary answer, counted here from the records with the checker's equivalence."""
    _, out, _ = report
    page = embedded((out / "report.html").read_text(encoding="utf-8"))
    for pair in page["pairs"]:
        path = next((runs / pair["model"] / "trac_records").glob(f"{pair['task']}.*.jsonl"))
        primaries = [record for record in iter_records(path) if record.repeat == 0]
        right = {id(r): matches_reference(r.answer, r.reference, r.answer_kind) for r in primaries}
        agree = {id(r): equivalent(r.answer, r.probes["trace"].answer, r.answer_kind) for r in primaries}
        shares = [
            sum(agree[id(r)] for r in primaries if right[id(r)] == outcome)
            / sum(right[id(r)] == outcome for r in primaries)
            for outcome in (True, False)
        ]
        shown = pair["probe_agreement"]
        assert [shown["correct"], shown["wrong"]] == pytest.approx(shares, rel=1e-12)
        assert "(paper: 87.6 % / 24.7 %)" in shown["line"]


def test_a_pair_below_half_cached_carries_the_warning_and_one_without_counts_says_not_reported(
    capsys, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["low", "unreported"], ["t"], 12, seed=3), k=2, seed=1)
    for model, cached in (("low", 10), ("unreported", None)):
        records = next((root / model / "trac_records").glob("*.jsonl"))
        rows = [json.loads(line) for line in records.read_text().splitlines()]
        for row in rows:
            row["probes"]["trace"]["num_cached_tokens"] = cached
        records.write_text("".join(json.dumps(row) + "\n" for row in rows))
    low, unreported = report_page(capsys, root, tmp_path / "report.html", "--tokenizer", "none")["pairs"]
    share, line = cache_share_by_hand(list(iter_records(next((root / "low" / "trac_records").glob("*.jsonl")))))
    assert low["probe_cache"]["line"] == line and low["probe_cache"]["share"] == pytest.approx(share, rel=1e-12)
    assert share < 0.1
    share = low["probe_cache"]["line"].split(": ")[1].split(" (")[0]
    assert low["probe_cache"]["warning"].startswith(f"trac-eval: low / t: only {share} of the trace probes' prompt")
    assert "enable_prefix_caching=False" in low["probe_cache"]["warning"]
    assert unreported["probe_cache"] == {
        "share": None,
        "line": "probe cache share: not reported (24 probes without a cached-token count)",
        "warning": None,
    }


@pytest.mark.parametrize("method", ["trac", "mean_logprob", "sc_modal"])
def test_the_confidently_wrong_questions_are_those_the_records_give(report, runs: Path, method: str) -> None:
    data, out, _ = report
    page = embedded((out / "report.html").read_text(encoding="utf-8"))
    selected = {
        (pair["model"], pair["task"], questions["doc"][index])
        for pair, questions in zip(page["pairs"], page["questions"], strict=True)
        for index in questions["top_decile"][method]
        if not questions["correct"][index]
    }
    assert selected == confidently_wrong_from_records(runs, method)
    assert selected, "the runs must have a confidently wrong answer for the check to mean something"


def test_the_top_decile_includes_ties_at_the_cut_and_never_a_nan() -> None:
    scores = np.array([0.9, 0.9, 0.8, np.nan, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.05])
    assert np.flatnonzero(top_decile(scores)).tolist() == [0, 1]  # ⌈11 / 10⌉ = 2 → both 0.9s
    assert top_decile(np.array([0.5, 0.5, 0.5])).all()
    assert not top_decile(np.array([np.nan, np.nan])).any()


def test_every_question_carries_its_answers_classes_and_scores(report) -> None:
    data, out, _ = report
    page = embedded((out / "report.html").read_text(encoding="utf-8"))
    for questions, pair, evaluation in zip(page["questions"], data.pairs, data.evaluations, strict=True):
        assert len(questions["doc"]) == len(pair.evidences) == N_QUESTIONS
        for index, evidence in enumerate(pair.evidences):
            assert questions["answers"][index] == evidence["answers"] and len(evidence["answers"]) == K
            assert questions["classes"][index] == answer_classes(evidence["answers"])
            assert questions["probe"][index] == evidence["probe_answer"]
        for method, scores in evaluation.scores.items():
            np.testing.assert_allclose(questions["scores"][method], scores, rtol=1e-5)
            np.testing.assert_allclose(questions["p_correct"][method], evaluation.p_correct[method], rtol=1e-5)


def test_a_trace_is_the_records_tokens_with_one_byte_per_value(report, runs: Path, tiny_tokenizer) -> None:
    data, out, _ = report
    page = (out / "report.html").read_text(encoding="utf-8")
    lines = trace_lines(page, 0)
    pieces = json.loads(gzip.decompress(base64.b64decode(lines[0])))
    assert embedded(page)["pairs"][0]["traces"]["mode"] == "tokens"
    records = [record for record in iter_records(next(runs.glob("model-a/trac_records/task-x.*"))) if not record.repeat]
    prompts = embedded(page)["questions"][0]["prompt"]
    for record, line, prompt in zip(records, lines[1:], prompts, strict=True):
        header, arrays = unpacked(line)
        n = record.num_tokens
        assert header["n"] == n and header["index_bytes"] == 2 and len(arrays) == 4 * n
        indices = np.frombuffer(arrays[: 2 * n], dtype="<u2")
        assert "".join(pieces[i] for i in indices) == tiny_tokenizer.decode(record.token_ids, skip_special_tokens=False)
        surprisal = np.frombuffer(arrays[2 * n : 3 * n], dtype=np.uint8) * SURPRISAL_STEP
        entropy = np.frombuffer(arrays[3 * n :], dtype=np.uint8) * ENTROPY_STEP
        np.testing.assert_allclose(surprisal, -record.token_logprobs, atol=SURPRISAL_STEP / 2 + 1e-6)
        np.testing.assert_allclose(entropy, record.topk_entropy.astype(float), atol=ENTROPY_STEP / 2 + 1e-3)
        marker_ids = tiny_tokenizer.encode(MARKER, add_special_tokens=False)
        found = [i for i in range(n) if record.token_ids[i : i + len(marker_ids)].tolist() == marker_ids]
        assert header["marker"] == found[-1]
        assert prompt == prompt_of("model-a", "task-x", record.doc_id) and "prompt" not in header
        assert header["probe"]["answer"] == record.probes["trace"].answer


def test_per_token_values_travel_only_in_the_compressed_traces(report) -> None:
    data, out, size = report
    page = (out / "report.html").read_text(encoding="utf-8")
    traces = sum(len(line) for index in range(len(data.pairs)) for line in trace_lines(page, index))
    fixed = sum((STATIC / name).stat().st_size for name in ("report.html", "report.css", "report.js"))
    fixed += sum(path.stat().st_size for path in (STATIC / "vendor").glob("uPlot*"))
    questions = sum(len(pair.evidences) for pair in data.pairs)
    # the rest is the page's data: tables (the analyses' among them), figures, every method's and metric's
    # definition, each question's answers, metadata and every evaluated method's score; no per-token value
    # 250 kB: ranked summaries with marks and AUROC, the answer-token heads' rows, the macro risk–coverage curves
    # (100 points per method, whatever the number of questions)
    assert size - traces - fixed < 250_000 + 1_700 * questions
    tokens = sum(trace.token_ids.size for pair in data.pairs for trace in pair.details)
    line_bytes = [len(base64.b64decode(line)) for index in range(len(data.pairs)) for line in trace_lines(page, index)]
    assert sum(line_bytes) < 4 * tokens + 400 * questions  # gzip of 4 bytes per token + the probe and header


def test_a_record_text_cannot_end_the_pages_data(tmp_path: Path) -> None:
    hostile = "</script><script>document.title='pwned'</script><!--"
    data = {"text": hostile, "n": [1.5, None], "figures": [hostile], "questions": [{"prompt": [hostile]}]}
    page = render_page(data, [["", base64.b64encode(b"x").decode()]])
    assert hostile not in page and page.count("</script>") == 5  # data, the script, figures, questions, one trace
    assert embedded(page) == data
    assert json.loads(json_for_script(data)) == data


def test_the_page_fetches_nothing(report) -> None:
    _, out, _ = report
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "default-src 'none'" in page
    assert not re.search(r"""<(script|link|img|iframe)[^>]*\s(src|href)\s*=""", page, flags=re.IGNORECASE)
    assert "@import" not in page and "url(http" not in page
    assert (STATIC / "vendor" / "uPlot.LICENSE").read_text().startswith("The MIT License")


def test_the_same_report_writes_the_same_bytes(report, tmp_path: Path, tiny_model: Path) -> None:
    data, out, _ = report
    write_html_report(data, tmp_path / "again.html", {"": str(tiny_model)})
    assert (tmp_path / "again.html").read_bytes() == (out / "report.html").read_bytes()


def test_without_a_tokenizer_the_trace_is_the_stored_text_and_the_page_says_why(report, tmp_path: Path) -> None:
    data, _, _ = report
    write_html_report(data, tmp_path / "plain.html", {"": "none"})
    page = (tmp_path / "plain.html").read_text(encoding="utf-8")
    shown = embedded(page)["pairs"][0]["traces"]
    assert shown["mode"] == "text" and "--tokenizer none" in shown["note"]
    header, arrays = unpacked(trace_lines(page, 0)[1])
    trace = data.pairs[0].details[0]
    assert header["text"] == trace.text and arrays == b""
    # the offset as the page's script counts (UTF-16 code units): the trace's emoji before the marker counts twice
    assert any(ord(character) > 0xFFFF for character in trace.text[: trace.text.rfind(MARKER)])
    assert trace.text.encode("utf-16-le")[2 * header["marker"] :].decode("utf-16-le").startswith(MARKER)


def test_a_tokenizer_that_does_not_fit_every_trace_is_not_used(tiny_tokenizer) -> None:
    texts = ["The answer is 12.", "", "Then 7 it is."]
    ids = [np.asarray(tiny_tokenizer.encode(text), dtype=np.int32) for text in texts]
    pieces, indices = trace_pieces(TokenTexts(tiny_tokenizer), ids, texts)
    assert ["".join(pieces[i] for i in index) for index in indices] == texts
    # the first trace fits (an empty one fits any tokenizer): every other trace is checked too
    wrong = ["", "Something else entirely.", "Then 7 it is.", "Nor this."]
    with pytest.raises(TokenizerMismatch) as mismatch:
        trace_pieces(TokenTexts(tiny_tokenizer), [ids[1], ids[0], ids[2], ids[0]], wrong, ["a", "b", "c", "d"])
    assert (
        str(mismatch.value)
        == "its decoding of the token ids differs from the stored text on question b and 1 other(s) of 4"
    )
    beyond = np.array([len(tiny_tokenizer) + 5])
    with pytest.raises(TokenizerMismatch) as mismatch:
        trace_pieces(TokenTexts(tiny_tokenizer), [ids[0], beyond], texts[:2])
    assert str(mismatch.value) == f"token id {len(tiny_tokenizer) + 5} is beyond its {len(tiny_tokenizer)} tokens"
    with pytest.raises(TokenizerMismatch, match="token id -1 is negative"):
        trace_pieces(TokenTexts(tiny_tokenizer), [ids[0], np.array([5, -1])], texts[:2])


def test_special_tokens_are_left_out_of_the_text_a_tokenizer_must_reproduce(tiny_tokenizer) -> None:
    """The stored text is what the engine detokenized without special tokens; the pieces still show them."""
    ids = np.asarray(tiny_tokenizer.encode("So x = 3"), dtype=np.int64)
    with_end = np.concatenate([ids, [tiny_tokenizer.eos_token_id]])
    pieces, (index,) = trace_pieces(TokenTexts(tiny_tokenizer), [with_end], ["So x = 3"])
    assert "".join(pieces[i] for i in index) == "So x = 3" + tiny_tokenizer.eos_token


def test_the_page_says_why_a_named_tokenizer_was_not_used(capsys, tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["m"], ["t"], 20, seed=3), k=2, seed=1)  # token ids 0..T-1: not the text's tokens
    target = tmp_path / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(root), "--html", str(target), "--tokenizer", str(tiny_model), "--resamples", "20"])
    shown = embedded(target.read_text(encoding="utf-8"))["pairs"][0]["traces"]
    assert shown["mode"] == "text"
    assert shown["note"] == (
        f"Traces unshaded: tokenizer {str(tiny_model)!r} does not fit m: its decoding of the token ids differs from "
        "the stored text on question 0 and 19 other(s) of 20."
    )


def test_pieces_join_to_the_decoded_text_across_split_characters(tiny_tokenizer) -> None:
    text = "Ünïcode ☕ and 😀😀 split over byte tokens, then </think> done"
    ids = np.asarray(tiny_tokenizer.encode(text, add_special_tokens=False), dtype=np.int32)
    pieces = TokenPieces(TokenTexts(tiny_tokenizer))
    indices = pieces.encode(ids)
    assert len(indices) == len(ids)
    assert "".join(pieces.pieces[i] for i in indices) == text
    assert not any("\ufffd" in piece for piece in pieces.pieces)


def test_a_run_of_split_characters_seen_again_is_decoded_once(tiny_tokenizer) -> None:
    text = "😀 then 😀"
    ids = np.asarray(tiny_tokenizer.encode(text, add_special_tokens=False), dtype=np.int64)
    pieces = TokenPieces(TokenTexts(tiny_tokenizer))
    decoded = counted_decodes(pieces.texts)
    first = pieces.encode(ids)
    assert decoded == [len(set(ids.tolist())), 2]  # one batch of the distinct ids, one of the distinct byte runs
    second = pieces.encode(ids)
    assert np.array_equal(first, second) and "".join(pieces.pieces[i] for i in first) == text
    assert len(decoded) == 2  # nothing decoded again for the second trace


def test_pairs_of_one_tokenizer_share_its_decoded_texts_and_number_their_own_pieces(tiny_tokenizer) -> None:
    shared = TokenTexts(tiny_tokenizer)
    decoded = counted_decodes(shared)
    first_ids = np.asarray(tiny_tokenizer.encode("So x = 3 ☕", add_special_tokens=False), dtype=np.int64)
    second_ids = np.asarray(tiny_tokenizer.encode("Then ☕ again", add_special_tokens=False), dtype=np.int64)
    first, second = TokenPieces(shared), TokenPieces(shared)
    first_index = first.encode(first_ids)
    calls = len(decoded)
    second_index = second.encode(second_ids)
    assert len(decoded) == calls + 1  # the second pair decodes only its ids the first did not have, and no byte run
    assert decoded[-1] == len(set(second_ids.tolist()) - set(first_ids.tolist()))
    assert "".join(first.pieces[i] for i in first_index) == "So x = 3 ☕"
    assert "".join(second.pieces[i] for i in second_index) == "Then ☕ again"
    assert set(second.pieces) == {second.pieces[i] for i in second_index}  # its own list: no piece of the first pair


def counted_decodes(texts: TokenTexts) -> list[int]:
    """The size of each batch ``texts`` hands its tokenizer from now on."""
    decoded: list[int] = []
    original = texts._batch_decode
    texts._batch_decode = lambda runs: decoded.append(len(runs)) or original(runs)
    return decoded


def test_tokenizer_options_name_a_model_or_every_model() -> None:
    assert parse_tokenizer_specs(["tok", "org/m=path/to=tok"]) == {"": "tok", "org/m": "path/to=tok"}
    for bad in (["=tok"], ["m="], ["a", "b"]):
        with pytest.raises(ValueError, match="--tokenizer"):
            parse_tokenizer_specs(bad)


def test_a_tokenizer_named_for_a_model_in_another_case_is_its_own_and_one_for_no_model_is_warned() -> None:
    specs = parse_tokenizer_specs(["qwen/qwen3-8b=/tok/qwen", "org/absent=/tok/x", "/tok/any"])
    assert spec_for("Qwen/Qwen3-8B", specs) == "/tok/qwen"  # hub ids match in any case
    assert spec_for("other/model", specs) == "/tok/any"
    assert unmatched_specs(["Qwen/Qwen3-8B", "other/model"], specs) == ["org/absent"]
    assert spec_for("m", parse_tokenizer_specs(["M=/a", "m=/b"])) == "/b"  # the exact spelling first


def test_trac_report_writes_only_the_page_and_prints_its_path(capsys, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["m"], ["t"], 20, seed=3), k=2, seed=1)
    target = tmp_path / "nested" / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(root), "--html", str(target), "--resamples", "20", "--jobs", "1"])
    out = capsys.readouterr().out
    assert out.startswith(f"HTML report: {target} (") and "## " not in out
    assert target.is_file() and not (tmp_path / "leaderboard.md").exists()
    assert embedded(target.read_text(encoding="utf-8"))["pairs"][0]["traces"]["mode"] == "text"


def cli_error(capsys, *argv: object) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([str(arg) for arg in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    return line


def test_trac_report_refuses_options_that_write_nothing_in_one_line(capsys, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["m"], ["t"], 10, seed=3), k=2, seed=1)
    assert cli_error(capsys, "report", root) == "trac report: nothing to write: give --out DIR, --html FILE or both"
    assert "give --html FILE too" in cli_error(capsys, "report", root, "--out", tmp_path / "o", "--tokenizer", "x")
    html = tmp_path / "r.html"
    assert "expected PATH_OR_ID" in cli_error(capsys, "report", root, "--html", html, "--tokenizer", "=x")
    assert "give --html FILE too" in cli_error(capsys, "report", root, "--out", tmp_path / "o", "--docs-url", "x")
    refused = cli_error(capsys, "report", root, "--html", html, "--docs-url", "javascript:alert(1)")
    assert "give an http://, https:// or file:// address of the docs/ folder" in refused and not html.exists()


def test_the_definitions_link_where_docs_url_says(report, tmp_path: Path) -> None:
    data, out, _ = report
    settings = embedded((out / "report.html").read_text(encoding="utf-8"))["settings"]
    assert settings["docs"] is None  # no link by default: a checkout's docs are raw Markdown
    assert settings["version"] == importlib.metadata.version("trac-eval") and settings["tail_window"] == TAIL_WINDOW
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        write_html_report(data, tmp_path / "shared.html", docs="https://example.org/trac/docs", tail_window=12)
    settings = embedded((tmp_path / "shared.html").read_text(encoding="utf-8"))["settings"]
    assert settings["docs"] == "https://example.org/trac/docs/" and settings["tail_window"] == 12


# ------------------------------------------------------------------ only what the model saw, only code the user ran
def report_page(capsys, root: Path, target: Path, *options: object) -> dict:
    """``trac report ROOT --html TARGET OPTIONS`` in this process; the page's data."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        main(["report", str(root), "--html", str(target), "--resamples", "20", "--jobs", "1", *map(str, options)])
    capsys.readouterr()
    return embedded(target.read_text(encoding="utf-8"))


def test_a_model_without_samples_file_is_shown_no_other_models_prompt(capsys, tmp_path: Path, tiny_tokenizer) -> None:
    """Two models' records in one output folder, a samples file for one: the other's questions have no prompt (the
    page says "prompt not stored"), never the first model's prompt of the same document id."""
    write_tokenized_runs(tmp_path, tiny_tokenizer, ["model-a", "model-b"], ["task-x"], 6, k=2, samples_for=("model-a",))
    output = tmp_path / "model-a"  # one lm-eval output folder holding both models' records
    (tmp_path / "model-b" / "trac_records" / "task-x.2026-01-01T00-00-00.jsonl").rename(
        output / "trac_records" / "task-x.2026-01-02T00-00-00.jsonl"
    )
    data = report_page(capsys, output, tmp_path / "report.html", "--tokenizer", "none")
    assert [pair["model"] for pair in data["pairs"]] == ["model-a", "model-b"]
    prompts = {pair["model"]: questions["prompt"] for pair, questions in zip(data["pairs"], data["questions"])}
    assert prompts["model-a"] == [prompt_of("model-a", "task-x", doc) for doc in range(6)]
    assert prompts["model-b"] == [None] * 6


def test_a_pair_whose_first_trace_is_empty_gets_no_made_up_shading(capsys, tmp_path: Path, tiny_model: Path) -> None:
    """The tokenizer check covers every trace it shades: an empty first trace fits any tokenizer, the others (token
    ids 0..T-1, not the tokens of their text) do not, so the pair is shown as plain text."""
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["m"], ["t"], 12, seed=3), k=2, seed=1)
    records = next(root.glob("m/trac_records/*.jsonl"))
    lines = records.read_text().splitlines()
    first = json.loads(lines[0])
    empty = {"dtype": "<i4", "shape": [0], "b64": ""}
    first.update(text="", token_ids=empty, token_logprobs={**empty, "dtype": "<f4"})
    first.update(topk_entropy={**empty, "dtype": "<f2"}, topk_mean_logprob={**empty, "dtype": "<f2"})
    records.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    shown = report_page(capsys, root, tmp_path / "report.html", "--tokenizer", tiny_model)["pairs"][0]["traces"]
    assert shown["mode"] == "text"
    assert "differs from the stored text on question 1 and 10 other(s) of 12" in shown["note"]


def test_no_tokenizer_is_loaded_by_a_name_the_records_give_unless_asked(
    capsys, tmp_path: Path, tiny_model: Path, tiny_tokenizer
) -> None:
    """Records naming a tokenizer folder as their model: without --tokenizer nothing is loaded and the page says how
    to choose one; --tokenizer-from-records confirms the records' name."""
    from html_report_runs import tokenized
    from record_factory import synthetic_question

    from trac_metrics.records import RecordWriter

    rng = np.random.default_rng(0)
    writer = RecordWriter(tmp_path / "out" / "trac_records" / "t.2026-01-01T00-00-00.jsonl")
    for doc_id in range(8):
        question = synthetic_question(rng, doc_id, doc_id % 2 == 0, k=2, task="t", model=str(tiny_model))
        writer.write_batch([tokenized(record, tiny_tokenizer, rng) for record in question])
    shown = report_page(capsys, tmp_path / "out", tmp_path / "plain.html")["pairs"][0]["traces"]
    assert (
        shown["mode"] == "text"
        and "no tokenizer chosen" in shown["note"]
        and "--tokenizer-from-records" in shown["note"]
    )
    confirmed = report_page(capsys, tmp_path / "out", tmp_path / "shaded.html", "--tokenizer-from-records")
    assert confirmed["pairs"][0]["traces"] == {"mode": "tokens", "tokenizer": str(tiny_model), "note": ""}


EVIL_TOKENIZER = """
from pathlib import Path

Path({marker!r}).write_text("code named by a tokenizer folder ran")
from transformers import PreTrainedTokenizerFast


class EvilTokenizer(PreTrainedTokenizerFast):
    pass
"""


def test_a_tokenizer_that_asks_to_run_its_code_is_refused_without_a_prompt(tmp_path: Path, tiny_model: Path) -> None:
    """A tokenizer folder whose config names its own Python code (auto_map): `trac report`, its stdin answering "y"
    to any question, asks nothing, runs nothing (no marker file), says why in one line and shows plain text."""
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "evil-tokenizer"
    shutil.copytree(tiny_model, folder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    marker = tmp_path / "marker.txt"
    (folder / "evil_tokenizer.py").write_text(EVIL_TOKENIZER.format(marker=str(marker)))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(tokenizer_class="EvilTokenizer", auto_map={"AutoTokenizer": [None, "evil_tokenizer.EvilTokenizer"]})
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    root = tmp_path / "runs"
    write_runs(root, pair_specs(["m"], ["t"], 10, seed=3), k=2, seed=1)
    target = tmp_path / "report.html"
    argv = ["report", root, "--html", target, "--tokenizer", folder, "--resamples", "20", "--jobs", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "trac_metrics.cli", *map(str, argv)],
        input="y\ny\n",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the tokenizer folder's code ran"
    assert "[y/N]" not in done.stdout + done.stderr and "custom code" not in done.stdout + done.stderr
    refusal = [line for line in done.stderr.splitlines() if "asks to run its own code" in line]
    assert len(refusal) == 1 and str(folder) in refusal[0], done.stderr
    shown = embedded(target.read_text(encoding="utf-8"))["pairs"][0]["traces"]
    assert shown["mode"] == "text"
    assert shown["note"] == (
        f"Traces unshaded: the tokenizer of {str(folder)!r} asks to run its own code (auto_map in its "
        "tokenizer_config.json), which trac never runs."
    )


def test_the_tiny_reasoners_own_tokenizer_fits_traces_that_keep_its_think_tokens() -> None:
    """Issue 47: the stored text keeps ``<think>`` / ``</think>`` (special tokens of the tiny reasoner) while the
    end-of-sequence token is dropped; the model's own tokenizer must fit, and a trace it does not write still fails."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(REPO / "trac_tasks" / "data" / "tiny-reasoner")
    stored = "<think> 3 + 4 is 7 </think> The answer is \\boxed{7}"
    ids = np.asarray([*tokenizer.encode(stored), tokenizer.convert_tokens_to_ids("<|im_end|>")], dtype=np.int64)
    assert tokenizer.convert_tokens_to_ids("<think>") in ids  # one id, a special token
    pieces, (index,) = trace_pieces(TokenTexts(tokenizer), [ids], [stored])
    assert "".join(pieces[i] for i in index) == stored + "<|im_end|>"
    # only the special tokens the stored text holds are kept: an end-of-turn token inside the trace is still dropped
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    inside = np.asarray([*tokenizer.encode("<think> a"), end, *tokenizer.encode(" b </think>")], dtype=np.int64)
    trace_pieces(TokenTexts(tokenizer), [inside], ["<think> a b </think>"])
    with pytest.raises(TokenizerMismatch):
        trace_pieces(TokenTexts(tokenizer), [ids], ["<think> 3 + 4 is 8 </think>"])


def test_integers_a_browser_would_round_travel_as_their_digits() -> None:
    """Issue 50: JSON.parse reads 2**53 + 1 as 2**53; the page's data holds such integers as strings, wherever they
    sit in a metadata value, and keeps every other value as it is."""
    huge = 2**53 + 1
    metadata = {"id": huge, "nested": [-huge, 2**53, {"deep": huge}], "flag": True, "share": 0.5, "name": "x"}
    assert exact(metadata) == {
        "id": str(huge),
        "nested": [str(-huge), 2**53, {"deep": str(huge)}],
        "flag": True,
        "share": 0.5,
        "name": "x",
    }
    assert json.loads(json_for_script(exact(metadata)))["id"] == "9007199254740993"
    assert number(np.int64(huge)) == "9007199254740993" and number(np.int64(2**53)) == 2**53
