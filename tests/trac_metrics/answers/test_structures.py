"""Structured answers (trac_metrics.answers.structures, docs/method.md#answers-and-labels): matrices entry by entry."""

from __future__ import annotations

import pytest

from trac_metrics.answers import equivalent

MATRICES = [
    # (a, b, expected); every pair is checked in both argument orders
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}", r"\begin{pmatrix}-1/3\\2/3\\5/3\end{pmatrix}", True),
    (r"\begin{pmatrix} 1/2 \\ 1 \end{pmatrix}", r"\begin{pmatrix} \frac{1}{2} \\ 1 \end{pmatrix}", True),
    (r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}", r"\begin{bmatrix}-1&0\\0&-1\end{bmatrix}", True),
    (r"\begin{matrix} 1 & 2 \end{matrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}", True),
    (r"\begin{pmatrix} \sqrt{2} \\ \pi/2 \end{pmatrix}", r"\begin{pmatrix}2^{1/2}\\\frac{\pi}{2}\end{pmatrix}", True),
    (r"\begin{pmatrix} 1 \\ 2 \\ \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", True),  # final \\ allowed
    (r"\mathbf{v} = \begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", True),
    (r"\begin{pmatrix} 0.3333333 \\ 1 \end{pmatrix}", r"\begin{pmatrix} 1/3 \\ 1 \end{pmatrix}", True),
    (r"\begin{pmatrix} -1/3 \\ 2/3 \\ 5/3 \end{pmatrix}", r"\begin{pmatrix} -1/3 \\ 2/3 \\ 4/3 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1000000 \\ 1 \end{pmatrix}", r"\begin{pmatrix} 1000001 \\ 1 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 2 \\ 1 \end{pmatrix}", False),  # ordered
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \end{pmatrix}", False),  # column vs row
    (r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 & 3 & 4 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{pmatrix} 1 & 2 \\ 3 \end{pmatrix}", False),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", "(1,2)", False),  # a matrix is not a tuple
    (r"\begin{vmatrix} 1 & 2 \\ 3 & 4 \end{vmatrix}", r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", False),
]


@pytest.mark.parametrize(("a", "b", "expected"), MATRICES)
def test_matrices_compare_entry_by_entry(a: str, b: str, expected: bool) -> None:
    assert equivalent(a, b) is expected
    assert equivalent(b, a) is expected
