"""lm-eval's own flags with TrAC tasks (docs/guide/reliability.md#lm-eval-flags), through lm-eval's real Python
entry point ``simple_evaluate`` (what ``lm_eval`` calls) on the tiny reasoner's real HF backend, loaded once.

Each flag is either honoured (``--samples``: records name the dataset index lm-eval's samples file gives; list
targets: the aliases stored, any matching; ``--system_instruction``, ``--seed``) or refused before anything is
generated, naming the flag (``--cache_requests``, K greedy samples, a per-task label mapping naming no task, a
records folder that cannot be written).
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import pytest
from lm_eval_runs import LOCAL_TASK, REASONER_ROWS, write_local_math500_task, write_plain_task, write_variant_task

from trac_metrics.answers import equivalent
from trac_metrics.features.evidence import EvidenceOptions, question_evidence
from trac_metrics.records import iter_records

pytestmark = pytest.mark.engine

N_ROWS, K = 6, 2
ALIAS_TASK = "aliases_local"
ALIAS_ROWS = [
    {"question": "How many legs has a spider?", "aliases": ["8", "eight", "8.0"]},
    {"question": "What is two plus two?", "aliases": ["4", "four"]},
    {"question": "Name the colour of the sky.", "aliases": ["blue"]},
]


@pytest.fixture(scope="module")
def model(reasoner_model):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(reasoner_model), dtype="float32", device="cpu", batch_size=4)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("flags")
    folder = write_local_math500_task(root, N_ROWS, K, max_gen_toks=12, rows=REASONER_ROWS)
    write_variant_task(folder, "greedy_local", 12, sampling_extra="  temperature: 0")
    data = root / "aliases.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ALIAS_ROWS), encoding="utf-8")
    write_plain_task(folder, ALIAS_TASK, data, "Q: {{question}}\\nA:", "{{aliases}}", max_gen_toks=8)
    return folder


@functools.cache
def task_manager(tasks: Path, metadata: str):
    """lm-eval's index of its tasks and ``tasks`` with the ``metadata`` (JSON), built once (indexing every lm-eval
    task takes seconds)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(tasks), metadata=json.loads(metadata))


def evaluate(model, tasks: Path, out: Path, names: list[str], **flags):
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker

    metadata = flags.pop("metadata", None)
    return simple_evaluate(
        model=model,
        tasks=names,
        task_manager=task_manager(tasks, json.dumps(metadata)),
        metadata=metadata,
        evaluation_tracker=EvaluationTracker(output_path=str(out)),
        log_samples=True,
        **flags,
    )


def records_of(out: Path, task: str) -> list:
    return [record for path in sorted((out / "trac_records").glob(f"{task}.*.jsonl")) for record in iter_records(path)]


def test_records_of_a_samples_selection_name_the_dataset_index_of_lm_evals_samples_file(model, tasks, tmp_path):
    selection = [1, 4]
    results = evaluate(model, tasks, tmp_path, [LOCAL_TASK], samples={LOCAL_TASK: selection})
    records = records_of(tmp_path, LOCAL_TASK)
    assert sorted({record.doc_id for record in records}) == selection
    logged = {sample["doc_id"]: sample["doc"]["unique_id"] for sample in results["samples"][LOCAL_TASK]}
    assert sorted(logged) == selection
    for record in records:  # the record's question is the samples file's question of that doc_id
        assert record.metadata["unique_id"] == logged[record.doc_id]


