"""Hardening of the method registry: results keys unique by construction, and a method that
reads another's score by name declares it, so the dependency cannot be unregistered under it
(docs/architecture.md#method-registry)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest
from record_factory import synthetic_question

from trac_metrics.features.evidence import question_evidence
from trac_metrics.methods import ACCURACY_KEYS, Family, Method, all_methods, get, register, register_all, unregister
from trac_metrics.selective import METRIC_NAMES


def _colliding_names() -> Iterator[tuple[str, str]]:
    """(new name, results key it would overwrite) for every registered key and accuracy key: each split of the key
    into ``<name>_<metric>`` whose name is a fresh valid method name."""
    keys = [key for method in all_methods() for key in method.results_keys] + list(ACCURACY_KEYS)
    registered = {method.name for method in all_methods()}
    for key in keys:
        for metric in METRIC_NAMES:
            name = key.removesuffix(f"_{metric}")
            if name != key and name not in registered and name[:1].isalpha():
                yield name, key


COLLIDING = sorted(set(_colliding_names()))


def test_the_issue_s_collisions_are_among_the_checked_names() -> None:
    assert ("trac_e", "trac_e_aurc") in COLLIDING
    assert ("mean_logprob_excess", "mean_logprob_excess_aurc") in COLLIDING


@pytest.mark.parametrize(("name", "key"), COLLIDING)
def test_a_name_whose_results_key_is_taken_is_refused(name: str, key: str) -> None:
    before = all_methods()
    copy = dataclasses.replace(get("selfdoubt"), name=name)
    owner = next(method.name for method in before if key in method.results_keys)
    with pytest.raises(ValueError, match=f"'{owner}' and '{name}' would both write the results key '{key}'"):
        register(copy)
    assert all_methods() == before


def test_every_registered_results_key_is_unique_and_no_accuracy_key() -> None:
    keys = [key for method in all_methods() for key in method.results_keys]
    assert len(keys) == len(set(keys)) == len(all_methods()) * len(METRIC_NAMES)
    assert not set(keys) & set(ACCURACY_KEYS)


def test_register_all_is_all_or_nothing() -> None:
    before = all_methods()
    fine = dataclasses.replace(get("selfdoubt"), name="selfdoubt_fine")
    clash = dataclasses.replace(get("selfdoubt"), name="selfdoubt_fine_e")  # selfdoubt_fine_e_aurc: fine's E-AURC
    with pytest.raises(ValueError, match="'selfdoubt_fine' and 'selfdoubt_fine_e'"):
        register_all((fine, clash))
    assert all_methods() == before


# ----------------------------------------------------------------------------- dependencies (issue item 17)


def test_unregistering_a_dependency_is_refused_naming_the_dependants() -> None:
    before = all_methods()
    with pytest.raises(ValueError, match="cannot unregister 'mean_logprob': required by 'sup_consensus'"):
        unregister("mean_logprob")
    with pytest.raises(ValueError, match="cannot unregister 'p_true': required by 'p_true_pce'"):
        unregister("p_true")
    assert all_methods() == before


def test_a_dependant_goes_first_then_its_dependency_may_go() -> None:
    base = register(dataclasses.replace(get("selfdoubt"), name="selfdoubt_base"))
    reader = register(
        Method("reads_base", "Reads base", Family.HEAD, base.cost, features=lambda e: [0.0], requires=(base.name,))
    )
    try:
        with pytest.raises(ValueError, match="required by 'reads_base'"):
            unregister(base.name)
    finally:
        unregister(reader.name)
        unregister(base.name)
    assert base.name not in {method.name for method in all_methods()}


def test_a_method_requiring_an_unregistered_one_is_refused() -> None:
    head = Method("needs_nope", "Needs", Family.HEAD, get("tup").cost, features=lambda e: [0.0], requires=("nope",))
    with pytest.raises(ValueError, match="'needs_nope' requires 'nope': not registered"):
        register(head)
    with pytest.raises(ValueError, match="cannot require itself"):
        dataclasses.replace(head, requires=("needs_nope",))


class _Recording(dict):
    """A baselines dict that records which method scores are read."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def test_every_head_declares_the_method_scores_it_reads() -> None:
    records = synthetic_question(np.random.default_rng(0), 0, True, k=4)
    records[0] = dataclasses.replace(records[0], p_true=0.7)
    evidence = question_evidence(records)
    methods = {method.name for method in all_methods()}
    for method in all_methods():
        if method.family is Family.HEAD:
            baselines = _Recording(evidence["baselines"])
            method.features({**evidence, "baselines": baselines})
            assert baselines.read & methods <= set(method.requires), method.name
