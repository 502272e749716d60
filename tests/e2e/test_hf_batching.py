"""End to end with ``lm_eval --model hf --batch_size N`` on the tiny reasoner: TrAC generation and probes batched with
left padding give the records ``--batch_size 1`` gives (docs/architecture.md#hf-backend).

Greedy decoding, K = 1, on prompts of very different lengths (a long preamble before some questions), so every batch
of 4 pads its short prompts by many tokens: padding must never reach a record's tokens, logprobs or answers.
"""

from __future__ import annotations

import math

import pytest
from easy_rows import render
from lm_eval_runs import LOCAL_TASK, REASONER_ROWS, local_rows, run_lm_eval, write_local_math500_task

from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine

TASK = "greedy_batching_local"
N_DOCS, MAX_GEN_TOKS = 6, 12
PREAMBLE = "Read the question carefully, think about every number in it, and check the sum twice. " * 6
LOGPROB_TOLERANCE = 1e-3
"""Float32 on the CPU: a padded batch changes the order of sums in attention, so logprobs agree to rounding."""


def _greedy_task(root):
    """:data:`TASK`: the local MATH-500 task with greedy decoding, K = 1, a probe and teacher forcing on rows whose
    prompts differ by about a hundred tokens."""
    tasks = write_local_math500_task(root, N_DOCS, 1, MAX_GEN_TOKS, rows=REASONER_ROWS)
    rows = local_rows(REASONER_ROWS)[:N_DOCS]
    for index, row in enumerate(rows):
        if index % 3 == 0:
            row["problem"] = PREAMBLE + str(row["problem"])
    data = root / f"{TASK}.jsonl"
    data.write_text(render(rows), encoding="utf-8")
    (tasks / f"{TASK}.yaml").write_text(
        f"""
include: {tasks / (LOCAL_TASK + ".yaml")}
task: {TASK}
dataset_kwargs:
  data_file: {data}
repeats: 1
generation_kwargs:
  until: []
  do_sample: false
  max_gen_toks: {MAX_GEN_TOKS}
  trac:
    answer_kind: math
    reference: "{{{{answer}}}}"
    probe_variants: [trace, teacher_forced]
""",
        encoding="utf-8",
    )
    return tasks


@pytest.fixture(scope="module")
def records_by_batch_size(tmp_path_factory, reasoner_model):
    """Each run's records keyed by document, for ``--batch_size 1`` and ``--batch_size 4``."""
    runs = {}
    for batch_size in (1, 4):
        root = tmp_path_factory.mktemp(f"hf_batch_{batch_size}")
        run = run_lm_eval(
            root,
            _greedy_task(root),
            f"pretrained={reasoner_model},dtype=float32",
            "hf",
            "--device",
            "cpu",
            "--batch_size",
            str(batch_size),
            tasks=TASK,
        )
        (path,) = run.record_files(TASK)
        runs[batch_size] = {str(record.doc_id): record for record in iter_records(path)}
    return runs


def test_batch_4_finds_the_tokens_and_answers_of_batch_1(records_by_batch_size):
    one, four = records_by_batch_size[1], records_by_batch_size[4]
    assert sorted(one) == sorted(four) == [str(doc) for doc in range(N_DOCS)]
    prompt_lengths = {record.prompt_token_count for record in one.values()}
    assert max(prompt_lengths) - min(prompt_lengths) > 50, "the prompts must differ enough to need padding"
    for doc, alone in one.items():
        batched = four[doc]
        assert batched.prompt_token_count == alone.prompt_token_count
        assert batched.token_ids.tolist() == alone.token_ids.tolist(), doc
        assert (batched.answer, batched.text, batched.finish_reason) == (alone.answer, alone.text, alone.finish_reason)
        assert all(
            math.isclose(a, b, abs_tol=LOGPROB_TOLERANCE)
            for a, b in zip(batched.token_logprobs.tolist(), alone.token_logprobs.tolist(), strict=True)
        )
        for variant in ("trace", "teacher_forced"):
            probe, probe_alone = batched.probes[variant], alone.probes[variant]
            assert probe.token_ids.tolist() == probe_alone.token_ids.tolist(), (doc, variant)
            assert probe.answer == probe_alone.answer and probe.num_prompt_tokens == probe_alone.num_prompt_tokens
            assert all(
                math.isclose(a, b, abs_tol=LOGPROB_TOLERANCE)
                for a, b in zip(probe.token_logprobs.tolist(), probe_alone.token_logprobs.tolist(), strict=True)
            )
        # both reuse the generation's cache: the prompt and every generated token whose KV was computed
        # (the rows finish by an end id or at the token limit, never by a stop string, so each holds the same)
        for variant in ("trace", "teacher_forced"):
            shared = batched.probes[variant].num_cached_tokens
            assert shared == alone.probes[variant].num_cached_tokens > alone.prompt_token_count
