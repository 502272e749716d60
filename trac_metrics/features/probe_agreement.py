"""The probe's diagnostic row (docs/method.md#probe-agreement): how often the re-elicited answer ã agrees with the
primary answer a on correct and on wrong responses, beside the paper's figures, and which probe the records hold.

A probe that reads the context the paper defines (the reasoning, not the answer written after it,
docs/method.md#probe-prompt) agrees far more often on correct responses than on wrong ones: the paper reports 87.6 %
against 24.7 % across its evaluation matrix. A probe that agrees on nearly every response, correct or wrong, carries no
signal in its agreement, whatever the cause (a probe that reads the answer it is meant to test and copies it, a model
whose answer always restates its trace). Every place that shows the headline shows this row: ``trac summary``,
lm-eval's results (``probe_agree_correct`` / ``probe_agree_wrong``) and end-of-task log line, ``trac report`` and its
page. Pure: evidence dicts in, counts out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trac_metrics.records import AFTER_ANSWER

PAPER_AGREEMENT = (0.876, 0.247)
"""The paper's agreement of ã with a on correct and on incorrect traces, across its evaluation matrix (its section
"Prefix-Conditioned Re-Elicitation")."""
AGREE_CORRECT_KEY, AGREE_WRONG_KEY = "probe_agree_correct", "probe_agree_wrong"
"""The results keys of the two shares (lm-eval's results file, ``trac evaluate``)."""
LEGACY_PROBE_NOTE = (
    "probe after the answer (records of schema trac-record/1: the probe continued the whole reply, the answer it "
    "tests included), not the paper's Q(x, r): PCE, TrAC, TrAC+CF and Supervised Consensus measure that copy"
)
"""What every report says of a pair whose trace probes read the answer (docs/method.md#probe-prompt)."""
UNINFORMATIVE_GAP = 0.1
"""Agreement on wrong responses within this of agreement on correct ones marks the probe's agreement as carrying
(almost) no signal; the paper's gap is 0.629."""
UNINFORMATIVE_NOTE = "no signal in its agreement: the probe agrees on wrong answers about as often as on correct ones"
"""What the page says of a pair whose probe is :attr:`ProbeAgreement.uninformative`."""


@dataclass(frozen=True)
class ProbeAgreement:
    """Agreement counts of the primary's trace probe, over the questions whose e is defined (both a and ã present):
    ``agree_correct`` of ``correct`` correct responses, ``agree_wrong`` of ``wrong`` wrong ones; ``undefined``
    questions had no e (no probe, or a or ã missing). ``reads_answer``: the probes read the answer they test
    (:data:`LEGACY_PROBE_NOTE`)."""

    agree_correct: int = 0
    correct: int = 0
    agree_wrong: int = 0
    wrong: int = 0
    undefined: int = 0
    reads_answer: bool = False

    @property
    def share_correct(self) -> float:
        """Share of correct responses whose ã agrees with a; NaN without one."""
        return self.agree_correct / self.correct if self.correct else math.nan

    @property
    def share_wrong(self) -> float:
        """Share of wrong responses whose ã agrees with a; NaN without one."""
        return self.agree_wrong / self.wrong if self.wrong else math.nan

    @property
    def uninformative(self) -> bool:
        """Whether the probe agrees on wrong responses (nearly) as often as on correct ones
        (:data:`UNINFORMATIVE_GAP`); False when either share is undefined."""
        return self.share_correct - self.share_wrong < UNINFORMATIVE_GAP

    def results(self) -> dict[str, float]:
        """The two shares under their results keys."""
        return {AGREE_CORRECT_KEY: self.share_correct, AGREE_WRONG_KEY: self.share_wrong}

    def line(self) -> str:
        """``probe agreement with the primary answer: 98.4 % of correct (436 of 443), 96.9 % of wrong (346 of 357)
        responses (paper: 87.6 % / 24.7 %)``, with how many had no agreement and, for a probe that read the answer,
        the note saying so."""
        undefined = f"; {self.undefined} without both answers" if self.undefined else ""
        legacy = f"; {LEGACY_PROBE_NOTE}" if self.reads_answer else ""
        counts = (f" ({self.agree_correct} of {self.correct})", f" ({self.agree_wrong} of {self.wrong})")
        return agreement_line(self.share_correct, self.share_wrong, counts) + undefined + legacy


def agreement_line(share_correct: float, share_wrong: float, counts: tuple[str, str] = ("", "")) -> str:
    """The diagnostic row from the two shares (and, when known, their counts written after each)."""
    return (
        f"probe agreement with the primary answer: {format_agreement(share_correct)} of correct{counts[0]}, "
        f"{format_agreement(share_wrong)} of wrong{counts[1]} responses (paper: "
        f"{format_agreement(PAPER_AGREEMENT[0])} / {format_agreement(PAPER_AGREEMENT[1])})"
    )


def format_agreement(share: float) -> str:
    """A share as ``87.6 %``; ``—`` when there is none (NaN)."""
    return "—" if math.isnan(share) else f"{share:.1%}".replace("%", " %")


def probe_agreement(evidences: Iterable[Mapping[str, Any]]) -> ProbeAgreement:
    """The agreement counts of questions' evidence (:func:`~trac_metrics.features.evidence.question_evidence`: its
    ``agree`` e, ``correct`` label and ``probe_context``)."""
    evidences = list(evidences)
    counts = {"agree_correct": 0, "correct": 0, "agree_wrong": 0, "wrong": 0, "undefined": 0}
    for evidence in evidences:
        agree = evidence.get("agree")
        if agree is None or math.isnan(agree):
            counts["undefined"] += 1
            continue
        outcome = "correct" if evidence["correct"] else "wrong"
        counts[outcome] += 1
        counts[f"agree_{outcome}"] += int(agree == 1)
    return ProbeAgreement(**counts, reads_answer=reads_answer(evidences))


def reads_answer(evidences: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any question's trace probe read the answer it tests (a :data:`~trac_metrics.records.LEGACY_SCHEMA`
    record)."""
    return any(evidence.get("probe_context") == AFTER_ANSWER for evidence in evidences)
