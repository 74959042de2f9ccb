"""What to say about a name a plan misspelt: the closest name it could have meant (difflib's ratio, as
Python's own "Did you mean" does) and the names it could have written, so the fix is in the message."""

from __future__ import annotations

import difflib
from collections.abc import Collection


def hint(word: str, known: Collection[str], *, listing: str, limit: int | None = None) -> str:
    """` (did you mean "image"? expected one of: name, image, …)`: the closest of `known` when one is
    close enough, then `listing` and the known names in their order (at most `limit` of them, saying how
    many more); nothing when there are none."""
    if not known:
        return ""
    names = list(known)
    shown = ", ".join(names[:limit])
    if limit is not None and len(names) > limit:
        shown += f" and {len(names) - limit:,} more"
    close = difflib.get_close_matches(word, names, n=1)
    guess = f'did you mean "{close[0]}"? ' if close else ""
    return f" ({guess}{listing}: {shown})"
