"""The hint after a misspelt name: the closest known name, then the names it could have been."""

from __future__ import annotations

import pytest

from planner.plan.suggest import hint

NAMES = [f"worker-{i:02d}" for i in range(12)]


@pytest.mark.parametrize(
    ("word", "known", "limit", "expected"),
    [
        ("migrte", ["migrate", "web"], None, ' (did you mean "migrate"? defined: migrate, web)'),
        ("db", ["migrate", "web"], None, " (defined: migrate, web)"),
        ("db", [], None, ""),
        (
            "wroker-07",
            NAMES,
            10,
            ' (did you mean "worker-07"? defined: ' + ", ".join(NAMES[:10]) + " and 2 more)",
        ),
    ],
    ids=[
        "a close name is suggested before the list",
        "nothing close: only the list",
        "nothing defined: no hint at all",
        "a long list stops at the limit and counts the rest",
    ],
)
def test_the_hint(word: str, known: list[str], limit: int | None, expected: str) -> None:
    assert hint(word, known, listing="defined", limit=limit) == expected
