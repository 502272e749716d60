"""The ``trac`` block of a task (trac_tasks.generation.config, docs/architecture.md#generation): strict switch
types, finite sampling values, and template failures and null references refused by the document check."""

from __future__ import annotations

import pytest

from trac_tasks.generation.config import TracConfig
from trac_tasks.generation.runner import validate_documents


def _config(gen_kwargs: dict | None = None, **switches) -> TracConfig:
    block = {"answer_kind": "math", "reference": "{{answer}}", **switches}
    return TracConfig.from_gen_kwargs({**(gen_kwargs or {}), "trac": block}, "my_task")


@pytest.mark.parametrize(
    ("switches", "message"),
    [
        ({"top_k": 5.5}, "trac.top_k must be an integer, got 5.5"),
        ({"top_k": "5"}, "trac.top_k must be an integer, got '5'"),
        ({"top_k": True}, "trac.top_k must be an integer, got True"),
        ({"top_k": None}, "trac.top_k must be an integer, got None"),
        ({"marker": 3}, "trac.marker must be a string, got 3"),
        ({"cue": 5}, "trac.cue must be a string, got 5"),
        ({"reference": 5}, "trac.reference must be a string or a non-empty list of strings, got 5"),
        ({"answer_kind": None}, "trac.answer_kind must be a string, got None"),
        ({"p_true": "false"}, "trac.p_true must be true or false, got 'false'"),
        ({"probe_variants": None}, "trac.probe_variants must be a list of strings, got None"),
        ({"probe_variants": "trace"}, "trac.probe_variants must be a list of strings, got 'trace'"),
        ({"metadata_fields": None}, "trac.metadata_fields must be a list of strings, got None"),
        ({"metadata_fields": ["level", 2]}, "trac.metadata_fields must be a list of strings"),
        ({"labels": True}, "trac.labels must be a string, got True"),
        ({"labels": "sympy"}, "trac.labels must be one of ('trac', 'math-verify'), got 'sympy'"),
        (
            {"labels": "math-verify", "label_source": "exact_match,strict-match"},
            "trac.labels 'math-verify' labels the answers with math-verify's verdict, but this task's labels come",
        ),
        ({"prefix_probes": 0.5}, "trac.prefix_probes must be a list of numbers, got 0.5"),
        ({"prefix_probes": ["0.5"]}, "trac.prefix_probes must be a list of numbers, got ('0.5',)"),
        ({"prefix_probes": [True]}, "trac.prefix_probes must be a list of numbers, got (True,)"),
        ({"prefix_probes": [float("nan")]}, "trac.prefix_probes must be a list of numbers, got (nan,)"),
        ({"prefix_probes": [0.5, 1]}, "trac.prefix_probes must be fractions strictly between 0 and 1, got [1]"),
        ({"prefix_probes": [0, 0.5]}, "trac.prefix_probes must be fractions strictly between 0 and 1, got [0]"),
        ({"prefix_probes": [0.5, 0.25]}, "trac.prefix_probes must be strictly increasing (sorted, no repeats)"),
        ({"prefix_probes": [0.5, 0.5]}, "trac.prefix_probes must be strictly increasing (sorted, no repeats)"),
        ({"probe_temperature": -0.1}, "trac.probe_temperature must be a finite number >= 0, got -0.1"),
        ({"probe_temperature": "0.7"}, "trac.probe_temperature must be a finite number >= 0, got '0.7'"),
        ({"probe_temperature": float("inf")}, "trac.probe_temperature must be a finite number >= 0, got inf"),
        ({"probe_temperature": True}, "trac.probe_temperature must be a finite number >= 0, got True"),
    ],
)
def test_a_switch_of_the_wrong_type_names_the_task_and_the_switch(switches, message):
    with pytest.raises(ValueError, match="^task my_task: ") as error:
        _config(**switches)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("gen_kwargs", "message"),
    [
        ({"temperature": float("nan")}, "generation_kwargs.temperature must be a finite number ≥ 0, got nan"),
        ({"temperature": "0.7"}, "generation_kwargs.temperature must be a finite number ≥ 0, got '0.7'"),
        ({"temperature": -1.0}, "generation_kwargs.temperature must be a finite number ≥ 0"),
        ({"top_p": float("nan")}, "generation_kwargs.top_p must be a number in (0, 1], got nan"),
        ({"top_p": 0}, "generation_kwargs.top_p must be a number in (0, 1], got 0"),
    ],
)
def test_a_sampling_value_that_is_not_a_finite_number_is_refused(gen_kwargs, message):
    with pytest.raises(ValueError, match="^task my_task: ") as error:
        _config(gen_kwargs)
    assert message in str(error.value)


