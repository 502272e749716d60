"""Runs of the real ``lm_eval`` CLI in a subprocess on local rows in the MATH-500 schema, for the end-to-end tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from easy_rows import easy_rows, render
from testenv import REPO, engine_env

from trac_tasks.data.demo_data import demo_rows
from trac_tasks.data.tiny_reasoner import cpu_dtype, reasoner_path
from trac_tasks.harness.lm_eval_hooks import task_config_dir

LOCAL_TASK = "trac_math500_local"
CLOSED_TASK = "closed_thinking_local"
PLAIN_TASK = "plain_local"


def _generation_kwargs(max_gen_toks: int, sampling_extra: str = "", trac_extra: str = "") -> str:
    """The ``generation_kwargs`` block of the local tasks (sampled, ``until: []``, a TrAC block for math answers),
    with extra YAML lines among the sampling settings and in the ``trac`` block."""
    lines = ["generation_kwargs:", "  until: []", "  do_sample: true", "  temperature: 0.7", "  top_p: 0.95"]
    lines += [f"  max_gen_toks: {max_gen_toks}", sampling_extra, "  trac:", "    answer_kind: math"]
    lines += ['    reference: "{{answer}}"', trac_extra]
    return "\n".join(line for line in lines if line)


REASONER_ROWS = "reasoner"
"""The local rows for the tiny reasoner: the bundled demo's held-out word problems (it answers about half)."""
SMOLLM2_ROWS = "smollm2"
"""The local rows for the pretrained SmolLM2: one-step sums and short word problems (``easy_rows``)."""


def reasoner_vllm_args(*extra: str, prefix_caching: bool = True, one_process: bool = True) -> str:
    """``--model_args`` of a seeded ``lm_eval --model vllm`` run of the tiny reasoner as ``scripts/demo.sh`` loads it
    (the CPU's dtype, its whole 1,024-token context, 32-token cache blocks), plus the ``extra`` arguments; in one
    process (``distributed_executor_backend=uni``) unless ``one_process`` is false."""
    arguments = [
        f"pretrained={reasoner_path()}",
        f"dtype={cpu_dtype()}",
        "max_model_len=1024",
        f"enable_prefix_caching={prefix_caching}",
        "block_size=32",
        "enforce_eager=True",
        *(["distributed_executor_backend=uni"] if one_process else []),
        "seed=1234",
        *extra,
    ]
    return ",".join(arguments)


def local_rows(rows: str) -> list[dict[str, object]]:
    """The local rows named ``rows`` (:data:`REASONER_ROWS` or :data:`SMOLLM2_ROWS`), in the MATH-500 schema; each
    set holds questions its model answers right and wrong."""
    return demo_rows() if rows == REASONER_ROWS else easy_rows()


def write_local_math500_task(
    root: Path, n_rows: int, repeats: int, max_gen_toks: int, extra_trac: str = "", rows: str = SMOLLM2_ROWS
) -> Path:
    """A task folder whose YAML includes the real ``trac_math500.yaml`` and only swaps the hub data for a local file
    of the first ``n_rows`` of the :func:`local_rows` named ``rows``, in the hub dataset's exact schema (problem,
    solution, answer, subject, level, unique_id)."""
    data = root / "math500_local.jsonl"
    data.write_text(render(local_rows(rows)[:n_rows]), encoding="utf-8")
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / f"{LOCAL_TASK}.yaml").write_text(
        f"""
include: {REPO / "task_configs" / "trac_math500.yaml"}
task: {LOCAL_TASK}
custom_dataset: !function trac_tasks.data.dataset_loaders.local_jsonl
dataset_kwargs:
  data_file: {data}
repeats: {repeats}
{_generation_kwargs(max_gen_toks, trac_extra="    metadata_fields: [subject, level, unique_id]")}
{extra_trac}
""",
        encoding="utf-8",
    )
    # a task without TrAC switches on the same rows: it must run as in plain lm-eval, beside the TrAC task
    write_plain_task(tasks, PLAIN_TASK, data, "Question: {{problem}}\\nAnswer:", "{{answer}}", max_gen_toks=12)
    return tasks


