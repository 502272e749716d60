"""The document check of the runner (trac_tasks.generation.runner.validate_documents,
docs/guide/reliability.md#broken-task-yamls-fail-before-generation): the first document a TrAC template or metadata
field fails on is named. The prefix probes' jobs and records through the runner's flow, without an engine
(docs/method.md#prefix-probes)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from trac_metrics.records import ResponseRecord
from trac_tasks.generation.chunk import ChunkState
from trac_tasks.generation.config import DEFAULT_CUE, TracConfig
from trac_tasks.generation.probe import prefix_cut
from trac_tasks.generation.progress import RunProgress
from trac_tasks.generation.runner import ProbeOutput, Trace, TracRunner, validate_documents


class _Request:
    def __init__(self, doc_id: int, doc: dict) -> None:
        self.task_name, self.doc_id, self.doc = "t", doc_id, doc


@pytest.mark.parametrize(
    ("switches", "expected"),
    [
        ({"reference": "{{gold}}"}, "document 1: trac.reference template '{{gold}}'"),
        ({"reference": "{{answer}}", "answer_kind": "{{kind}}"}, "document 1: trac.answer_kind template"),
        ({"reference": "{{answer}}", "metadata_fields": ["topic"]}, "document 1: trac.metadata_fields ['topic']"),
    ],
)
def test_the_first_failing_document_is_named(switches, expected):
    docs = [{"answer": "1", "gold": "1", "kind": "math", "topic": "x"}, {"answer": "2", "kind": "essay"}]
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", **switches}}, "t")
    with pytest.raises(ValueError, match="task t, ") as error:
        validate_documents([_Request(i, doc) for i, doc in enumerate(docs)], [config, config])
    assert expected in str(error.value)


# ------------------------------------------------------------------ prefix probes (docs/method.md#prefix-probes)


class _Sink:
    """Collects the records of each written question."""

    def __init__(self) -> None:
        self.records: list = []

    def write(self, records):
        self.records.extend(records)


class _Runner(TracRunner):
    """The runner's flow without an engine: traces and probe outputs are handed in by the test."""

    def execute(self, chunk):
        raise NotImplementedError


def _flow(tokenizer, marker: str, prompt_ids, body_ids, raw_text, sampling=None, temperature=0.7, **switches):
    """One response (K = 1) with prefix probes at 0.25, 0.5 and 0.75 (or the ``switches`` given) through the runner,
    its request's generation kwargs holding ``sampling`` besides the trac block, generated at ``temperature``: its
    trace, then its jobs' outputs in reverse order (each probe re-states 4); returns the runner's jobs and the
    written record."""
    switches = switches or {"prefix_probes": [0.25, 0.5, 0.75]}
    gen_kwargs = {
        "trac": {"answer_kind": "math", "reference": "{{answer}}", "marker": marker, **switches},
        "temperature": temperature,
        **(sampling or {}),
    }
    config = TracConfig.from_gen_kwargs(gen_kwargs, "t")
    request = SimpleNamespace(task_name="t", doc_id=0, doc={"answer": "4"}, repeats=1, args=("", gen_kwargs))
    runner = _Runner(SimpleNamespace(think_end_token=None), tokenizer, "tiny", 4096, sink=_Sink())
    runner.progress, runner.summaries = RunProgress(1, disable=True), {}
    chunk = ChunkState([request], [0], [config])
    trace = Trace(
        request,
        0,
        config,
        prompt_ids,
        body_ids,
        body_ids,
        raw_text,
        raw_text,
        "length",
        [-0.5] * len(body_ids),
        [[-0.5]] * len(body_ids),
        1.0,
        temperature,
        0.95,
    )
    jobs = runner.trace_finished(chunk, 0, trace)
    answer_ids = tokenizer("4}", add_special_tokens=False).input_ids
    for job in reversed(jobs):
        output = ProbeOutput(
            answer_ids,
            [-0.1] * len(answer_ids),
            [[-0.1]] * len(answer_ids),
            "length",
            len(job.prompt_ids),
            min(32, len(job.prompt_ids)),
            0.01,
        )
        runner.job_finished(chunk, job, output, 0.01)
    (record,) = runner.sink.records
    return runner, jobs, record


