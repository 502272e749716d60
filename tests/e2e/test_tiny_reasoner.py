"""The embedded default end to end: the tiny reasoner on the bundled ``trac_demo`` task through the real
``lm_eval --model vllm`` CLI, as ``scripts/demo.sh`` runs it (100 held-out questions, K = 8, the CPU's dtype).

Its accuracy lies in the band the model card states, its replies are in the thinking format with ``</think>`` read
as a special token from the token ids, its wrong answers come from a slip in the trace, the probe is served from the
prefix cache, TrAC's metrics are finite, and the run's page shades its traces and fits a phone."""

from __future__ import annotations

import math
import warnings

import pytest
from html_browser import check_fits_a_phone, check_ranked_claims, launched, loaded, opened
from lm_eval_runs import LmEvalRun, reasoner_vllm_args, run_lm_eval

from trac_metrics._warnings import TracWarning
from trac_metrics.answers.equivalence import matches_reference
from trac_metrics.cli import main
from trac_metrics.features.cache_share import probe_cache_counts
from trac_metrics.features.evidence import question_evidence
from trac_metrics.features.probe_agreement import format_agreement, probe_agreement
from trac_metrics.records import iter_records
from trac_tasks.data.arithmetic_problems import grade
from trac_tasks.data.demo_data import N_DEMO
from trac_tasks.generation.config import DEFAULT_CUE

pytestmark = pytest.mark.engine

K = 8
LOW_SHARE_TEXT = "of the trace probes' prompt tokens were served from the prefix cache"  # the low-share warning
ACCURACY_BAND = (0.4, 0.8)  # the model card's band for sampled (T = 0.7) answers to held-out questions


def _demo(root, prefix_caching: bool, *extra: str) -> LmEvalRun:
    """``lm_eval --tasks trac_demo --model vllm`` on the tiny reasoner with ``scripts/demo.sh``'s model arguments."""
    return run_lm_eval(root, root, reasoner_vllm_args(prefix_caching=prefix_caching), "vllm", *extra, tasks="trac_demo")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> LmEvalRun:
    return _demo(tmp_path_factory.mktemp("tiny_reasoner"), True)


@pytest.fixture(scope="module")
def records(demo_run) -> list:
    return [record for path in demo_run.record_files("trac_demo") for record in iter_records(path)]


def _right(record) -> bool:
    """The record's label (docs/method.md#labels): its answer matches the reference."""
    return matches_reference(record.answer, record.reference, record.answer_kind)


def test_the_demo_answers_in_the_model_cards_band(demo_run, records):
    results = demo_run.results()["results"]["trac_demo"]
    assert ACCURACY_BAND[0] <= results["acc,none"] <= ACCURACY_BAND[1], results["acc,none"]
    assert len(records) == N_DEMO * K
    primaries = [record for record in records if record.repeat == 0]
    assert results["acc,none"] == pytest.approx(sum(map(_right, primaries)) / N_DEMO)
    for key in ("trac_auroc", "trac_aurc", "trac_ece", "tup_auroc", "sc_modal_auroc"):
        assert math.isfinite(results[f"{key},none"]), key


def test_end_of_thinking_is_the_special_token_in_every_trace_that_has_one(demo_run, records, reasoner_tokenizer):
    marker_id = reasoner_tokenizer.convert_tokens_to_ids("</think>")
    assert marker_id in reasoner_tokenizer.all_special_ids
    assert "end-of-thinking marker '</think>'" in demo_run.log
    closed = [record for record in records if marker_id in record.token_ids.tolist()]
    assert len(closed) >= 0.95 * len(records), "nearly every reply closes its thinking section"
    for record in closed:
        assert record.marker == "</think>"
        after = reasoner_tokenizer.decode(record.token_ids.tolist()[record.token_ids.tolist().index(marker_id) + 1 :])
        assert record.answer is not None and record.answer in after, "the answer is read after the marker"
        assert record.reasoning_tokens < record.num_tokens
        assert record.probes["trace"].appended_text == "</think>\n\nThe final answer is \\boxed{"


def test_wrong_answers_come_from_a_slip_in_the_trace(records, reasoner_tokenizer):
    """Honest mistakes: a wrong reply is well formed, states the value its trace reached, and its trace holds a wrong
    operation (an arithmetic slip carried to the answer), not a formatting failure."""
    wrong = [record for record in records if not _right(record)]
    assert wrong
    verdicts = [grade(int(record.reference), reasoner_tokenizer.decode(record.token_ids.tolist())) for record in wrong]
    well_formed = [verdict for verdict in verdicts if verdict.well_formed]
    assert len(well_formed) >= 0.95 * len(wrong)
    assert sum(verdict.answer_from_trace for verdict in well_formed) >= 0.9 * len(well_formed)
    assert sum(verdict.first_slip is not None for verdict in well_formed) >= 0.6 * len(well_formed)


