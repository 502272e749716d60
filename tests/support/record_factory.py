"""A seeded generator of realistic TrAC records with a known signal, for tests that need many questions."""

from __future__ import annotations

import dataclasses

import numpy as np

from trac_metrics.records import ProbeRecord, ResponseRecord


def synthetic_question(
    rng: np.random.Generator,
    doc_id: int,
    correct: bool,
    k: int = 4,
    signal: float = 1.0,
    task: str = "synthetic",
    model: str = "synthetic",
    decoding: dict[str, float] | None = None,
) -> list[ResponseRecord]:
    """K records of one question: the primary is right iff ``correct``; probes agree and logprobs are higher for
    correct primaries, by an amount that grows with ``signal`` (0 = no signal)."""
    reference = str(doc_id + 10)
    records = []
    for repeat in range(k):
        right = correct if repeat == 0 else rng.random() < (0.5 + 0.3 * signal * (1 if correct else -1))
        answer = reference if right else str(doc_id + 10 + int(rng.integers(1, 4)))
        n_tokens = int(rng.integers(5, 60))
        shift = signal * (0.5 if right else -0.5)
        logprobs = np.minimum(rng.normal(-1.0 + shift, 0.6, n_tokens), 0.0)
        agree = rng.random() < (0.5 + 0.4 * signal * (1 if right else -1))
        probe_answer = answer if agree else str(int(answer) + 7)
        probe_logprobs = np.minimum(rng.normal(-0.5 + shift, 0.3, 3), 0.0)
        probe = ProbeRecord(
            variant="trace",
            appended_text="\n\nThe final answer is \\boxed{",
            text=f"{probe_answer}}}",
            answer=probe_answer,
            token_ids=np.arange(3),
            token_logprobs=probe_logprobs,
            top_logprobs=np.full((3, 5), -4.0),
            answer_token_count=2,
            finish_reason="stop",
            num_prompt_tokens=100 + n_tokens,
            num_cached_tokens=96,
            context="reasoning",
            context_tokens=n_tokens - 1,
            seconds=0.002 * (1 + rng.random()),
        )
        records.append(
            ResponseRecord(
                task=task,
                doc_id=doc_id,
                repeat=repeat,
                model=model,
                answer_kind="math",
                prompt_token_count=50,
                text=f"Let me think. maybe {answer}. The answer is \\boxed{{{answer}}}",
                answer=answer,
                reference=reference,
                finish_reason="eos",
                top_k=5,
                token_ids=np.arange(n_tokens),
                token_logprobs=logprobs,
                topk_entropy=rng.uniform(0.1, 1.5, n_tokens),
                topk_mean_logprob=logprobs - rng.uniform(1.0, 4.0, n_tokens),
                probes={"trace": probe},
                num_samples=k,
                decoding=dict(decoding or {"temperature": 0.7, "top_p": 0.95, "probe_temperature": 0.0}),
                timing={"generation_seconds": 0.01 * n_tokens},
            )
        )
    return records


def synthetic_task(n_questions: int, seed: int = 0, accuracy: float = 0.5, **kwargs) -> list[list[ResponseRecord]]:
    rng = np.random.default_rng(seed)
    return [synthetic_question(rng, doc_id, rng.random() < accuracy, **kwargs) for doc_id in range(n_questions)]


def with_every_input(records: list[ResponseRecord], rng: np.random.Generator) -> list[ResponseRecord]:
    """The question's records with what the optional methods read added to the primary: P(True) (and its seconds),
    the question-only, shuffled-trace, teacher-forced and after-the-answer probes (docs/method.md#probe-variants), the
    cue variants (docs/method.md#cue-variants),
    prefix probes at 0.25, 0.5 and 0.75 of its trace (docs/method.md#prefix-probes), the full-vocabulary means
    of an HF run (docs/method.md#self-certainty) and where its answer's tokens are (its last two,
    docs/method.md#answer-token-log-probability)."""
    primary, *others = records
    trace = primary.probes["trace"]
    probes = dict(primary.probes)
    contexts = {"question_only": ("question", 0), "after_answer": ("after_answer", primary.num_tokens)}
    for variant in ("question_only", "shuffled_trace", "teacher_forced", "after_answer", "cue_answer", "cue_therefore"):
        context, context_tokens = contexts.get(variant, (trace.context, trace.context_tokens))
        answer = trace.answer if rng.random() < 0.6 else str(int(trace.answer) + 1)
        probes[variant] = dataclasses.replace(
            trace,
            variant=variant,
            answer=answer,
            text=answer + "}",
            seconds=0.003 * (1 + rng.random()),
            token_logprobs=np.minimum(rng.normal(-0.8, 0.4, 3), 0.0),
            finish_reason="teacher_forced" if variant == "teacher_forced" else "stop",
            context=context,
            context_tokens=context_tokens,
        )
    prefix_probes = [
        dataclasses.replace(
            trace,
            variant="prefix",
            answer=(answer := primary.answer if rng.random() < 0.3 + 0.5 * fraction else str(int(trace.answer) + 2)),
            text=answer + "}",
            seconds=0.002 * (1 + rng.random()),
            token_logprobs=np.minimum(rng.normal(-0.6, 0.4, 3), 0.0),
            fraction=fraction,
            trace_tokens=int(fraction * primary.num_tokens),
            context="prefix",
            context_tokens=int(fraction * primary.num_tokens),
        )
        for fraction in (0.25, 0.5, 0.75)
    ]
    primary = dataclasses.replace(
        primary,
        probes=probes,
        prefix_probes=prefix_probes,
        vocabulary_mean_logprob=np.minimum(primary.token_logprobs - rng.uniform(5, 8), -5.0),
        answer_tokens=(primary.num_tokens - 2, primary.num_tokens),
        p_true=float(rng.uniform(0.05, 0.95)),
        timing={**primary.timing, "p_true_seconds": 0.004 * (1 + rng.random())},
    )
    return [primary, *others]
