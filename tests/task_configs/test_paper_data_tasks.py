"""The benchmark tasks as the paper ran them (docs/method.md#dataset-sources), checked on the real public copies in
``../shared/real-data``: ``trac_gsm8k_800`` reads the first 800 GSM8K test problems, each ``trac_bbh_<subtask>``
exactly its subtask's rows, and the generated per-subtask YAMLs are the generator's. The real-data tests are skipped
without the copies, except under CI, which lays them beside the clone."""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest
from testenv import REPO

from trac_tasks.data import bbh_subtask_tasks, dataset_loaders
from trac_tasks.generation.config import TracConfig
from trac_tasks.harness.lm_eval_hooks import task_config_dir

REAL_DATA = REPO.parent / "shared" / "real-data"
if not REAL_DATA.is_dir() and os.environ.get("CI"):
    raise FileNotFoundError(f"real benchmark copies not found at {REAL_DATA}")
real_data = pytest.mark.skipif(not REAL_DATA.is_dir(), reason=f"real benchmark copies not found at {REAL_DATA}")


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (REAL_DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_committed_per_subtask_yamls_are_the_generated_ones():
    committed = {path: path.read_text(encoding="utf-8") for path in bbh_subtask_tasks.FOLDER.glob("*.yaml")}
    assert committed == bbh_subtask_tasks.generated()
    assert len(committed) == 28  # 27 subtasks and their group


def test_an_unknown_bbh_subtask_is_refused_naming_the_subtasks():
    with pytest.raises(ValueError, match="BBH subtasks \\['dates'\\] unknown; the subtasks are"):
        dataset_loaders.bbh(subtasks=["dates"])


@pytest.fixture(scope="module")
def manager(tmp_path_factory):
    """lm-eval's TaskManager over the shipped tasks, the hub replaced by the real copies: trac_gsm8k_800 through a local
    task that includes it and reads the real GSM8K file; BBH through a loader that reads the real rows by subtask."""
    import datasets
    from lm_eval.tasks import TaskManager

    root = tmp_path_factory.mktemp("paper_data")
    (root / "tasks").mkdir()
    (root / "tasks" / "trac_gsm8k_800.yaml").write_text(
        f"include: {task_config_dir() / 'trac_gsm8k_800.yaml'}\ntask: trac_gsm8k_800\n"
        "custom_dataset: !function trac_tasks.data.dataset_loaders.local_jsonl\n"
        f"dataset_kwargs:\n  data_file: {REAL_DATA / 'gsm8k.jsonl'}\n",
        encoding="utf-8",
    )
    by_subtask = defaultdict(list)
    for row in rows("bbh.jsonl"):
        by_subtask[row["subtask"]].append({"input": row["input"], "target": row["target"]})

    def real_split(source, name, split):
        return datasets.Dataset.from_list(by_subtask[name])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dataset_loaders, "load_split", real_split)
        patch.setattr(datasets, "load_dataset", lambda *args, **kwargs: pytest.fail(f"the hub was reached: {args}"))
        yield TaskManager(include_path=[task_config_dir(), root / "tasks"], include_defaults=False), by_subtask


@real_data
def test_gsm8k_800_reads_the_first_800_real_test_problems(manager):
    task_manager, _ = manager
    task = task_manager.load("trac_gsm8k_800")["tasks"]["trac_gsm8k_800"]
    docs = list(task.test_docs())
    real = rows("gsm8k.jsonl")
    assert len(real) == 1319 and [doc["question"] for doc in docs] == [row["question"] for row in real[:800]]
    config = TracConfig.from_gen_kwargs(task.config.generation_kwargs, "trac_gsm8k_800")
    assert config.render_reference(docs[0]) == real[0]["answer"].split("####")[-1].strip()


@real_data
@pytest.mark.parametrize("subtask", ["date_understanding", "object_counting", "web_of_lies"])
def test_a_bbh_subtask_task_reads_exactly_its_real_rows(manager, subtask):
    task_manager, by_subtask = manager
    name = f"trac_bbh_{subtask}"
    task = task_manager.load(name)["tasks"][name]
    docs = list(task.test_docs())
    assert [doc["input"] for doc in docs] == [row["input"] for row in by_subtask[subtask]]
    assert {doc["subtask"] for doc in docs} == {subtask} and len(docs) == 250
    config = TracConfig.from_gen_kwargs(task.config.generation_kwargs, name)
    assert [config.render_reference(doc) for doc in docs[:3]] == [
        dataset_loaders.bbh_doc(row, subtask)["answer"] for row in by_subtask[subtask][:3]
    ]


@real_data
def test_the_bbh_subtask_group_holds_the_27_tasks(manager):
    task_manager, by_subtask = manager
    group = task_manager.load(bbh_subtask_tasks.GROUP)["groups"][bbh_subtask_tasks.GROUP]
    names = [task.task_name for task in group.get_all_tasks()]
    assert names == [f"trac_bbh_{subtask}" for subtask in dataset_loaders.BBH_SUBTASKS]
    assert sum(len(found) for found in by_subtask.values()) == 6511
