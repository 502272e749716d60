"""A vLLM release without the engine step API: the runner falls back to the public ``LLM.generate`` (jobs after
each chunk) and writes the same records. The real in-process engine and the tiny model; only the step API is hidden
(a newer release cannot be installed here)."""

from __future__ import annotations

import pytest

from trac_metrics.records import iter_records
from trac_tasks.generation.capture import RecordSink
from trac_tasks.generation.config import DEFAULT_CUE

pytestmark = pytest.mark.engine

N_DOCS, K = 3, 2
TRAC = {
    "answer_kind": "math",
    "reference": "4",
    "probe_variants": ["trace", "question_only", "shuffled_trace", "teacher_forced"],
    "p_true": True,
}


class _WithoutStepApi:
    """The ``vllm.LLM`` object as a release without ``llm_engine`` would present it."""

    def __init__(self, llm):
        self._llm = llm

    def __getattr__(self, name):
        if name == "llm_engine":
            raise AttributeError(name)
        return getattr(self._llm, name)


def _requests():
    from lm_eval.api.instance import Instance

    requests = []
    for doc_id in range(N_DOCS):
        instance = Instance(
            "generate_until",
            {"q": doc_id},
            (
                f"What is {doc_id} + 4? Answer in \\boxed{{}}.\n",
                {"until": [], "do_sample": True, "temperature": 0.7, "top_p": 0.95, "max_gen_toks": 24, "trac": TRAC},
            ),
            idx=0,
            metadata=("fallback", doc_id, K),
        )
        instance.repeats = K
        requests.extend([instance] * K)
    return requests


@pytest.fixture(scope="module")
def lm(tiny_model):
    from lm_eval.models.vllm_causallms import VLLM

    import trac_tasks.harness.autoload  # noqa: F401  (installs the backend hook, as the .pth file does)

    model = VLLM(
        pretrained=str(tiny_model),
        dtype="bfloat16",
        max_model_len=1024,
        enable_prefix_caching=True,
        block_size=32,
        enforce_eager=True,
        distributed_executor_backend="uni",
        seed=1234,
    )
    yield model
    del model


def _run(lm, tmp_path, hide_step_api: bool):
    from trac_tasks.engines.vllm_backend import VllmTracRunner

    llm = lm.model
    if hide_step_api:
        lm.model = _WithoutStepApi(llm)
    try:
        runner = VllmTracRunner(lm)
        runner.sink = RecordSink(tmp_path)
        texts = runner.run(_requests(), disable_tqdm=True)
    finally:
        lm.model = llm
    (path,) = tmp_path.glob("fallback.*.jsonl")
    return texts, sorted(iter_records(path), key=lambda record: record.key)


def test_the_fallback_writes_the_same_records_as_the_step_loop(lm, tmp_path):
    (tmp_path / "stream").mkdir()
    (tmp_path / "fallback").mkdir()
    _, streamed = _run(lm, tmp_path / "stream", hide_step_api=False)
    texts, fallback = _run(lm, tmp_path / "fallback", hide_step_api=True)
    cue_tokens = len(lm.tokenizer(DEFAULT_CUE, add_special_tokens=False).input_ids)
    assert [record.key for record in fallback] == [record.key for record in streamed]
    assert sorted(texts) == sorted(record.text for record in fallback)
    for record, reference in zip(fallback, streamed, strict=True):
        assert record.prompt_token_count == reference.prompt_token_count
        assert set(record.probes) == set(reference.probes)
        expected = {"trace", "question_only", "shuffled_trace", "teacher_forced"} if record.repeat == 0 else {"trace"}
        assert set(record.probes) == expected
        assert (record.p_true is not None) == (record.repeat == 0)
        trace_probe = record.probes["trace"]
        body = record.num_tokens - (record.finish_reason == "eos")
        assert trace_probe.num_prompt_tokens == record.prompt_token_count + body + cue_tokens
        assert 0 < len(trace_probe.token_ids) <= 16 and trace_probe.seconds > 0
        assert record.timing["generation_seconds"] > 0
