"""The HF backend's batched path on the CPU (docs/architecture.md#hf-backend): each batch's probes run on the KV cache
its generation left behind, which is released before the next batch, so at most one cache is alive however many
long traces a chunk holds; and the probes on the reused cache find what the same probes computed in full find. A
small randomly initialised Llama (with the tiny model's tokenizer) makes long traces quickly: it rarely writes an end
token."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from trac_metrics.records import iter_records

N_DOCS, K, MAX_GEN_TOKS = 6, 2, 40
TRAC = {
    "answer_kind": "math",
    "reference": "4",
    "probe_variants": ["trace", "teacher_forced", "question_only", "shuffled_trace"],
    "prefix_probes": [0.5],
    "p_true": True,
}
LOGPROB_TOLERANCE = 1e-4
"""Float32 on the CPU: the reused cache and a full computation sum attention in another order."""


@pytest.fixture(scope="module")
def random_llama(tmp_path_factory, tiny_tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tiny_tokenizer.eos_token_id,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    folder = tmp_path_factory.mktemp("random_llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    return folder


def _requests():
    from lm_eval.api.instance import Instance

    requests = []
    for doc_id in range(N_DOCS):
        prompt = "Add the numbers. " * (1 + 8 * (doc_id % 3)) + f"What is {doc_id} + 4?\n"  # lengths 1x to 17x
        instance = Instance(
            "generate_until",
            {"q": doc_id},
            (prompt, {"until": [], "do_sample": False, "max_gen_toks": MAX_GEN_TOKS, "trac": TRAC}),
            idx=0,
            metadata=("batching", doc_id, K),
        )
        instance.repeats = K
        requests.extend([instance] * K)
    return requests


def _run(random_llama, tmp_path, monkeypatch, batch_size):
    """One run of the HF runner at ``batch_size``: its records, the most KV caches alive at any forward pass, the
    model object."""
    from lm_eval.models.huggingface import HFLM

    from trac_tasks.engines.hf_backend import HfTracRunner

    monkeypatch.setenv("TRAC_RECORDS_DIR", str(tmp_path))
    lm = HFLM(pretrained=str(random_llama), device="cpu", dtype="float32", batch_size=batch_size, max_length=1024)
    peak, seen = [0], weakref.WeakSet()

    def count_caches(module, args, kwargs):
        """Every cache is handed to the model at each step it is used: those seen and still alive are live."""
        if kwargs.get("past_key_values") is not None:
            seen.add(kwargs["past_key_values"])
        peak[0] = max(peak[0], len(seen))

    handle = lm.model.register_forward_pre_hook(count_caches, with_kwargs=True)
    try:
        HfTracRunner(lm).run(_requests(), disable_tqdm=True)
    finally:
        handle.remove()
    (path,) = tmp_path.glob("batching.*.jsonl")
    return list(iter_records(path)), peak[0], lm


@pytest.mark.parametrize("batch_size", [1, 4])
def test_live_caches_are_bounded_by_one_batch(random_llama, tmp_path, monkeypatch, batch_size):
    records, peak, lm = _run(random_llama, tmp_path, monkeypatch, batch_size)
    assert sorted((str(record.doc_id), record.repeat) for record in records) == [
        (str(doc), repeat) for doc in range(N_DOCS) for repeat in range(K)
    ]
    long_traces = [record for record in records if record.num_tokens == MAX_GEN_TOKS]
    assert len(long_traces) >= N_DOCS, "the chunk must hold many traces run to the token limit"
    assert peak == 1, f"{peak} KV caches alive at once with --batch_size {batch_size}"
    prompts = {str(doc): request.args[0] for doc, request in enumerate(_requests()[::K])}
    for record in records:
        # the prompt as lm-eval encodes it alone: no padding counted, none in the generated tokens' logprobs
        assert record.prompt_token_count == len(lm.tok_encode(prompts[str(record.doc_id)]))
        assert len(record.token_logprobs) == record.num_tokens == len(record.token_ids)


def test_probes_on_the_reused_cache_find_what_a_full_computation_finds(random_llama, tmp_path, monkeypatch):
    """Every job kind (greedy probes of the trace, a prefix, the question alone and another question's trace,
    teacher forcing, P(True)) on the batch's cache gives the tokens and logprobs computed without any cache."""
    from trac_tasks.engines import hf_backend

    (tmp_path / "reused").mkdir()
    (tmp_path / "full").mkdir()
    reused, _, _ = _run(random_llama, tmp_path / "reused", monkeypatch, 4)
    monkeypatch.setattr(hf_backend, "reusable", lambda cache: False)
    full, _, _ = _run(random_llama, tmp_path / "full", monkeypatch, 4)
    full_by_key = {(str(record.doc_id), record.repeat): record for record in full}
    assert len(reused) == len(full_by_key) == N_DOCS * K
    variants = {probe.variant for record in reused for probe in [*record.probes.values(), *record.prefix_probes]}
    assert variants == {"trace", "question_only", "shuffled_trace", "teacher_forced", "prefix"}
    for record in reused:
        alone = full_by_key[(str(record.doc_id), record.repeat)]
        probes = sorted([*record.probes.values(), *record.prefix_probes], key=lambda probe: probe.variant)
        probes_alone = sorted([*alone.probes.values(), *alone.prefix_probes], key=lambda probe: probe.variant)
        assert [probe.variant for probe in probes] == [probe.variant for probe in probes_alone]
        for probe, probe_alone in zip(probes, probes_alone, strict=True):
            assert probe.token_ids.tolist() == probe_alone.token_ids.tolist(), probe.variant
            assert np.allclose(probe.token_logprobs, probe_alone.token_logprobs, atol=LOGPROB_TOLERANCE)
            assert probe_alone.num_cached_tokens == 0 and probe.num_cached_tokens < probe.num_prompt_tokens
            # a shuffled-trace probe whose partner came in a later batch runs after its own batch's cache is gone
            assert probe.num_cached_tokens > 0 or probe.variant == "shuffled_trace"
        if record.repeat == 0:
            assert abs(record.p_true - alone.p_true) < LOGPROB_TOLERANCE


