"""The benchmark task YAMLs (docs/method.md#benchmarks-and-datasets) load through lm-eval's real TaskManager on local
rows in each hub dataset's exact schema (docs/method.md#dataset-sources), render their prompts and references, and label
right and wrong answers correctly.

Every local task includes the real YAML by absolute path and only swaps its data source, under the real task name:
a TaskManager over ``[task_configs, local folder]`` lets the local folder override the package's tasks, so the
``trac_math`` group is loaded as shipped. No test reaches the hub: ``datasets.load_dataset`` is replaced by a
function that fails.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from lm_eval_runs import GUIDE_TEMPLATE_PATH, guide_example_blocks
from record_factory import synthetic_task

from trac_metrics.answers import equivalent, extract_answer, normalize_answer
from trac_metrics.features.evidence import question_evidence
from trac_metrics.heads.evaluate import evaluate_task
from trac_tasks.data import dataset_loaders
from trac_tasks.generation.config import TracConfig
from trac_tasks.harness.lm_eval_hooks import task_config_dir

SOLVE = "Solve the following problem step by step. End your response with the final answer in \\boxed{}."
CHOOSE = (
    "Solve the following multiple-choice problem step by step. End your response with the letter of the correct "
    "option in \\boxed{}."
)
MATH_TASKS = ["trac_gsm8k", "trac_math500", "trac_minerva", "trac_olympiadbench", "trac_aime"]


@dataclass(frozen=True)
class Doc:
    """What one local row must become: text in its prompt, instruction, reference, answer kind, and a right and a
    wrong final answer as a model would box them."""

    problem: str
    reference: str
    right: str
    wrong: str
    kind: str = "math"
    instruction: str = SOLVE


@dataclass(frozen=True)
class Case:
    task: str
    files: dict[str, list[dict]]  # data file name (relative to the case's folder) -> rows in the hub schema
    data_source: str  # YAML lines that replace the hub source; {data} is the case's data folder
    docs: list[Doc]


def local_jsonl_source(file_name: str, split: str = "test") -> str:
    return (
        f"custom_dataset: !function trac_tasks.data.dataset_loaders.local_jsonl\n"
        f"dataset_kwargs:\n  data_file: {{data}}/{file_name}\n  split: {split}\n"
    )


AIME24_ROWS = [  # Maxwell-Jia/AIME_2024: ID, Problem, Solution, Answer (an int)
    {
        "ID": "2024-I-1",
        "Problem": "Every morning Aya goes for a 9-kilometer-long walk. Find the number of minutes.",
        "Solution": "... so the walk takes 204 minutes.",
        "Answer": 204,
    },
    {
        "ID": "2024-II-4",
        "Problem": "Let x, y and z be positive real numbers. Find m+n.",
        "Solution": "... giving 33.",
        "Answer": 33,
    },
]
AIME25_ROWS = [  # math-ai/aime25: id, problem, answer (a string)
    {
        "id": "0",
        "problem": "Find the sum of all integer bases b > 9 for which 17_b is a divisor of 97_b.",
        "answer": "70",
    },
]
AIME24_DOCS = [Doc("9-kilometer-long walk", "204", "204", "240"), Doc("positive real numbers", "33", "33.0", "34")]
AIME25_DOCS = [Doc("integer bases b > 9", "70", "70", "7")]

GPQA_ROWS = [  # Idavidrein/gpqa, gpqa_diamond
    {
        "Question": "Which particle mediates the electromagnetic force?\n",
        "Correct Answer": "the photon",
        "Incorrect Answer 1": "the gluon",
        "Incorrect Answer 2": "the W boson",
        "Incorrect Answer 3": "the graviton",
        "Explanation": "QED.",
        "Record ID": "rec06pnAkLOr2t2mp",
        "High-level domain": "Physics",
        "Subdomain": "Particle physics",
    },
    {
        "Question": "What is the oxidation state of Mn in KMnO4?",
        "Correct Answer": "+7",
        "Incorrect Answer 1": "+5",
        "Incorrect Answer 2": "+2",
        "Incorrect Answer 3": "+4",
        "Explanation": "K is +1, O is -2.",
        "Record ID": "recZ13cwgDQb9jRd9",
        "High-level domain": "Chemistry",
        "Subdomain": "Inorganic Chemistry",
    },
]

BBH_TARGETS = {  # one row per subtask, targets in the formats of docs/method.md#bbh-target-formats
    "boolean_expressions": "True",
    "causal_judgement": "No",
    "date_understanding": "(B)",
    "disambiguation_qa": "(A)",
    "dyck_languages": "] ]",
    "formal_fallacies": "invalid",
    "geometric_shapes": "(J)",
    "hyperbaton": "(B)",
    "logical_deduction_five_objects": "(C)",
    "logical_deduction_seven_objects": "(G)",
    "logical_deduction_three_objects": "(A)",
    "movie_recommendation": "(D)",
    "multistep_arithmetic_two": "-24",
    "navigate": "Yes",
    "object_counting": "8",
    "penguins_in_a_table": "(E)",
    "reasoning_about_colored_objects": "(O)",
    "ruin_names": "(C)",
    "salient_translation_error_detection": "(F)",
    "snarks": "(A)",
    "sports_understanding": "no",
    "temporal_sequences": "(D)",
    "tracking_shuffled_objects_five_objects": "(E)",
    "tracking_shuffled_objects_seven_objects": "(F)",
    "tracking_shuffled_objects_three_objects": "(B)",
    "web_of_lies": "Yes",
    "word_sorting": "apple banana cherry",
}
# a non-letter target of a letter subtask (docs/method.md#bbh-target-formats)
BBH_EXTRA = {"movie_recommendation": "Monsters, Inc"}


def bbh_input(subtask: str) -> str:
    options = "\nOptions:\n(A) one\n(B) two" if subtask in dataset_loaders.BBH_OPTION_SUBTASKS else ""
    return f"Question of {subtask}.{options}"


def bbh_files() -> dict[str, list[dict]]:
    files = {
        f"bbh/{subtask}.jsonl": [{"input": bbh_input(subtask), "target": target}]
        for subtask, target in BBH_TARGETS.items()
    }
    files["bbh/movie_recommendation.jsonl"].append(
        {"input": "Find a movie similar to Toy Story.", "target": BBH_EXTRA["movie_recommendation"]}
    )
    return files


def bbh_expected(subtask: str, target: str) -> Doc:
    problem = "Find a movie similar" if target in BBH_EXTRA.values() else f"Question of {subtask}."
    option = re.fullmatch(r"\(([A-Z])\)", target)
    if option is None:
        return Doc(problem, target, target.upper() if target.isalpha() else target, "Maybe", "text")
    letter = option.group(1)
    wrong = "A" if letter != "A" else "B"
    if normalize_answer(letter, "mc") != letter:  # a letter the mc checker does not read: matched as text
        return Doc(problem, letter, letter, wrong, "text", CHOOSE)
    return Doc(problem, letter, f"({letter})", wrong, "mc", CHOOSE)


def bbh_docs() -> list[Doc]:
    docs = []
    for subtask in dataset_loaders.BBH_SUBTASKS:
        docs.append(bbh_expected(subtask, BBH_TARGETS[subtask]))
        if subtask in BBH_EXTRA:
            docs.append(bbh_expected(subtask, BBH_EXTRA[subtask]))
    return docs


def gpqa_docs() -> list[Doc]:
    docs = []
    for row in GPQA_ROWS:
        doc = dataset_loaders.gpqa_doc(row)
        wrong = next(letter for letter in "ABCD" if letter != doc["answer"])
        docs.append(Doc(row["Question"].strip(), doc["answer"], doc["answer"], wrong, "mc", CHOOSE))
    return docs


CASES = [
    Case(
        "trac_gsm8k",
        {
            "gsm8k.jsonl": [  # openai/gsm8k main: question, answer (worked solution ending in "#### <number>")
                {
                    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
                    "clips in May. How many clips did Natalia sell altogether in April and May?",
                    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 "
                    "clips altogether in April and May.\n#### 72",
                },
                {
                    "question": "A farm sells 1200 eggs a week. How many eggs does it sell in a week?",
                    "answer": "It sells 1,200 eggs.\n#### 1,200",
                },
            ]
        },
        local_jsonl_source("gsm8k.jsonl"),
        [Doc("Natalia sold clips to 48", "72", "72", "24"), Doc("1200 eggs a week", "1,200", "1200", "120")],
    ),
    Case(
        "trac_math500",
        {
            "math500.jsonl": [  # HuggingFaceH4/MATH-500
                {
                    "problem": "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.",
                    "solution": "... $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$",
                    "answer": "\\left( 3, \\frac{\\pi}{2} \\right)",
                    "subject": "Precalculus",
                    "level": 2,
                    "unique_id": "test/precalculus/807.json",
                }
            ]
        },
        local_jsonl_source("math500.jsonl"),
        [Doc("rectangular coordinates", "\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)", "(3, \\pi)")],
    ),
    Case(
        "trac_minerva",
        {
            "minerva.jsonl": [  # math-ai/minervamath: question, answer
                {
                    "question": "Each of the two Magellan telescopes has a diameter of $6.5 \\mathrm{~m}$. Compute the "
                    "diffraction limit in arcseconds.",
                    "answer": "1.6",
                },
                {
                    "question": "Preamble: a star has luminosity L. Find its radius in units of $10^{9}$ m.",
                    "answer": "7.5",
                },
            ]
        },
        local_jsonl_source("minerva.jsonl"),
        [Doc("Magellan telescopes", "1.6", "1.60", "16"), Doc("luminosity L", "7.5", "7.50", "0.75")],
    ),
    Case(
        "trac_olympiadbench",
        {
            "olympiadbench.jsonl": [  # Hothan/OlympiadBench OE_TO_maths_en_COMP
                {
                    "id": 2231,
                    "question": "Find the smallest positive integer $n$ with the property.",
                    "solution": ["We show that $n=2$ works."],
                    "final_answer": ["2"],
                    "is_multiple_answer": False,
                    "unit": None,
                    "answer_type": "Numerical",
                    "context": None,
                    "subfield": "Number Theory",
                    "language": "English",
                    "image_1": None,
                },
                {
                    "id": 2233,
                    "question": "Find all triples $(a,b,c)$ with $a+b+c=28$.",
                    "solution": ["..."],
                    "final_answer": ["$(1,8,19), (2,7,13)$"],
                    "is_multiple_answer": True,
                    "unit": None,
                    "answer_type": "Tuple",
                    "context": None,
                    "subfield": "Algebra",
                    "language": "English",
                    "image_1": None,
                },
                {
                    "id": 2240,
                    "question": "Compute the value of $x$.",
                    "solution": ["..."],
                    "final_answer": ["$\\frac{1}{2}$"],
                    "is_multiple_answer": False,
                    "unit": None,
                    "answer_type": "Numerical",
                    "context": "Let $x$ satisfy $2x = 1$.",
                    "subfield": "Algebra",
                    "language": "English",
                    "image_1": None,
                },
            ]
        },
        local_jsonl_source("olympiadbench.jsonl", split="train"),
        [
            Doc("smallest positive integer", "2", "2", "3"),
            Doc("Let $x$ satisfy $2x = 1$.\n\nCompute the value of $x$.", "\\frac{1}{2}", "0.5", "\\frac{1}{3}"),
        ],
    ),
    Case(
        "trac_aime",
        {"aime24.jsonl": AIME24_ROWS, "aime25.jsonl": AIME25_ROWS},
        "dataset_kwargs:\n  aime24_path: {data}/aime24.jsonl\n  aime25_path: {data}/aime25.jsonl\n",
        AIME24_DOCS + AIME25_DOCS,
    ),
    Case("trac_aime24", {"aime24.jsonl": AIME24_ROWS}, local_jsonl_source("aime24.jsonl", split="train"), AIME24_DOCS),
    Case("trac_aime25", {"aime25.jsonl": AIME25_ROWS}, local_jsonl_source("aime25.jsonl"), AIME25_DOCS),
    Case("trac_bbh", bbh_files(), "dataset_kwargs:\n  data_dir: {data}/bbh\n", bbh_docs()),
    Case("trac_gpqa_diamond", {"gpqa.jsonl": GPQA_ROWS}, "dataset_kwargs:\n  path: {data}/gpqa.jsonl\n", gpqa_docs()),
]


def write_local_task(root: Path, case: Case) -> None:
    """Data files and a YAML that includes the real task YAML and swaps only its data source."""
    data = root / "data" / case.task
    for name, rows in case.files.items():
        path = data / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    yaml = f"include: {task_config_dir() / (case.task + '.yaml')}\ntask: {case.task}\n"
    (root / "tasks" / f"{case.task}.yaml").write_text(yaml + case.data_source.format(data=data), encoding="utf-8")


def hub_unreachable(*args, **kwargs):
    raise AssertionError(f"a test reached the hub: datasets.load_dataset{args}")


@pytest.fixture(scope="module")
def task_manager(tmp_path_factory):
    import datasets
    from lm_eval.tasks import TaskManager

    root = tmp_path_factory.mktemp("benchmarks")
    (root / "tasks").mkdir()
    for case in CASES:
        write_local_task(root, case)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(datasets, "load_dataset", hub_unreachable)
        yield TaskManager(include_path=[task_config_dir(), root / "tasks"], include_defaults=False)


def load_task(task_manager, name: str):
    return task_manager.load(name)["tasks"][name]


def labelled_right(response: str, reference: str, kind: str) -> bool:
    return equivalent(extract_answer(response, kind), reference, kind)


@pytest.mark.parametrize("case", CASES, ids=[case.task for case in CASES])
def test_task_renders_prompts_references_and_labels_answers(task_manager, case):
    task = load_task(task_manager, case.task)
    docs = list(task.test_docs())
    config = TracConfig.from_gen_kwargs(task.config.generation_kwargs, case.task)
    assert task.config.repeats == 8 and config.cue == "\n\nThe final answer is \\boxed{"
    assert len(docs) == len(case.docs)
    for doc, expected in zip(docs, case.docs, strict=True):
        prompt = task.doc_to_text(doc)
        assert prompt.startswith(expected.instruction + "\n\n") and expected.problem in prompt
        reference, kind = config.render_reference(doc), config.kind_for(doc)
        assert (reference, kind) == (expected.reference, expected.kind)
        assert task.doc_to_target(doc) == reference  # the samples file's target is the TrAC reference
        assert labelled_right(f"Step by step.\n\nSo the answer is $\\boxed{{{expected.right}}}$.", reference, kind)
        assert not labelled_right(f"Step by step.\n\nThe answer is \\boxed{{{expected.wrong}}}.", reference, kind)
        assert labelled_right(f"{config.cue}{reference}}}", reference, kind)  # the probe's re-stated answer
        assert all(name in doc for name in config.metadata_fields)


def test_gpqa_prompt_lists_the_shuffled_options_and_its_letter_names_the_correct_one(task_manager):
    task = load_task(task_manager, "trac_gpqa_diamond")
    for doc, row in zip(task.test_docs(), GPQA_ROWS, strict=True):
        prompt = task.doc_to_text(doc)
        options = re.findall(r"^\(([A-D])\) (.*)$", prompt, flags=re.MULTILINE)
        assert sorted(text for _, text in options) == sorted(
            row[field].strip()
            for field in ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")
        )
        assert dict(options)[doc["answer"]] == row["Correct Answer"]


def test_gpqa_option_order_is_fixed_per_question_whatever_the_random_state():
    row = GPQA_ROWS[0]
    random.seed(0)
    first = dataset_loaders.gpqa_doc(row)
    random.seed(12345)
    random.shuffle(list(range(100)))
    second = dataset_loaders.gpqa_doc(dict(row))
    assert first == second
    assert dataset_loaders.gpqa_option_order(row["Record ID"]) == dataset_loaders.gpqa_option_order(row["Record ID"])
    correct_letters = {dataset_loaders.gpqa_doc({**row, "Record ID": f"rec{index}"})["answer"] for index in range(40)}
    assert correct_letters == set("ABCD")  # the correct answer is not always in the same place


def test_gpqa_option_order_falls_back_to_the_question_text():
    row = {key: value for key, value in GPQA_ROWS[1].items() if key != "Record ID"}
    doc = dataset_loaders.gpqa_doc(row)
    assert doc["choices"][dataset_loaders.gpqa_option_order(row["Question"]).index(0)] == row["Correct Answer"]
    assert doc["choices"]["ABCD".index(doc["answer"])] == row["Correct Answer"]


def gated_errors():
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.utils import GatedRepoError

    return [
        DatasetNotFoundError(
            "Dataset 'Idavidrein/gpqa' is a gated dataset on the Hub. You must be authenticated to access it."
        ),
        GatedRepoError(
            "Access to dataset Idavidrein/gpqa is restricted.", response=SimpleNamespace(headers={}, request=None)
        ),
    ]


@pytest.mark.parametrize("error", gated_errors(), ids=["DatasetNotFoundError", "GatedRepoError"])
def test_gpqa_without_access_says_to_accept_the_terms_and_log_in(monkeypatch, error):
    import datasets

    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    with pytest.raises(dataset_loaders.GatedDatasetError) as raised:
        dataset_loaders.gpqa()
    message = str(raised.value)
    for needed in (
        "https://huggingface.co/datasets/Idavidrein/gpqa",
        "accept",
        "hf auth login",
        "huggingface-cli login",
        "HF_TOKEN",
    ):
        assert needed.lower() in message.lower()


def test_olympiadbench_reference_strips_dollars_and_rejects_a_bare_string():
    assert dataset_loaders.olympiadbench_reference(["$(1,8,19)$", " $x=2$ "]) == "(1,8,19), x=2"
    with pytest.raises(ValueError, match="non-empty list"):
        dataset_loaders.olympiadbench_reference("$2$")


def test_bbh_lists_the_27_subtasks_of_datasets_md():
    assert len(dataset_loaders.BBH_SUBTASKS) == len(set(dataset_loaders.BBH_SUBTASKS)) == 27
    assert set(dataset_loaders.BBH_SUBTASKS) == set(BBH_TARGETS)


def load_math_group(task_manager):
    return task_manager.load("trac_math")["groups"]["trac_math"]


def test_math_group_loads_its_five_tasks_and_averages_them_unweighted(task_manager):
    group = load_math_group(task_manager)
    assert group.name == "trac_math" and [task.task_name for task in group.get_all_tasks()] == MATH_TASKS
    assert all(not item.weight_by_size and item.filter_list == ["none"] for item in group.aggregate_metric_list)
    sizes = {"trac_gsm8k": 1000, "trac_math500": 10, "trac_minerva": 10, "trac_olympiadbench": 10, "trac_aime": 10}
    metrics = {
        name: {
            "acc,none": 1.0 if name == "trac_gsm8k" else 0.0,
            "trac_auroc,none": 0.5,
            "trac_auroc_stderr,none": "N/A",
            "sample_len": size,
        }
        for name, size in sizes.items()
    }
    del metrics["trac_aime"]["trac_auroc,none"]  # a metric one task lacks: averaged over the others
    aggregated = group.aggregate(metrics)
    assert aggregated["acc,none"] == pytest.approx(0.2) and aggregated["trac_auroc,none"] == pytest.approx(0.5)


def test_math_group_aggregates_every_metric_a_trac_task_reports(task_manager):
    group = load_math_group(task_manager)
    evidences = [question_evidence(records) for records in synthetic_task(40, seed=5)]
    reported = set(evaluate_task(evidences).metrics) | {"acc", "maj_acc"}
    assert {item.metric for item in group.aggregate_metric_list} == reported


# ----------------------------------------------------------------------------------------------------------
# The user guide's worked example (docs/guide/running.md, "Adding a benchmark by YAML")
# ----------------------------------------------------------------------------------------------------------


def test_guide_worked_example_loads_and_labels_answers(tmp_path, monkeypatch):
    from lm_eval.tasks import TaskManager

    yaml_block, jsonl_block = guide_example_blocks()
    assert GUIDE_TEMPLATE_PATH in yaml_block
    tasks = tmp_path / "my_tasks"
    tasks.mkdir()
    (tasks / "my_benchmark.yaml").write_text(yaml_block.replace(GUIDE_TEMPLATE_PATH, str(task_config_dir())))
    (tmp_path / "my_questions.jsonl").write_text(jsonl_block)
    monkeypatch.chdir(tmp_path)  # the example's data_file is relative to where lm_eval runs
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    task = load_task(TaskManager(include_path=str(tasks), include_defaults=False), "my_benchmark")
    rows = [json.loads(line) for line in jsonl_block.splitlines() if line.strip()]
    config = TracConfig.from_gen_kwargs(task.config.generation_kwargs, "my_benchmark")
    for doc, row in zip(task.test_docs(), rows, strict=True):
        assert row["question"] in task.doc_to_text(doc) and SOLVE in task.doc_to_text(doc)
        reference = config.render_reference(doc)
        assert reference == row["gold"]
        assert labelled_right(f"... \\boxed{{{reference}}}", reference, config.kind_for(doc))
        assert not labelled_right("... \\boxed{-1}", reference, config.kind_for(doc))
