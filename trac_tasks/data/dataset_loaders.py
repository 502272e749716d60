"""The dataset loaders task YAMLs name with ``!function`` (docs/method.md#benchmarks-and-datasets,
``task_configs/trac_*.yaml``):

- ``local_jsonl`` (``custom_dataset``) reads a JSON Lines file instead of the Hugging Face hub: the bundled offline
  demo, a user's own data, or test fixtures written in a hub dataset's exact schema.

The benchmark loaders use the hub ids, configs, splits, field names and answer formats of
docs/method.md#dataset-sources:

- ``process_docs`` functions (``olympiadbench_docs``, ``aime24_docs``, ``aime25_docs``) map one split of a hub
  dataset to the fields the YAML's prompt and reference templates read;
- ``custom_dataset`` functions (``aime``, ``bbh``, ``gpqa``) load one or several hub datasets themselves and return
  ``{split: datasets.Dataset}``. lm-eval calls them as ``fn(**metadata, **dataset_kwargs)``; every hub id, config
  and split is an argument with the hub default, so ``dataset_kwargs`` can point them at other copies. A source
  ending in ``.jsonl`` is read as a local JSON Lines file in the hub dataset's schema (offline copies, tests).

The row mappings are pure: the same rows give the same documents (GPQA's option order included).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from trac_metrics.answers import normalize_answer

# ----------------------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------------------

DATA_DIR = Path(__file__).resolve().parent


def resolve_data_file(data_file: str) -> Path:
    """An absolute path, a path relative to the working directory, or a file name in ``trac_tasks/data``."""
    for candidate in (Path(data_file), DATA_DIR / data_file):
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"dataset file {data_file!r} not found (looked in the working directory and in {DATA_DIR})")


def local_jsonl(data_file: str | None = None, split: str = "test", **_: Any) -> dict[str, Any]:
    """``{split: datasets.Dataset}`` from a JSON Lines file, one document per line.

    lm-eval passes the task's ``metadata`` and ``dataset_kwargs`` as keyword arguments; only ``data_file`` and
    ``split`` are used here.
    """
    import datasets

    if not data_file:
        raise ValueError("custom_dataset local_jsonl needs dataset_kwargs.data_file")
    path = resolve_data_file(data_file)
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{line_number}: not valid JSON ({error})") from error
    if not rows:
        raise ValueError(f"dataset file {path} has no rows")
    return {split: datasets.Dataset.from_list(rows)}


def load_split(source: str, name: str | None, split: str) -> Any:
    """One split as a ``datasets.Dataset``: a hub dataset (``source`` = hub id, ``name`` = config), or a local JSON
    Lines file when ``source`` ends in ``.jsonl`` (then ``name`` is ignored)."""
    if source.endswith(".jsonl"):
        return local_jsonl(source, split=split)[split]
    import datasets

    return datasets.load_dataset(source, name, split=split)


def _dataset(rows: list[dict[str, Any]], what: str) -> Any:
    import datasets

    if not rows:
        raise ValueError(f"{what}: no documents were loaded")
    return datasets.Dataset.from_list(rows)


def _mapped(dataset: Any, doc: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Any:
    """``dataset`` with every row replaced by ``doc(row)`` (only the fields ``doc`` returns remain)."""
    return dataset.map(doc, remove_columns=dataset.column_names)


# ----------------------------------------------------------------------------------------------------------
# OlympiadBench (Hothan/OlympiadBench, OE_TO_maths_en_COMP, train)
# ----------------------------------------------------------------------------------------------------------


def olympiadbench_reference(final_answer: Sequence[str]) -> str:
    """The reference answer from ``final_answer`` (docs/method.md#dataset-sources: a list of strings such as
    ``["$(1,8,19)$"]``): each answer without its surrounding ``$``, several joined by ", "."""
    if isinstance(final_answer, str) or not final_answer:
        raise ValueError(f"OlympiadBench final_answer must be a non-empty list of strings, got {final_answer!r}")
    return ", ".join(answer.strip().strip("$").strip() for answer in final_answer)


def olympiadbench_problem(row: Mapping[str, Any]) -> str:
    """The problem text: ``question``, preceded by ``context`` when the row has one (docs/method.md#dataset-sources)."""
    context = (row.get("context") or "").strip()
    question = row["question"].strip()
    return f"{context}\n\n{question}" if context else question


def olympiadbench_docs(dataset: Any) -> Any:
    """``process_docs`` of ``trac_olympiadbench``: keeps the single-answer rows (``is_multiple_answer`` false; the
    581 the paper counts, docs/method.md#dataset-sources) and adds ``problem`` and ``answer`` (the reference) to
    each."""
    return dataset.filter(_single_answer).map(_olympiadbench_fields)


def _single_answer(row: Mapping[str, Any]) -> bool:
    return not row["is_multiple_answer"]


def _olympiadbench_fields(row: Mapping[str, Any]) -> dict[str, str]:
    return {"problem": olympiadbench_problem(row), "answer": olympiadbench_reference(row["final_answer"])}


# ----------------------------------------------------------------------------------------------------------
# AIME 2024 (Maxwell-Jia/AIME_2024, train) and AIME 2025 (math-ai/aime25, test)
# ----------------------------------------------------------------------------------------------------------


def aime24_doc(row: Mapping[str, Any]) -> dict[str, str]:
    """One AIME 2024 row (``ID``, ``Problem``, ``Answer`` as a number; docs/method.md#dataset-sources) in the pooled
    schema."""
    return {"id": str(row["ID"]), "problem": row["Problem"], "answer": str(row["Answer"])}


def aime25_doc(row: Mapping[str, Any]) -> dict[str, str]:
    """One AIME 2025 row (``id``, ``problem``, ``answer``; docs/method.md#dataset-sources) in the pooled schema."""
    return {"id": str(row["id"]), "problem": row["problem"], "answer": str(row["answer"])}


def aime24_docs(dataset: Any) -> Any:
    """``process_docs`` of ``trac_aime24``: rows as ``{id, problem, answer}``."""
    return _mapped(dataset, aime24_doc)


def aime25_docs(dataset: Any) -> Any:
    """``process_docs`` of ``trac_aime25``: rows as ``{id, problem, answer}``."""
    return _mapped(dataset, aime25_doc)


def aime(
    aime24_path: str = "Maxwell-Jia/AIME_2024",
    aime24_name: str | None = None,
    aime24_split: str = "train",
    aime25_path: str = "math-ai/aime25",
    aime25_name: str | None = None,
    aime25_split: str = "test",
    **_: Any,
) -> dict[str, Any]:
    """``custom_dataset`` of ``trac_aime``: AIME 2024 and 2025 pooled (60 problems, docs/method.md#dataset-sources) as
    one ``test`` split of ``{id, problem, answer}`` rows, 2024 first. Other keyword arguments (lm-eval's metadata) are
    ignored."""
    rows = [aime24_doc(row) for row in load_split(aime24_path, aime24_name, aime24_split)]
    rows += [aime25_doc(row) for row in load_split(aime25_path, aime25_name, aime25_split)]
    return {"test": _dataset(rows, "trac_aime")}


# ----------------------------------------------------------------------------------------------------------
# BBH (SaylorTwift/bbh, one config per subtask, test)
# ----------------------------------------------------------------------------------------------------------

BBH_OPTION_SUBTASKS = (
    "date_understanding",
    "disambiguation_qa",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
)
"""BBH subtasks whose targets are option letters ``(A)``… (docs/method.md#bbh-target-formats)."""

BBH_FREE_FORM_SUBTASKS = (
    "boolean_expressions",
    "causal_judgement",
    "dyck_languages",
    "formal_fallacies",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "sports_understanding",
    "web_of_lies",
    "word_sorting",
)
"""BBH subtasks with free-form targets: True/False, Yes/No, valid/invalid, numbers, sequences, word lists."""

BBH_SUBTASKS = tuple(sorted(BBH_OPTION_SUBTASKS + BBH_FREE_FORM_SUBTASKS))
"""The 27 BBH subtask configs (6511 rows pooled, docs/method.md#dataset-sources)."""

_OPTION_TARGET_RE = re.compile(r"\(([A-Z])\)")


def bbh_doc(row: Mapping[str, Any], subtask: str) -> dict[str, Any]:
    """One BBH row (``input``, ``target``) with the fields the task reads added:

    - ``subtask``;
    - ``multiple_choice``: the target is an option letter ``(X)`` of a letter subtask (the prompt asks for a letter);
    - ``answer``: the reference, the bare letter for option targets, else the target;
    - ``answer_kind``: ``mc`` when the option letter is one the mc answer checker reads (``trac_metrics.answers``),
      else ``text`` (the checker reads A–R, which covers reasoning_about_colored_objects' options up to ``(R)``).
      The few non-letter targets of letter subtasks (docs/method.md#bbh-target-formats) are ``text`` rows.
    """
    target = row["target"].strip()
    option = _OPTION_TARGET_RE.fullmatch(target) if subtask in BBH_OPTION_SUBTASKS else None
    answer = option.group(1) if option else target
    readable_letter = option is not None and normalize_answer(answer, "mc") == answer
    return {
        **row,
        "subtask": subtask,
        "multiple_choice": option is not None,
        "answer": answer,
        "answer_kind": "mc" if readable_letter else "text",
    }


def _bbh_source(path: str, data_dir: str | None, subtask: str) -> str:
    return str(Path(data_dir) / f"{subtask}.jsonl") if data_dir else path


def bbh(
    path: str = "SaylorTwift/bbh",
    split: str = "test",
    data_dir: str | None = None,
    subtasks: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """``custom_dataset`` of ``trac_bbh``: the 27 subtasks pooled as one ``test`` split (see :func:`bbh_doc`), or only
    ``subtasks`` (the per-subtask tasks ``trac_bbh_<subtask>``, docs/method.md#dataset-sources).

    Each subtask is the hub config of that name in ``path``, or, when ``data_dir`` is given, the file
    ``<data_dir>/<subtask>.jsonl`` in the hub schema. Other keyword arguments (lm-eval's metadata) are ignored. An
    unknown subtask name is refused, naming the 27.
    """
    chosen = BBH_SUBTASKS if subtasks is None else tuple(subtasks)
    unknown = sorted(set(chosen) - set(BBH_SUBTASKS))
    if unknown or not chosen:
        raise ValueError(f"BBH subtasks {unknown or list(chosen)} unknown; the subtasks are {list(BBH_SUBTASKS)}")
    rows = [
        bbh_doc(row, subtask)
        for subtask in chosen
        for row in load_split(_bbh_source(path, data_dir, subtask), subtask, split)
    ]
    return {"test": _dataset(rows, "trac_bbh")}


def first_rows(dataset: Any, count: int = 800) -> Any:
    """The first ``count`` rows of ``dataset`` in its order (``process_docs`` of ``trac_gsm8k_800``: the paper ran
    800 GSM8K problems without saying which, docs/method.md#dataset-sources); all of them when it has fewer."""
    return dataset.select(range(min(count, len(dataset))))


# ----------------------------------------------------------------------------------------------------------
# GPQA-Diamond (Idavidrein/gpqa, gpqa_diamond, train; gated)
# ----------------------------------------------------------------------------------------------------------

GPQA_LETTERS = "ABCD"
_GPQA_OPTION_FIELDS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


class GatedDatasetError(RuntimeError):
    """A gated hub dataset could not be loaded: its terms are not accepted or no token is set."""


def gpqa_option_order(key: str) -> list[int]:
    """A fixed permutation of the four option fields for the question ``key`` (index 0 = the correct answer).

    Each option is ranked by the SHA-256 of ``"<key>:<index>"``: the order depends on the question alone, never on
    a random state, a seed or the Python version (lm-eval's own GPQA tasks shuffle without a seed;
    docs/method.md#gpqa-option-order).
    """

    def rank(index: int) -> bytes:
        return hashlib.sha256(f"{key}:{index}".encode()).digest()

    return sorted(range(len(_GPQA_OPTION_FIELDS)), key=rank)


def gpqa_doc(row: Mapping[str, Any]) -> dict[str, Any]:
    """One GPQA row with ``choices`` (the four answer texts, in the order of :func:`gpqa_option_order` keyed by
    ``Record ID``, else by ``Question``) and ``answer``, the letter A–D of the correct answer, added."""
    key = row.get("Record ID") or row["Question"]
    order = gpqa_option_order(key)
    choices = [row[_GPQA_OPTION_FIELDS[index]].strip() for index in order]
    return {**row, "choices": choices, "answer": GPQA_LETTERS[order.index(0)]}


def _load_gated(path: str, name: str, split: str) -> Any:
    """``load_split``, turning the hub's refusal of a gated dataset into an error that says what to do."""
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.utils import GatedRepoError

    try:
        return load_split(path, name, split)
    except (DatasetNotFoundError, GatedRepoError) as error:
        raise GatedDatasetError(
            f"cannot load the gated dataset {path!r} ({error}). Accept its terms at "
            f"https://huggingface.co/datasets/{path} with your Hugging Face account, then log in on this machine: "
            "`hf auth login` (`huggingface-cli login` with huggingface_hub < 1.0), or set HF_TOKEN."
        ) from error


def gpqa(path: str = "Idavidrein/gpqa", name: str = "gpqa_diamond", split: str = "train", **_: Any) -> dict[str, Any]:
    """``custom_dataset`` of ``trac_gpqa_diamond``: the split with deterministic option order (see :func:`gpqa_doc`).
    Other keyword arguments (lm-eval's metadata) are ignored."""
    rows = [gpqa_doc(row) for row in _load_gated(path, name, split)]
    return {split: _dataset(rows, "trac_gpqa_diamond")}
