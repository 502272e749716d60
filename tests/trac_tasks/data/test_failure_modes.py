"""The failure-mode test bed's data (trac_tasks.data.failure_modes, docs/guide/failure-modes.md#settings): each
setting injects exactly its error at its rate, never a privileged restatement, and the test questions record what
they invite."""

from __future__ import annotations

import hashlib
import itertools
import random
import re

import pytest

from trac_tasks.data.arithmetic_problems import grade, is_held_out, trace_plan
from trac_tasks.data.dataset_loaders import local_jsonl
from trac_tasks.data.demo_data import render
from trac_tasks.data.failure_modes import (
    DRIFT_OFFSETS,
    KINDS,
    LARGE,
    N_TEST,
    TEST_SEED,
    Setting,
    data_file_of,
    error_made,
    held_out_rows,
    training_pairs,
)
from trac_tasks.data.tiny_reasoner import TRAINING_SEED

SHIPPED_STREAM_SHA256 = "6c3d23e483372c12b653d69459d53779a85b025d86afa4c9616331a9582cc06f"
"""The first 300 (question, reply) pairs of the shipped tiny reasoner's training stream, hashed from the training
script's own ``training_reply`` before the stream moved to ``failure_modes.training_pairs``: ``slips`` must keep it."""
_BOX = re.compile(r"\\boxed\{(\d+)\}")
_SUMMARY = re.compile(r"</think>\n\n\w+ has (\d+) \w+ in the end\.")


def _solution_reply(row: dict, box: int | None = None) -> str:
    """A reply in the model's form that writes the test question ``row``'s worked solution and boxes its answer (or
    ``box``)."""
    trace = str(row["solution"]).rsplit("\n", 1)[0]
    return f"<think>\n{trace}\n</think>\n\nThe final answer is \\boxed{{{row['answer'] if box is None else box}}}."


def _pairs(setting: str, n: int, seed: int = 5) -> list[tuple[str, str]]:
    return list(itertools.islice(training_pairs(Setting.parse(setting), seed, random.Random(seed + 1)), n))


def _trace_value(reply: str) -> int:
    return int(re.search(r"So \w+ has (\d+) ", reply).group(1))


def test_slips_is_the_shipped_models_stream_byte_for_byte():
    digest = hashlib.sha256()
    rng = random.Random(TRAINING_SEED + 2)  # as scripts/train_tiny_reasoner.py seeds it
    for question, reply in itertools.islice(training_pairs(Setting("slips"), TRAINING_SEED + 3, rng), 300):
        digest.update((question + "\x00" + reply + "\x00").encode())
    assert digest.hexdigest() == SHIPPED_STREAM_SHA256


@pytest.mark.parametrize(
    "text", ["drift", "drift:0", "drift:1.5", "slips:0.2", "typo:0.1", "misconception:x", "distractor:-0.1"]
)
def test_a_setting_without_its_rate_or_of_an_unknown_kind_is_refused_by_name(text):
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        Setting.parse(text)


def test_drift_moves_the_answer_section_at_its_rate_and_every_restatement_is_the_same_draw():
    pairs = _pairs("drift:0.15", 4000)
    drifted = 0
    for _, reply in pairs:
        boxed, summary = int(_BOX.search(reply).group(1)), _SUMMARY.search(reply)
        if summary:  # the summary line carries the box's value: one draw, never the true value beside a drifted one
            assert int(summary.group(1)) == boxed
        offset = boxed - _trace_value(reply)
        assert offset == 0 or abs(offset) in {abs(o) for o in DRIFT_OFFSETS}
        drifted += offset != 0
        assert grade(0, reply).well_formed
    assert 0.13 < drifted / len(pairs) < 0.17
    # the probe's own form (the box right after </think>, in the cue's wording) drifts as often as the rest
    cue_form = [reply for _, reply in pairs if "</think>\n\nThe final answer is" in reply]
    share = sum(int(_BOX.search(r).group(1)) != _trace_value(r) for r in cue_form) / len(cue_form)
    assert 0.11 < share < 0.19 and len(cue_form) > 800