def test_every_fraction_gets_a_probe_of_the_trace_cut_before_it_stored_in_fraction_order(tiny_tokenizer):
    encode = lambda text: tiny_tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    decode = lambda ids: tiny_tokenizer.decode(list(ids), skip_special_tokens=True)  # noqa: E731
    text = "We add 2 and 2.\nThat makes 4. So the answer is \\boxed{4}"
    prompt, body = encode("What is 2 + 2?"), encode(text)
    runner, jobs, record = _flow(tiny_tokenizer, "", prompt, body, text)
    cue = encode(DEFAULT_CUE)
    prefix_jobs = [job for job in jobs if job.variant == "prefix"]
    assert [job.variant for job in jobs] == ["trace", "prefix", "prefix", "prefix"]
    for job, fraction in zip(prefix_jobs, (0.25, 0.5, 0.75), strict=True):
        kept = prefix_cut(body, fraction, decode)
        assert (job.fraction, job.trace_tokens, job.kind) == (fraction, kept, "decode")
        assert job.prompt_ids == prompt + body[:kept] + cue and job.appended_text == DEFAULT_CUE
    assert [(p.fraction, p.trace_tokens, p.answer) for p in record.prefix_probes] == [
        (job.fraction, job.trace_tokens, "4") for job in prefix_jobs
    ]
    assert set(record.probes) == {"trace"}
    cached = sum(min(32, len(job.prompt_ids)) for job in prefix_jobs)  # each output says 32 cached tokens (at most all)
    share = 100 * cached / sum(len(job.prompt_ids) for job in prefix_jobs)
    assert f"(prefix probes {share:.1f} %)" in runner.summaries["t"].line()


@pytest.mark.parametrize(
    ("sampling", "temperature", "recorded"),
    [({"top_k": 20}, 0.7, 20), ({"top_k": 20.0}, 0.7, 20), ({"top_k": -1}, 0.7, None), ({}, 0.7, None)]
    + [({"top_k": 20}, 0.0, None)],
)
def test_a_sampling_top_k_that_limits_the_primary_generation_is_recorded(
    tiny_tokenizer, sampling, temperature, recorded
):
    """docs/architecture.md#response-fields: ``decoding.top_k`` beside temperature and top-p, only when it limited the
    sampling (not vLLM's -1 for every token, nor a greedy generation), and the record reads back with it."""
    text = "So the answer is \\boxed{4}"
    encode = lambda text: tiny_tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    _, _, record = _flow(tiny_tokenizer, "", encode("What is 2 + 2?"), encode(text), text, sampling, temperature)
    assert record.decoding.get("top_k") == recorded
    assert {"temperature", "top_p", "probe_temperature"} <= set(record.decoding)
    assert ResponseRecord.from_dict(json.loads(json.dumps(record.to_dict()))).decoding == record.decoding


def test_a_closed_thinking_section_is_cut_in_its_reasoning_and_the_cut_gets_the_marker(tiny_tokenizer):
    encode = lambda text: tiny_tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    thinking, answer = encode("Two and two.\nThat is four.\nCheck: yes"), encode(" The answer is \\boxed{4}")
    marker, opener = encode("</think>"), encode("<think>")
    prompt, body = encode("What is 2 + 2?") + opener, thinking + marker + answer
    _, jobs, record = _flow(tiny_tokenizer, "</think>", prompt, body, "")
    decode = lambda ids: tiny_tokenizer.decode(list(ids), skip_special_tokens=True)  # noqa: E731
    for job in jobs[1:]:  # R = the thinking tokens, not the marker and the answer after it
        assert job.trace_tokens == prefix_cut(thinking, job.fraction, decode)
        assert job.prompt_ids == prompt + thinking[: job.trace_tokens] + marker + encode(DEFAULT_CUE)
        assert job.appended_text == "</think>" + DEFAULT_CUE
    assert len(record.prefix_probes) == 3
    assert [(probe.context, probe.context_tokens) for probe in record.prefix_probes] == [
        ("prefix", job.trace_tokens) for job in sorted(jobs[1:], key=lambda job: job.fraction)
    ]


# ------------------------------------------------------------- the paper's probe Q(x, r) (docs/method.md#probe-prompt)


def _ids(tokenizer):
    return lambda text: tokenizer(text, add_special_tokens=False).input_ids


