"""TrAC on lm-eval's data-parallel vLLM (``data_parallel_size=N``): the runner runs inside each of N Ray replicas
(docs/architecture.md#data-parallel-vllm).

lm-eval's own replicas are one-shot Ray tasks that return texts only, so a probe could not reach the engine that
holds its trace's prefix. Here each replica gets whole questions (round robin, so long and short questions spread
evenly), builds its engine from lm-eval's model arguments as lm-eval's replicas do, and runs the same streaming
runner as one engine does — traces, probes on that replica's engine, records — then returns its records. The
driver writes each replica's questions into the one records file of the run the moment that replica returns, and
hands lm-eval the texts in request order. Replicas ask Ray for ``tensor_parallel_size`` GPUs each, or one CPU each
where Ray sees no GPU.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any

from trac_tasks.generation.capture import GenerationText, repeat_indices
from trac_tasks.generation.progress import LOGGER

DRIVER_DATA_PARALLEL_VARIABLES = (
    "VLLM_DP_RANK",
    "VLLM_DP_RANK_LOCAL",
    "VLLM_DP_SIZE",
    "VLLM_DP_MASTER_IP",
    "VLLM_DP_MASTER_PORT",
)
"""vLLM's data-parallel settings that Ray copies from the driver's environment into the replicas."""


def question_shards(repeats: Sequence[int], replicas: int) -> list[list[int]]:
    """Request positions per replica: whole questions (a question's K samples arrive in a row, repeat 0 first),
    dealt round robin; replicas that would get no question are left out."""
    shards: list[list[int]] = [[] for _ in range(replicas)]
    question = -1
    for position, repeat in enumerate(repeats):
        if repeat == 0:
            question += 1
        shards[question % replicas].append(position)
    return [shard for shard in shards if shard]


def run_on_replicas(runner: Any, requests: Sequence[Any]) -> list[GenerationText]:
    """Run ``requests`` on ``runner.lm.data_parallel_size`` Ray replicas; write their records through ``runner``'s
    records file and return the texts in request order."""
    import ray

    from trac_tasks.generation.runner import validated_configs

    lm = runner.lm
    if any(config.label_source for config in validated_configs(requests)):
        raise ValueError(
            "trac-eval: TrAC on lm-eval's own tasks (--metadata trac) labels each response with the task's scoring "
            "in the driver process, which data-parallel replicas cannot reach: run it with data_parallel_size=1"
        )
    repeats = repeat_indices(requests)
    shards = question_shards(repeats, int(lm.data_parallel_size))
    gpus = int(getattr(lm, "tensor_parallel_size", 1) or 1)
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init()
    resources = {"num_gpus": gpus} if ray.cluster_resources().get("GPU", 0) > 0 else {"num_cpus": 1}
    LOGGER.info(
        "trac-eval: %d questions' TrAC requests on %d vLLM replicas (Ray, %s each)",
        repeats.count(0),
        len(shards),
        f"{gpus} GPU" if "num_gpus" in resources else "1 CPU",
    )
    replica = ray.remote(**resources)(run_replica)
    shipped = replica_model(lm)
    runner.summaries = {}
    texts: list[GenerationText | None] = [None] * len(requests)
    try:
        pending = {replica.remote(shipped, [requests[i] for i in shard], type(runner)): shard for shard in shards}
        while pending:  # each replica's records are written the moment it returns, before waiting for the others
            (done,), _ = ray.wait(list(pending), num_returns=1)
            shard, records = pending.pop(done), ray.get(done)
            for question in _questions(records):
                runner.write_question(question[0].task, question)
            for position, record in zip(shard, records, strict=True):
                texts[position] = GenerationText(record.text, record)
    finally:
        if started_ray:
            ray.shutdown()  # as lm-eval does after its replicas: a later call starts afresh
    for summary in runner.summaries.values():
        LOGGER.info(summary.line())
    return texts


def replica_model(lm: Any) -> Any:
    """What a replica needs of lm-eval's ``VLLM`` object, picklable: a shallow copy without the driver's open
    records file."""
    shipped = copy.copy(lm)
    shipped.__dict__.pop("_trac_sink", None)
    return shipped


def run_replica(lm: Any, requests: Sequence[Any], runner_class: type) -> list[Any]:
    """Inside one replica: build the engine from lm-eval's model arguments (without the driver's executor choice,
    as lm-eval's replicas do), run the driver's TrAC runner class (``VllmTracRunner``, passed in so that this
    module does not import the backend that imports it) on this replica's questions, and return their records in
    request order (the driver writes them)."""
    from vllm import LLM

    for name in DRIVER_DATA_PARALLEL_VARIABLES:  # the replica's engine is a single engine (as in lm-eval's replicas)
        os.environ.pop(name, None)
    lm.model = LLM(**{key: value for key, value in lm.model_args.items() if key != "distributed_executor_backend"})
    lm.data_parallel_size = 1
    return [text.record for text in runner_class(lm, sink=_KeptRecords()).run(requests, disable_tqdm=True)]


class _KeptRecords:
    """A replica's record sink: the driver writes the records, so a replica leaves them in its texts."""

    def write(self, records: Sequence[Any]) -> None:
        return None


def _questions(records: Sequence[Any]) -> list[list[Any]]:
    """Consecutive records of the same (task, document): one question's K records."""
    questions: list[list[Any]] = []
    for record in records:
        if questions and (questions[-1][0].task, questions[-1][0].doc_id) == (record.task, record.doc_id):
            questions[-1].append(record)
        else:
            questions.append([record])
    return questions