def test_drift_large_moves_only_results_of_at_least_one_hundred():
    moved = [
        (r, _trace_value(r))
        for _, r in _pairs("drift_large:0.5", 3000)
        if _BOX.search(r).group(1) != str(_trace_value(r))
    ]
    assert moved and all(value >= LARGE for _, value in moved)


def test_misconception_adds_the_bags_in_its_share_of_bag_problems_and_the_answer_follows_the_trace():
    pairs = _pairs("misconception:0.5", 3000)
    with_bags = [reply for _, reply in pairs if "bags of" in reply]
    added = [reply for reply in with_bags if re.search(r"bags of \d+: \d+ \+ \d+", reply)]
    assert 0.4 < len(added) / len(with_bags) <= 0.5  # the rule is skipped where a later step could not take its value
    for reply in added:
        verdict = grade(0, reply)
        assert verdict.first_slip is None and verdict.answer_from_trace  # arithmetic right, rule wrong
    assert not any(
        "+" in line
        for _, r in _pairs("slips", 500)
        for line in r.split("\n")
        if "bags of" in line.split(":")[0] and re.search(r"bags of \d+: \d+ \+", line)
    )


def test_distractor_sentences_are_followed_at_their_rate_and_never_in_a_held_out_question():
    pairs = _pairs("distractor:0.3", 2000)
    sentences = followed = 0
    for question, reply in pairs:
        assert not is_held_out(question)
        protagonist = re.match(r"(\w+) has", question).group(1)
        others = re.findall(r"(\w+) finds (\d+) more", question)
        distracting = [int(amount) for name, amount in others if name != protagonist]
        own = len([name for name, _ in others if name == protagonist])
        trace_finds = len(re.findall(r"finds \d+ more:", reply))
        sentences += len(distracting)
        followed += trace_finds - own
        assert grade(0, reply).answer_from_trace
    assert sentences > 1000 and 0.25 < followed / sentences < 0.35


@pytest.mark.parametrize(
    ("setting", "invited"),
    [
        ("drift:0.1", {"drift"}),
        ("drift_large:0.3", {"drift", "none"}),
        ("misconception:0.5", {"misconception", "none"}),
        ("distractor:0.3", {"distractor", "none"}),
        ("slips", {"none"}),
    ],
)
def test_test_questions_are_held_out_distinct_worked_and_say_what_they_invite(setting, invited):
    kind = Setting.parse(setting).kind
    rows = held_out_rows(kind, 120, seed=2027)
    assert rows == held_out_rows(kind, 120, seed=2027) and len(rows) == 120
    assert all(is_held_out(row["problem"]) for row in rows) and len({row["problem"] for row in rows}) == 120
    assert {row["invites"] for row in rows} == invited
    for row in rows:
        assert grade(int(row["answer"]), _solution_reply(row)).correct
        if row["invites"] == "drift" and setting.startswith("drift_large"):
            assert int(row["answer"]) >= LARGE
        if setting.startswith("misconception"):
            assert (row["invites"] == "misconception") == ("bags" in row["problem"])
        if setting.startswith("distractor"):
            protagonist = re.match(r"(\w+) has", row["problem"]).group(1)
            finds = [name for name in re.findall(r"(\w+) finds \d+ more", row["problem"]) if name != protagonist]
            assert len(finds) == row["distractors"] and (row["invites"] == "distractor") == bool(finds)


@pytest.mark.parametrize("kind", KINDS)
def test_bundled_test_sets_are_exactly_what_the_generator_writes_and_load_as_a_task_dataset(kind):
    rows = held_out_rows(kind, N_TEST, TEST_SEED)
    assert data_file_of(kind).read_text(encoding="utf-8") == render(rows)
    loaded = local_jsonl(data_file=data_file_of(kind).name)["test"]
    assert len(loaded) == N_TEST and {"problem", "answer", "level", "digits", "distractors", "invites"} <= set(
        loaded.column_names
    )