def test_traces_carry_the_computation_and_the_probe_is_served_from_the_cache(demo_run, records):
    """docs/method.md#probe-cache-share: the results key is the records' share; 32-token blocks serve most of it."""
    hardest = [record.reasoning_tokens for record in records if record.metadata["level"] == 5]
    assert sorted(hardest)[len(hardest) // 2] >= 100, "the 5-step questions' traces are at least 100 tokens long"
    share = demo_run.results()["results"]["trac_demo"]["probe_cached_share,none"]
    assert share == pytest.approx(probe_cache_counts(records).share, abs=1e-12)
    assert share >= 0.8, share
    assert "probe_cached_share" in demo_run.log and LOW_SHARE_TEXT not in demo_run.log


def test_a_run_without_prefix_caching_warns_and_reports_a_share_of_zero(tmp_path):
    run = _demo(tmp_path, False, "--limit", "3")
    assert run.results()["results"]["trac_demo"]["probe_cached_share,none"] == 0.0
    warnings = [line for line in run.log.splitlines() if LOW_SHARE_TEXT in line]
    assert len(warnings) == 1 and "enable_prefix_caching=False" in run.log, run.log[-3000:]
    assert "probe prompts served from the prefix cache 0.0 %" in run.log


def test_every_probe_reads_the_reasoning_then_the_marker_then_the_cue(records, reasoner_tokenizer):
    """The paper's Q(x, r) on the demo (docs/method.md#probe-prompt): every trace probe's prompt is the prompt, the
    reasoning tokens, one marker token and the cue, nothing of the answer written after the marker; the
    restatement-after-the-answer control (the primary only) reads the whole reply."""
    cue = len(reasoner_tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids)
    for record in records:
        probe = record.probes["trace"]
        assert probe.context in ("reasoning", "whole") and probe.context_tokens == record.reasoning_tokens
        assert probe.num_prompt_tokens == record.prompt_token_count + record.reasoning_tokens + 1 + cue
        if record.repeat == 0:
            control = record.probes["after_answer"]
            body = record.num_tokens - (record.finish_reason == "eos")
            assert (control.context, control.context_tokens) == ("after_answer", body)
            assert control.num_prompt_tokens == record.prompt_token_count + body + cue


def test_the_probe_agrees_on_correct_answers_and_summary_prints_the_row(demo_run, records, capsys):
    """docs/method.md#probe-agreement: the cue right after </think> is one of the model's own forms, so the probe
    re-states the answer of a correct response; the row beside the paper's is in the results and in trac summary."""
    primaries = [record for record in records if record.repeat == 0]
    agreement = probe_agreement(question_evidence([record]) for record in primaries)
    assert agreement.correct > 0 and agreement.share_correct >= 0.8, agreement
    results = demo_run.results()["results"]["trac_demo"]
    assert results["probe_agree_correct,none"] == pytest.approx(agreement.share_correct)
    assert results["probe_agree_wrong,none"] == pytest.approx(agreement.share_wrong, nan_ok=True)
    main(["summary", str(demo_run.out)])
    printed = capsys.readouterr().out
    assert f"probe agreement with the primary answer: {format_agreement(agreement.share_correct)} of correct" in printed
    assert "(paper: 87.6 % / 24.7 %)" in printed
    assert "probe agreement with the primary answer" in demo_run.log, "the end-of-task line"


def test_each_answers_tokens_spell_it_and_feed_its_log_probability(records):
    """docs/method.md#answer-token-log-probability: the record's answer_tokens, located on the engine's token ids,
    decode to the extracted answer with the model's own tokenizer."""
    from transformers import AutoTokenizer

    from trac_tasks.data.tiny_reasoner import reasoner_path

    tokenizer = AutoTokenizer.from_pretrained(reasoner_path())
    answered = [record for record in records if record.answer is not None]
    assert answered and all(record.answer_tokens is not None for record in answered)
    for record in answered:
        start, end = record.answer_tokens
        assert tokenizer.decode(record.token_ids[start:end].tolist()).strip() == record.answer
        if record.repeat == 0:
            assert question_evidence([record])["answer_token_logprob"] <= 0


def test_the_demo_page_shades_its_traces_fits_a_phone_and_claims_only_what_its_data_supports(
    demo_run, reasoner_model, reasoner_tokenizer, records, tmp_path
):
    """Issue 47 on the demo's own page, written as ``scripts/demo.sh`` writes it (``--tokenizer`` the model's folder):
    an opened trace is shaded token by token with its end-of-thinking badge, no tab is wider than a 390 px phone, and
    the ranked summary's claims hold under every metric (``check_ranked_claims``: intervals contain their values, no
    constant score first on calibration, "best" only where the paired differences to the leader exclude 0)."""
    html = tmp_path / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracWarning)
        arguments = ["report", str(demo_run.out), "--out", str(tmp_path / "report"), "--html", str(html)]
        main([*arguments, "--tokenizer", str(reasoner_model), "--resamples", "200"])
    first = min((record for record in records if record.repeat == 0), key=lambda record: int(record.doc_id))
    for browser in launched():
        desktop = browser.new_context(offline=True, viewport={"width": 1440, "height": 960})
        with opened(desktop, html.as_uri(), html) as page:
            assert {"auroc", "ece"} <= set(check_ranked_claims(page))
        with opened(desktop, f"{html.as_uri()}#tab=questions&open=0:0", html) as page:
            page.wait_for_selector(loaded("#question-view"), state="attached")
            shown = page.eval_on_selector(
                "#question-view .trace", "box => [...box.querySelectorAll('span[data-i]')].map(s => s.textContent)"
            )
            assert "".join(shown) == reasoner_tokenizer.decode(first.token_ids, skip_special_tokens=False)
            assert len(shown) == first.num_tokens  # one shaded piece per token
            assert page.eval_on_selector_all("#question-view .trace span[class^=s]", "spans => spans.length") > 0
            assert page.locator("#question-view .trace .eot").count() == 1
        desktop.close()
        check_fits_a_phone(browser, html)