def test_a_closed_trace_is_probed_on_its_reasoning_then_the_marker_then_the_cue(thinking_tokenizer):
    """Q(x, r): prompt ⊕ the ids before the last marker ⊕ marker ⊕ cue; nothing of the answer written after it."""
    encode = _ids(thinking_tokenizer)
    thinking, marker = encode("Two and two.\nThat is four."), encode("</think>")
    answer = encode("\n\nThe final answer is \\boxed{4}.")
    prompt = encode("What is 2 + 2?") + encode("<think>")
    body = thinking + marker + encode("Wait, maybe five.") + marker + answer  # the last marker counts
    _, jobs, record = _flow(thinking_tokenizer, "</think>", prompt, body, "", probe_variants=["trace"])
    (trace_job,) = jobs
    reasoning = thinking + marker + encode("Wait, maybe five.")
    assert trace_job.prompt_ids == prompt + reasoning + marker + encode(DEFAULT_CUE)
    after_last_marker = trace_job.prompt_ids[len(prompt) + len(reasoning) + len(marker) :]
    assert after_last_marker == encode(DEFAULT_CUE), "no id of the answer section after the last marker"
    assert trace_job.appended_text == "</think>" + DEFAULT_CUE
    probe = record.probes["trace"]
    assert (probe.context, probe.context_tokens) == ("reasoning", len(reasoning))
    assert record.answer == "4" and record.reasoning_tokens == len(reasoning)


def test_an_open_trace_is_probed_whole_then_the_marker_then_the_cue(thinking_tokenizer):
    encode = _ids(thinking_tokenizer)
    prompt, body = encode("What is 2 + 2?") + encode("<think>"), encode("Two and two. That is")
    _, (trace_job,), record = _flow(thinking_tokenizer, "</think>", prompt, body, "", probe_variants=["trace"])
    assert trace_job.prompt_ids == prompt + body + encode("</think>") + encode(DEFAULT_CUE)
    assert (record.probes["trace"].context, record.probes["trace"].context_tokens) == ("whole", len(body))
    assert record.answer is None


def test_a_response_without_thinking_is_cut_before_the_line_that_states_its_answer(tiny_tokenizer):
    encode = _ids(tiny_tokenizer)
    reasoning = "We add 2 and 2.\nThat makes 4.\n"
    text = reasoning + "So the final answer is \\boxed{4}."
    prompt, body = encode("What is 2 + 2?"), encode(text)
    _, (trace_job,), record = _flow(tiny_tokenizer, "", prompt, body, text, probe_variants=["trace"])
    read = trace_job.prompt_ids[len(prompt) : -len(encode(DEFAULT_CUE))]
    assert trace_job.prompt_ids == prompt + read + encode(DEFAULT_CUE)
    assert read == body[: len(read)] and tiny_tokenizer.decode(read) == reasoning
    assert "answer" not in tiny_tokenizer.decode(read) and "boxed" not in tiny_tokenizer.decode(read)
    assert (record.probes["trace"].context, record.probes["trace"].context_tokens) == ("cut_before_answer", len(read))


def test_a_response_without_an_answer_is_probed_whole(tiny_tokenizer):
    encode = _ids(tiny_tokenizer)
    text = "We add two and two and then we"
    prompt, body = encode("What is 2 + 2?"), encode(text)
    _, (trace_job,), record = _flow(tiny_tokenizer, "", prompt, body, text, probe_variants=["trace"])
    assert trace_job.prompt_ids == prompt + body + encode(DEFAULT_CUE)
    assert record.probes["trace"].context == "whole"


def test_the_controls_read_the_question_alone_or_the_whole_reply(thinking_tokenizer):
    """The question-only probe gets the marker for a thinking model; the restatement-after-the-answer control is the
    probe of trac-record/1 records: the whole reply, its answer included, then the cue."""
    encode = _ids(thinking_tokenizer)
    prompt = encode("What is 2 + 2?")
    body = encode("<think>") + encode("Two and two.") + encode("</think>") + encode("The answer is \\boxed{4}.")
    variants = ["trace", "question_only", "after_answer", "teacher_forced"]
    _, jobs, record = _flow(thinking_tokenizer, "</think>", prompt, body, "", probe_variants=variants)
    by_variant = {job.variant: job for job in jobs}
    assert by_variant["question_only"].prompt_ids == prompt + encode("</think>") + encode(DEFAULT_CUE)
    assert by_variant["after_answer"].prompt_ids == prompt + body + encode(DEFAULT_CUE)
    assert by_variant["teacher_forced"].prompt_ids == by_variant["trace"].prompt_ids
    contexts = {name: (probe.context, probe.context_tokens) for name, probe in record.probes.items()}
    reasoning = len(encode("<think>") + encode("Two and two."))
    assert contexts == {
        "trace": ("reasoning", reasoning),
        "teacher_forced": ("reasoning", reasoning),
        "question_only": ("question", 0),
        "after_answer": ("after_answer", len(body)),
    }


