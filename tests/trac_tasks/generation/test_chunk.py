"""Chunk bookkeeping: questions are never split across chunks, and a question is complete (its records can be
written) only when its K traces and every job they unlocked are done."""

from __future__ import annotations

from types import SimpleNamespace

from trac_tasks.generation.chunk import ChunkState, ProbeJob
from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import _question_aligned_chunks


def test_chunks_never_split_a_question():
    repeats = [0, 1, 2] * 5
    parts = _question_aligned_chunks(repeats, 4)
    assert [(part.start, part.stop) for part in parts] == [(0, 6), (6, 15)]
    assert all(repeats[part.start] == 0 for part in parts)
    # K ≥ the chunk size: still two questions a chunk, so the shuffled-trace probe has a partner
    assert [(part.start, part.stop) for part in _question_aligned_chunks([0, 1, 2, 3] * 3, 4)] == [(0, 12)]
    assert [(part.start, part.stop) for part in _question_aligned_chunks([0, 1] * 5, 2)] == [(0, 4), (4, 10)]
    assert _question_aligned_chunks([], 4) == []


def _chunk(k: int, docs: int) -> ChunkState:
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", "reference": "1"}}, "t")
    requests = [SimpleNamespace(task_name="t", doc_id=doc) for doc in range(docs) for _ in range(k)]
    return ChunkState(requests, [r for _ in range(docs) for r in range(k)], [config] * (docs * k))


def test_a_question_is_complete_after_its_traces_and_jobs():
    chunk = _chunk(k=2, docs=2)
    chunk.traces[0] = "trace"
    job = ProbeJob(0, "trace", "", [1], "reasoning", 0)
    chunk.open([job])
    chunk.traces[1] = "trace"
    assert list(chunk.complete_questions()) == [], "the probe of response 0 is still open"
    chunk.finish_job(job)
    assert list(chunk.complete_questions()) == [(("t", "0"), [0, 1])]
    assert list(chunk.complete_questions()) == [], "each question is reported once"
    chunk.traces[2] = chunk.traces[3] = "trace"
    chunk.waiting_for_partner.add(2)
    assert list(chunk.complete_questions()) == [], "a shuffled-trace probe still waits for its partner"
    chunk.waiting_for_partner.discard(2)
    assert list(chunk.complete_questions()) == [(("t", "1"), [2, 3])]
    assert chunk.unfinished == []