def test_the_hf_backend_stores_the_vocabulary_mean_of_every_generated_token(random_llama, tmp_path, monkeypatch):
    """docs/method.md#self-certainty: one mean over the whole vocabulary per generated token, at most log(1 / V) (the
    mean of logs is at most the log of the mean), and the full-vocabulary self-certainty scored from it."""
    from trac_metrics.features.evidence import question_evidence

    records, _, lm = _run(random_llama, tmp_path, monkeypatch, batch_size=4)
    vocabulary = lm.model.config.vocab_size
    for record in records:
        means = record.vocabulary_mean_logprob
        assert means is not None and means.shape == record.token_ids.shape
        assert np.all(means <= -np.log(vocabulary) + 1e-4) and np.all(means <= record.token_logprobs + 1e-4)
    primary = [record for record in records if record.repeat == 0][0]
    question = [record for record in records if record.doc_id == primary.doc_id]
    assert question_evidence(question)["baselines"]["self_certainty_full"] == pytest.approx(
        -float(primary.vocabulary_mean_logprob.astype(np.float64).mean())
    )


def test_a_sampled_probe_row_draws_within_its_nucleus_and_a_greedy_row_takes_the_argmax():
    """docs/method.md#probe-decoding-and-cutting: a row at temperature 0 is greedy; a sampled row draws in
    proportion to the tempered probabilities, never outside its top-p nucleus."""
    import torch

    from trac_tasks.engines.hf_probes import next_tokens

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]] * 3))
    temperatures, top_ps = torch.tensor([0.0, 1.0, 1.0]), torch.tensor([1.0, 1.0, 0.6])
    torch.manual_seed(0)
    draws = torch.stack([next_tokens(logits, temperatures, top_ps) for _ in range(4000)])
    assert set(draws[:, 0].tolist()) == {0}, "greedy"
    shares = torch.bincount(draws[:, 1], minlength=4).float() / len(draws)
    assert torch.allclose(shares, torch.tensor([0.5, 0.3, 0.15, 0.05]), atol=0.03)
    assert set(draws[:, 2].tolist()) == {0, 1}, "the nucleus of 0.6 holds the two most likely tokens"
    colder = next_tokens(logits[:1].repeat(4000, 1), torch.full((4000,), 0.1), torch.ones(4000))
    assert (colder == 0).float().mean() > 0.99, "a low temperature is nearly greedy"