def test_a_cue_variant_reads_what_the_trace_probe_reads_with_its_own_cue(thinking_tokenizer):
    """docs/method.md#cue-variants: x ⊕ r ⊕ marker ⊕ the cue with its lead-in reworded; the same context as the trace
    probe, stored under the variant's name."""
    encode = _ids(thinking_tokenizer)
    prompt = encode("What is 2 + 2?")
    body = encode("<think>") + encode("Two and two.") + encode("</think>") + encode("The answer is \\boxed{4}.")
    variants = ["trace", "cue_answer", "cue_therefore"]
    _, jobs, record = _flow(thinking_tokenizer, "</think>", prompt, body, "", probe_variants=variants)
    by_variant = {job.variant: job for job in jobs}
    reasoning = prompt + encode("<think>") + encode("Two and two.") + encode("</think>")
    assert by_variant["trace"].prompt_ids == reasoning + encode(DEFAULT_CUE)
    assert by_variant["cue_answer"].prompt_ids == reasoning + encode("\n\nThe answer is \\boxed{")
    assert by_variant["cue_therefore"].prompt_ids == reasoning + encode("\n\nTherefore, the final answer is \\boxed{")
    assert by_variant["cue_answer"].appended_text == "</think>\n\nThe answer is \\boxed{"
    trace = record.probes["trace"]
    assert all(
        (record.probes[v].context, record.probes[v].context_tokens) == (trace.context, trace.context_tokens)
        for v in variants
    )


def test_a_cue_variant_needs_the_lead_in_it_rewords():
    with pytest.raises(ValueError, match="rewrite the lead-in 'The final answer is'"):
        TracConfig.from_gen_kwargs(
            {
                "trac": {
                    "answer_kind": "mc",
                    "reference": "{{answer}}",
                    "cue": "\n\nAnswer: (",
                    "probe_variants": ["trace", "cue_answer"],
                }
            },
            "t",
        )


def test_the_shuffled_trace_probe_reads_another_questions_reasoning_not_its_answer(thinking_tokenizer):
    """docs/method.md#probe-variants: x ⊕ r' ⊕ marker ⊕ cue, r' the partner's reasoning before its last marker."""
    encode = _ids(thinking_tokenizer)
    config = TracConfig.from_gen_kwargs(
        {"trac": {"answer_kind": "math", "reference": "{{answer}}", "probe_variants": ["trace", "shuffled_trace"]}},
        "t",
    )
    requests = [
        SimpleNamespace(task_name="t", doc_id=doc, doc={"answer": "4"}, repeats=1, args=("", {})) for doc in (0, 1)
    ]
    runner = _Runner(SimpleNamespace(think_end_token=None), thinking_tokenizer, "tiny", 4096, sink=_Sink())
    runner.progress, runner.summaries = RunProgress(2, disable=True), {}
    chunk = ChunkState(requests, [0, 0], [config, config])
    marker = encode("</think>")
    prompts = [encode("What is 2 + 2?<think>"), encode("What is 3 + 1?<think>")]
    reasonings = [encode("Two and two make four."), encode("Three and one make four.")]
    answers = [encode("The answer is \\\\boxed{4}."), encode("So it is \\\\boxed{4}.")]
    jobs = []
    for index, request in enumerate(requests):
        body = reasonings[index] + marker + answers[index]
        trace = Trace(
            request,
            0,
            config,
            prompts[index],
            body,
            body,
            "",
            "",
            "eos",
            [-0.5] * len(body),
            [[-0.5]] * len(body),
            1.0,
            0.7,
            0.95,
        )
        jobs += runner.trace_finished(chunk, index, trace)
    shuffled = {job.index: job for job in jobs if job.variant == "shuffled_trace"}
    assert shuffled[0].prompt_ids == prompts[0] + reasonings[1] + marker + encode(DEFAULT_CUE)
    assert shuffled[1].prompt_ids == prompts[1] + reasonings[0] + marker + encode(DEFAULT_CUE)
    assert (shuffled[0].context, shuffled[0].context_tokens) == ("reasoning", len(reasonings[1]))