def write_plain_task(tasks: Path, name: str, data: Path, doc_to_text: str, doc_to_target: str, max_gen_toks: int):
    """A plain lm-eval ``generate_until`` task ``name`` on the JSON Lines file ``data``: greedy, one line, scored by
    lm-eval's ``exact_match``."""
    (tasks / f"{name}.yaml").write_text(
        f"""
task: {name}
custom_dataset: !function trac_tasks.data.dataset_loaders.local_jsonl
dataset_kwargs:
  data_file: {data}
output_type: generate_until
test_split: test
doc_to_text: "{doc_to_text}"
doc_to_target: "{doc_to_target}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
  max_gen_toks: {max_gen_toks}
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
""",
        encoding="utf-8",
    )


GUIDE_TEMPLATE_PATH = "/path/to/trac_tasks/task_configs"
"""The placeholder path of the template in the guide's YAML, replaced by the real one when the example is written."""


GUIDE_EXAMPLE_PAGE = REPO / "docs" / "guide" / "running.md"


def guide_example_blocks() -> tuple[str, str]:
    """The YAML and JSON Lines blocks of the user guide's section "Adding a benchmark by YAML"
    (docs/guide/running.md)."""
    section = GUIDE_EXAMPLE_PAGE.read_text(encoding="utf-8").split("## Adding a benchmark by YAML", 1)[1]
    yaml_block = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL).group(1)
    jsonl_block = re.search(r"```jsonl\n(.*?)```", section, flags=re.DOTALL).group(1)
    return yaml_block, jsonl_block


def write_guide_example(root: Path, tasks: Path) -> None:
    """The guide's worked example as a user would save it: its YAML in ``tasks``, its data in ``root``."""
    yaml_block, jsonl_block = guide_example_blocks()
    (tasks / "my_benchmark.yaml").write_text(yaml_block.replace(GUIDE_TEMPLATE_PATH, str(task_config_dir())))
    (root / "my_questions.jsonl").write_text(jsonl_block)


@dataclass(frozen=True)
class LmEvalRun:
    out: Path
    log: str

    def results(self) -> dict:
        (path,) = self.out.rglob("results_*.json")
        return json.loads(path.read_text())

    def task_metrics(self, task: str = LOCAL_TASK) -> dict[str, float]:
        return {key.split(",")[0]: value for key, value in self.results()["results"][task].items() if "," in key}

    def samples(self, task: str = LOCAL_TASK) -> list[dict]:
        (path,) = self.out.rglob(f"samples_{task}_*.jsonl")
        return [json.loads(line) for line in path.read_text().splitlines()]

    def record_files(self, task: str = LOCAL_TASK) -> list[Path]:
        return sorted((self.out / "trac_records").glob(f"{task}.*.jsonl"))


def write_variant_task(
    tasks: Path,
    name: str,
    max_gen_toks: int,
    sampling_extra: str = "",
    trac_extra: str = "",
    n_rows: int | None = None,
    rows: str = SMOLLM2_ROWS,
) -> None:
    """Beside :data:`LOCAL_TASK` in ``tasks``: task ``name`` on the same rows (the first ``n_rows`` of the
    :func:`local_rows` named ``rows`` when ``n_rows`` is given), with its own ``generation_kwargs`` (extra YAML lines
    among the sampling settings and in the ``trac`` block)."""
    data = ""
    if n_rows is not None:
        path = tasks.parent / f"{name}.jsonl"
        path.write_text(render(local_rows(rows)[:n_rows]), encoding="utf-8")
        data = f"dataset_kwargs:\n  data_file: {path}"
    (tasks / f"{name}.yaml").write_text(
        f"""
include: {tasks / (LOCAL_TASK + ".yaml")}
task: {name}
{data}
{_generation_kwargs(max_gen_toks, sampling_extra=sampling_extra, trac_extra=trac_extra)}
""",
        encoding="utf-8",
    )


def write_closed_thinking_task(tasks: Path, marker_id: int, max_gen_toks: int) -> None:
    """:data:`CLOSED_TASK`: the local rows with the end-of-thinking marker's logit pushed up, so every trace of a
    thinking model closes its thinking section at once."""
    write_variant_task(tasks, CLOSED_TASK, max_gen_toks, sampling_extra=f"  logit_bias: {{{marker_id}: 100.0}}")