def test_well_typed_switches_are_kept():
    config = _config(
        {"temperature": 0, "top_p": 1.0}, top_k=3, p_true=True, probe_variants=["trace"], metadata_fields=["level"]
    )
    kept = (config.top_k, config.p_true, config.probe_variants, config.metadata_fields)
    assert kept == (3, True, ("trace",), ("level",))
    assert (_config().labels, _config(labels="math-verify").labels) == ("trac", "math-verify")
    assert (_config().prefix_probes, _config(prefix_probes=[0.25, 0.5, 1 / 3 + 0.5]).prefix_probes) == (
        (),
        (0.25, 0.5, 1 / 3 + 0.5),
    )


class _Request:
    def __init__(self, doc_id: int, doc: dict) -> None:
        self.task_name, self.doc_id, self.doc = "t", doc_id, doc


def _check(reference: str, docs: list[dict]) -> str:
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "math", "reference": reference}}, "t")
    with pytest.raises(ValueError, match="^task t, document 1: ") as error:
        validate_documents([_Request(i, doc) for i, doc in enumerate(docs)], [config] * len(docs))
    return str(error.value)


@pytest.mark.parametrize("empty", [None, "", "  "])
def test_a_reference_that_renders_empty_is_refused_naming_the_document(empty):
    message = _check("{{answer}}", [{"answer": "4"}, {"answer": empty}])
    assert "trac.reference template '{{answer}}' renders to an empty reference" in message


@pytest.mark.parametrize(
    ("failing", "error"),
    [
        ("{{ (answer|int)/0 }}", "ZeroDivisionError: division by zero"),
        ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "RecursionError"),
        ("{{ answer.strip(1, 2, 3) }}", "TypeError"),
    ],
)
def test_any_template_failure_is_one_error_naming_task_template_and_document(failing, error):
    template = "{{answer}}{% if answer == '5' %}" + failing + "{% endif %}"
    message = _check(template, [{"answer": "4"}, {"answer": "5"}])
    assert f"trac.reference template {template!r} cannot be rendered" in message and error in message


@pytest.mark.parametrize(
    ("reference", "doc", "expected"),
    [
        ("{{answer.aliases}}", {"answer": {"aliases": [" 10", "10.0", "10", ""]}}, ("10", "10.0")),
        ("{{ aliases }}", {"aliases": ["Paris"]}, "Paris"),
        (["ten", "10"], {}, ("ten", "10")),
        ("{{answer}} km", {"answer": ["5"]}, "['5'] km"),  # a template with text around is rendered as text
    ],
    ids=["list field", "one alias", "literal aliases", "text template"],
)
def test_a_reference_that_is_a_list_gives_its_aliases(reference, doc, expected):
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "text", "reference": reference}}, "my_task")
    assert config.render_reference(doc) == expected


def test_a_list_reference_of_no_alias_is_refused():
    with pytest.raises(ValueError, match="must be a string or a non-empty list of strings"):
        TracConfig.from_gen_kwargs({"trac": {"answer_kind": "text", "reference": []}}, "my_task")
    config = TracConfig.from_gen_kwargs({"trac": {"answer_kind": "text", "reference": "{{aliases}}"}}, "my_task")
    with pytest.raises(ValueError, match="renders to an empty reference"):
        config.render_reference({"aliases": ["", " "]})
