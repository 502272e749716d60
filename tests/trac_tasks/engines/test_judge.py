"""The judge of the cross-model score (trac_tasks.engines.judge, docs/method.md#cross-model-score) with a real model,
the shipped tiny reasoner on the CPU: it reads each question's stored prompt and reasoning, scores the primary answer
as an unbatched forward pass does, re-states the trace's own value, and never replaces a judgements file."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features.cross_model import judge_context, judgements_file, read_judgements
from trac_metrics.records import RecordWriter
from trac_metrics.reporting.html.prompts import lm_eval_folder_name
from trac_tasks.data.arithmetic_problems import Difficulty, make_problem
from trac_tasks.data.tiny_reasoner import chat_prompts, reasoner_path
from trac_tasks.engines.judge import judge_items, main

MODEL, TASK = "first/model", "t"
CUE = "\n\nThe final answer is \\boxed{"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Seven questions of the tiny reasoner's kind: the primary's answer is the trace's value (doc 0-2), another
    (3-5), or none (6)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("judged")
    tokenizer = AutoTokenizer.from_pretrained(reasoner_path())
    problems = [make_problem(random.Random(seed), Difficulty(2, 1, 0)) for seed in range(7)]
    prompts = chat_prompts(tokenizer, [problem.question for problem in problems])
    writer = RecordWriter(folder / "trac_records" / f"{TASK}.2026-01-01T00-00-00.jsonl")
    samples = []
    for doc_id, (problem, prompt) in enumerate(zip(problems, prompts, strict=True)):
        answer = None if doc_id == 6 else str(problem.answer if doc_id < 3 else problem.answer + 7)
        (record,) = synthetic_question(np.random.default_rng(doc_id), doc_id, True, k=1, task=TASK, model=MODEL)
        probe = dataclasses.replace(record.probes["trace"], context="reasoning", appended_text="</think>" + CUE)
        text = f"<think>\n{problem.trace}\n</think>{CUE}{answer or ''}"
        writer.write_batch(
            [dataclasses.replace(record, text=text, answer=answer, marker="</think>", probes={"trace": probe})]
        )
        samples.append({"doc_id": doc_id, "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {}}}})
    model_folder = folder / lm_eval_folder_name(MODEL)
    model_folder.mkdir()
    lines = "".join(json.dumps(line) + "\n" for line in samples)
    (model_folder / f"samples_{TASK}_2026-01-01T00-00-00.000000.jsonl").write_text(lines, encoding="utf-8")
    main([str(folder), "--judge", str(reasoner_path()), "--name", "tiny", "--batch", "4"])
    return folder, problems, prompts


def test_the_judge_scores_each_answer_as_an_unbatched_forward_pass_and_restates_the_traces_value(run):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, problems, prompts = run
    judgements = list(read_judgements(judgements_file(folder, TASK, "tiny")))
    assert [judgement.doc_id for judgement in judgements] == list(range(7))
    tokenizer = AutoTokenizer.from_pretrained(reasoner_path())
    model = AutoModelForCausalLM.from_pretrained(reasoner_path(), dtype=torch.float32).eval()
    for judgement, problem, prompt in zip(judgements, problems, prompts, strict=True):
        context = f"{prompt}<think>\n{problem.trace}\n</think>{CUE}"
        answer = "}" if judgement.doc_id == 6 else str(problem.answer if judgement.doc_id < 3 else problem.answer + 7)
        context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([context_ids + answer_ids])).logits[0]
        logprobs = torch.log_softmax(logits, dim=-1)
        expected = np.mean([float(logprobs[len(context_ids) - 1 + i, token]) for i, token in enumerate(answer_ids)])
        assert judgement.answer_logprob == pytest.approx(expected, abs=1e-4)
        assert (
            judgement.answer_tokens == (0 if judgement.doc_id == 6 else len(answer_ids)) and judgement.judge == "tiny"
        )
        assert judgement.agrees == (judgement.doc_id < 3)  # it re-states the trace's value
    right = [j.answer_logprob for j in judgements if j.doc_id < 3]
    wrong = [j.answer_logprob for j in judgements if 3 <= j.doc_id < 6]
    assert judgements[6].answer_logprob < min(wrong) and max(wrong) < min(right)  # no answer: least confident


def test_the_judge_reads_the_trace_probes_context(run):
    folder, problems, prompts = run
    from trac_metrics.records import iter_records

    (path,) = (folder / "trac_records").iterdir()
    record = next(iter_records(path))
    assert judge_context(record, prompts[0]) == f"{prompts[0]}<think>\n{problems[0].trace}\n</think>{CUE}"


def test_an_existing_judgements_file_is_refused_before_any_judging(run, capsys):
    folder, _, _ = run
    before = judgements_file(folder, TASK, "tiny").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        main([str(folder), "--judge", str(reasoner_path()), "--name", "tiny"])
    assert exit_info.value.code == 2 and "delete to judge again" in capsys.readouterr().err
    assert judgements_file(folder, TASK, "tiny").read_bytes() == before


def test_each_run_is_judged_with_the_prompt_it_stored(run, tmp_path):
    """Two runs of one model and task, the second's samples file rendering the questions otherwise and missing one:
    each response's context begins with its own run's prompt, and the question without one is counted, not judged."""
    folder, problems, prompts = run
    first, second = tmp_path / "first", tmp_path / "second"
    for copy in (first, second):
        shutil.copytree(folder / "trac_records", copy / "trac_records")
        shutil.copytree(folder / lm_eval_folder_name(MODEL), copy / lm_eval_folder_name(MODEL))
    (samples,) = (second / lm_eval_folder_name(MODEL)).iterdir()
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["arguments"]["gen_args_0"]["arg_0"] = "Another template. " + line["arguments"]["gen_args_0"]["arg_0"]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines if line["doc_id"] != 2), encoding="utf-8")
    items, skipped = judge_items([first, second])
    assert skipped == 1 and len(items) == 13
    for item in items:
        own = prompts[int(item.doc_id)]
        expected = own if item.output == first else "Another template. " + own
        assert item.context == f"{expected}<think>\n{problems[int(item.doc_id)].trace}\n</think>{CUE}"
    assert {item.output for item in items if item.doc_id == 2} == {first}