def test_list_targets_are_stored_as_aliases_and_any_alias_labels(model, tasks, tmp_path):
    switch = {"trac": {"repeats": 1, "answer_kind": "text"}}
    results = evaluate(model, tasks, tmp_path, [ALIAS_TASK], metadata=switch)
    records = sorted(records_of(tmp_path, ALIAS_TASK), key=lambda record: record.doc_id)
    assert [record.reference for record in records] == [tuple(row["aliases"]) for row in ALIAS_ROWS[:2]] + ["blue"]
    by_doc = {sample["doc_id"]: sample for sample in results["samples"][ALIAS_TASK] if sample["filter"] == "none"}
    for record in records:
        assert record.label == bool(by_doc[record.doc_id]["exact_match"]), "labels are lm-eval's own scoring"
        # re-labelled offline, the answer is compared with every alias, not with the list's repr
        relabelled = question_evidence([record], EvidenceOptions(answer_kind="text"))["correct"]
        aliases = ALIAS_ROWS[record.doc_id]["aliases"]
        assert relabelled == int(any(equivalent(record.answer, alias, kind="text") for alias in aliases))


def test_a_system_instruction_reaches_the_prompt_the_records_count_and_write_out_changes_nothing(
    model, tasks, tmp_path, caplog
):
    evaluate(model, tasks, tmp_path / "plain", [LOCAL_TASK], samples={LOCAL_TASK: [0]})
    instruction = "Be brief."
    with caplog.at_level(logging.INFO):
        flags = {"system_instruction": instruction, "write_out": True}
        evaluate(model, tasks, tmp_path / "told", [LOCAL_TASK], samples={LOCAL_TASK: [0]}, **flags)
    assert instruction in caplog.text, "--write_out logs the prompt, the instruction in it"
    plain, told = records_of(tmp_path / "plain", LOCAL_TASK), records_of(tmp_path / "told", LOCAL_TASK)
    assert [record.repeat for record in told] == [0, 1] and [record.doc_id for record in told] == [0, 0]
    assert told[0].prompt_token_count > plain[0].prompt_token_count


def test_the_same_seed_draws_the_same_samples_and_another_seed_others(model, tasks, tmp_path):
    # at T = 2 without a nucleus: the reasoner copies a question's first line with near certainty at T = 0.7, so two
    # seeds could draw the same 12 tokens there
    flat = "temperature=2.0,top_p=1.0"

    def token_ids(out: Path, seed: int) -> list[list[int]]:
        seeds = {"random_seed": seed, "torch_random_seed": seed}
        evaluate(model, tasks, out, [LOCAL_TASK], samples={LOCAL_TASK: [0, 1]}, gen_kwargs=flat, **seeds)
        return [record.token_ids.tolist() for record in sorted(records_of(out, LOCAL_TASK), key=lambda r: r.key)]

    first = token_ids(tmp_path / "a", 7)
    assert token_ids(tmp_path / "b", 7) == first
    assert token_ids(tmp_path / "c", 8) != first


@pytest.mark.parametrize(
    ("names", "flags", "message"),
    [
        ([LOCAL_TASK], {"cache_requests": True}, "cannot run with --cache_requests"),
        (["greedy_local"], {}, "task greedy_local: K = 2 greedy samples would be identical"),
        (
            [ALIAS_TASK],
            {"metadata": {"trac": {"label_filter": {"aliases": "none"}}}},
            f"trac.label_filter names ['aliases'], which are not tasks of this run: ['{ALIAS_TASK}']",
        ),
    ],
    ids=["cache_requests", "greedy K > 1", "label mapping naming no task"],
)
def test_flags_that_would_change_what_a_record_means_are_refused_before_generation(
    model, tasks, tmp_path, names, flags, message
):
    with pytest.raises(ValueError) as refused:
        evaluate(model, tasks, tmp_path, names, **flags)
    assert message in str(refused.value)
    assert not list(tmp_path.rglob("*.jsonl")), "nothing may be generated"


@pytest.mark.parametrize("output_path", ["/proc/trac-eval-out", "/sys/trac-eval-out"], ids=["virtual", "read-only"])
def test_a_records_folder_that_cannot_be_written_is_refused_before_generation(model, tasks, output_path):
    with pytest.raises(ValueError) as refused:
        evaluate(model, tasks, Path(output_path), [LOCAL_TASK])
    assert f"write their records to {output_path}/trac_records, which cannot be written" in str(refused.value)