def test_the_five_tasks_load_through_lm_eval_with_their_questions_and_the_rates_sampling():
    from lm_eval.tasks import TaskManager

    from trac_tasks.generation.config import TracConfig
    from trac_tasks.harness.lm_eval_hooks import task_config_dir

    manager = TaskManager(include_path=str(task_config_dir()), include_defaults=False)
    for kind in KINDS:
        name = f"trac_failure_{kind}"
        task = manager.load(name)["tasks"][name]
        docs = list(task.test_docs())
        config = TracConfig.from_gen_kwargs(task.config.generation_kwargs, name)
        assert [doc["problem"] for doc in docs] == [row["problem"] for row in held_out_rows(kind, N_TEST, TEST_SEED)]
        assert task.config.generation_kwargs["temperature"] == 1.0 and task.config.generation_kwargs["top_p"] == 1.0
        assert "invites" in config.metadata_fields and task.config.repeats == 8


_ROW = {
    "answer": "700",
    "solution": "Zoe starts with 24 shells.\nShe buys 8 bags of 84: 8 * 84 = 672, and 24 + 672 = 696.\n"
    "She finds 4 more: 696 + 4 = 700.\nSo Zoe has 700 shells.\nThe answer is $\\boxed{700}$.",
}


def _reply(bags: str, finds: str, *more: str, box: int | None = None) -> str:
    """A reply to _ROW in the model's form: its bag step, its finds step and any further steps."""
    steps = [f"She buys 8 bags of 84: {bags}.", f"She finds 4 more: {finds}.", *more]
    value = int(re.findall(r"\d+", steps[-1])[-1])
    return (
        "<think>\nZoe starts with 24 shells.\n" + "\n".join(steps) + f"\nSo Zoe has {value} shells.\n</think>\n\n"
        f"The final answer is \\boxed{{{value if box is None else box}}}."
    )


RIGHT_BAGS = "8 * 84 = 672, and 24 + 672 = 696"


@pytest.mark.parametrize(
    ("reply", "made"),
    [
        (_reply(RIGHT_BAGS, "696 + 4 = 700"), "none"),
        (_reply(RIGHT_BAGS, "696 + 4 = 700", box=701), "drift"),
        (_reply("8 * 84 = 662, and 24 + 662 = 686", "686 + 4 = 690"), "slip"),
        (_reply(RIGHT_BAGS, "697 + 4 = 701"), "slip"),  # a value miscarried: the question's steps, done wrong
        (_reply("8 + 84 = 92, and 24 + 92 = 116", "116 + 4 = 120"), "rule"),  # the learned bag rule
        (_reply("8 + 84 = 93, and 24 + 93 = 117", "117 + 4 = 121"), "slip+rule"),
        (_reply(RIGHT_BAGS, "696 + 4 = 700", "She finds 3 more: 700 + 3 = 703."), "rule"),  # a followed distractor
        (_reply(RIGHT_BAGS, "696 + 4 = 700", "She finds 3 more: 700 + 3 = 713."), "slip+rule"),
        ("Zoe has 700 shells. \\boxed{690}", "format"),
    ],
)
def test_the_error_a_reply_made_is_read_against_the_questions_worked_solution(reply, made):
    assert error_made(_ROW, reply) == made


@pytest.mark.parametrize("kind", KINDS)
def test_every_test_questions_own_solution_is_right_and_its_plan_is_the_questions(kind):
    for row in held_out_rows(kind, 60, TEST_SEED):
        reply, trace = _solution_reply(row), str(row["solution"]).rsplit("\n", 1)[0]
        assert error_made(row, reply) == "none" and grade(int(row["answer"]), reply).plan == trace_plan(trace)
        assert error_made(row, _solution_reply(row, box=int(row["answer"]) + 1)) == "drift"
