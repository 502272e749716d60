"""The answer checker: extraction, normalization and deterministic answer equivalence
(docs/method.md#answers-and-labels, the answer contract).

Three answer kinds cover the benchmarks (docs/method.md#answer-kinds; formats in docs/method.md#dataset-sources):

- ``"math"``: GSM8K, MATH500, Minerva OCW, OlympiadBench, AIME: numbers, LaTeX expressions, equations, tuples,
  intervals, sets, matrices.
- ``"mc"``: GPQA-Diamond and the option-letter BBH subtasks. The answer is an option letter A–R.
- ``"text"``: the free-form BBH subtasks (True/False, Yes/No, valid/invalid, word lists, numbers, dyck
  sequences).

One module per stage: :mod:`~trac_metrics.answers.extraction` (the final answer of a response),
:mod:`~trac_metrics.answers.normalization` (its canonical string), and the equivalence relation
(:mod:`~trac_metrics.answers.equivalence`) built from the number rule (:mod:`~trac_metrics.answers.numbers`),
structures (:mod:`~trac_metrics.answers.structures`) and the bounded symbolic step
(:mod:`~trac_metrics.answers.symbolic`, Math-Verify). The same normalizer and relation serve the primary answer a,
the probe answer ã (docs/method.md#probe-decoding-and-cutting), the reference a* and the K sampled answers.
"""

from trac_metrics.answers._latex import ANSWER_KINDS
from trac_metrics.answers.equivalence import (
    Equivalence,
    Reference,
    answer_classes,
    equivalent,
    matches_reference,
    reference_aliases,
    use_equivalence,
)
from trac_metrics.answers.extraction import answer_statement_start, extract_answer
from trac_metrics.answers.normalization import normalize_answer
from trac_metrics.answers.symbolic import UNDECIDED_KEY, UndecidedCount, counting_undecided

__all__ = [
    "ANSWER_KINDS",
    "Equivalence",
    "answer_classes",
    "answer_statement_start",
    "counting_undecided",
    "equivalent",
    "extract_answer",
    "matches_reference",
    "normalize_answer",
    "reference_aliases",
    "Reference",
    "UNDECIDED_KEY",
    "UndecidedCount",
    "use_equivalence",
]