def lm_eval_command(
    tasks_dir: Path, model: str, model_args: str, out: Path, *extra: str, tasks: str = LOCAL_TASK
) -> list[str]:
    """The ``lm_eval`` command line of a run on the local-data tasks in ``tasks_dir``, writing to ``out``."""
    return [
        shutil.which("lm_eval"),
        "--tasks",
        tasks,
        "--include_path",
        str(tasks_dir),
        "--model",
        model,
        "--model_args",
        model_args,
        "--output_path",
        str(out),
        *extra,
    ]


def run_lm_eval(
    root: Path,
    tasks_dir: Path,
    model_args: str,
    model: str = "vllm",
    *extra: str,
    tasks: str = LOCAL_TASK,
    timeout: int = 2400,
) -> LmEvalRun:
    """``lm_eval`` as a user types it (plus ``--include_path`` for the local-data tasks), run in ``root``; fails
    with the log."""
    out = root / "out"
    command = lm_eval_command(
        tasks_dir, model, model_args, out, "--apply_chat_template", "--log_samples", *extra, tasks=tasks
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=engine_env(), cwd=root)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise AssertionError(f"lm_eval failed ({result.returncode}):\n{log[-6000:]}")
    return LmEvalRun(out, log)


THINKING_TASKS = ("trac_demo", LOCAL_TASK, CLOSED_TASK)
"""The thinking model's shared run: the bundled demo task, traces left open (the local rows) and closed at once."""
THINKING_LIMIT, THINKING_K, THINKING_MAX_GEN_TOKS = 2, 2, 24
THINKING_DEMO_REPEATS = 8  # trac_demo's K
DETOKENIZING = (
    "import sys; import trac_tasks.engines.vllm_backend as backend; "
    "backend.fast_capture_supported = lambda: False; "  # a vLLM release without the fast output path
    "from lm_eval.__main__ import cli_evaluate; sys.exit(cli_evaluate())"
)
"""``lm_eval`` on the detokenizing path, which the runner takes on a vLLM release without the fast output path."""


def write_thinking_tasks(root: Path, model: Path) -> Path:
    """:data:`LOCAL_TASK` and :data:`CLOSED_TASK` for ``model``, whose tokenizer has the ``</think>`` marker."""
    from transformers import AutoTokenizer

    marker_id = AutoTokenizer.from_pretrained(model).convert_tokens_to_ids("</think>")
    tasks = write_local_math500_task(root, THINKING_LIMIT, THINKING_K, max_gen_toks=THINKING_MAX_GEN_TOKS)
    write_closed_thinking_task(tasks, marker_id, THINKING_MAX_GEN_TOKS)
    return tasks


def thinking_run(root: Path, tasks_dir: Path, model: Path, fast: bool) -> LmEvalRun:
    """A seeded ``lm_eval --model vllm`` run of :data:`THINKING_TASKS` (``--limit`` :data:`THINKING_LIMIT`, lm-eval's
    ``think_end_token``) on vLLM's fast output path, or on the detokenizing path when not ``fast``."""
    out = root / ("fast" if fast else "detokenizing")
    model_args = (
        f"pretrained={model},dtype=bfloat16,max_model_len=2048,enable_prefix_caching=True,"
        "block_size=32,enforce_eager=True,distributed_executor_backend=uni,seed=1234,think_end_token=</think>"
    )
    command = lm_eval_command(
        tasks_dir,
        "vllm",
        model_args,
        out,
        "--limit",
        str(THINKING_LIMIT),
        "--apply_chat_template",
        "--log_samples",
        "--gen_kwargs",
        f"max_gen_toks={THINKING_MAX_GEN_TOKS}",  # trac_demo's too: SmolLM2 in bfloat16 is slow on long traces
        tasks=",".join(THINKING_TASKS),
    )
    if not fast:
        command[:1] = [sys.executable, "-c", DETOKENIZING]
    result = subprocess.run(command, capture_output=True, text=True, timeout=2400, env=engine_env(), cwd=root)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"lm_eval failed ({result.returncode}):\n{log[-6000:]}"
    return LmEvalRun(out, log)
