"""A user relation for ``--equivalence user_equivalence:never_equivalent`` (docs/architecture.md#command-line),
importable by module name as a user's own module would be."""

from __future__ import annotations


def never_equivalent(answer: str | None, reference: str | None, kind: str) -> bool:
    """Nothing matches anything."""
    return False
