"""Semantic version ranges, as a Git source's `ref.semver` chooses a tag: the highest release tag
(`1.2.3` or `v1.2.3`) in the range. The grammar is the common subset of the npm and Masterminds (Flux)
ranges: comparisons (`>=1.2.0 <2.0.0`, commas or spaces between), wildcards (`1.2.x`, `1.*`, `1.2`),
`~1.2.3` (same minor), `^1.2.3` (same left-most non-zero part), alternatives joined by `||`. A tag with
a pre-release or build suffix never matches: a deployment follows releases.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable

Version = tuple[int, int, int]
Check = Callable[[Version], bool]

_RELEASE = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_COMPARATOR = re.compile(r"(>=|<=|!=|>|<|=|~|\^)?\s*v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?")
_OPERATORS: dict[str, Callable[[Version, Version], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": operator.eq,
    "!=": operator.ne,
}
HINT = "expected a range like '>=1.2.0 <2.0.0', '1.2.x', '~1.2.3' or '^1.2.3'"


def release(tag: str) -> Version | None:
    """The version a release tag names, or None (not a version, or a pre-release)."""
    found = _RELEASE.fullmatch(tag)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def highest(tags: Iterable[str], text: str) -> str | None:
    """The tag of the highest release in the range `text`; None when none is. ValueError for a range
    that does not parse."""
    check = version_range(text)
    chosen: tuple[Version, str] | None = None
    for tag in tags:
        version = release(tag)
        if version is not None and check(version) and (chosen is None or version > chosen[0]):
            chosen = (version, tag)
    return chosen[1] if chosen else None


def version_range(text: str) -> Check:
    """The range `text` as a test of a version; ValueError with the bad range when it does not parse."""
    alternatives = [_conjunction(part.strip(), text) for part in text.split("||")]
    return lambda version: any(check(version) for check in alternatives)


def _conjunction(part: str, whole: str) -> Check:
    checks: list[Check] = []
    rest = part.replace(",", " ").strip()
    if not rest:
        raise ValueError(f"bad semver range {whole!r}: {HINT}")
    while rest:
        found = _COMPARATOR.match(rest)
        if found is None or not found.group(0):
            raise ValueError(f"bad semver range {whole!r} at {rest!r}: {HINT}")
        checks.append(_comparator(found[1] or "=", [found[2], found[3], found[4]]))
        rest = rest[found.end() :].strip()
    return lambda version: all(check(version) for check in checks)


def _comparator(op: str, parts: list[str | None]) -> Check:
    """One comparison; a missing or wildcard part makes `=` (and `~`, `^`) a range over it."""
    numbers: list[int] = []
    for part in parts:
        if part is None or part in ("x", "X", "*"):
            break
        numbers.append(int(part))
    low = (*numbers, *([0] * (3 - len(numbers))))
    floor: Version = (low[0], low[1], low[2])
    if op in _OPERATORS and (len(numbers) == 3 or op not in ("=", "!=")):
        compare = _OPERATORS[op]
        return lambda version: compare(version, floor)
    ceiling = _ceiling(op, numbers)
    inside: Check = lambda version: floor <= version < ceiling  # noqa: E731
    return (lambda version: not inside(version)) if op == "!=" else inside


def _ceiling(op: str, numbers: list[int]) -> Version:
    """The first version past the range `op` and the given parts mean (`=1.2` → 1.3.0, `^0.2.3` →
    0.3.0, `~1.2.3` → 1.3.0)."""
    if not numbers:
        return (1 << 62, 0, 0)
    if op == "^":
        significant = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
        bump = min(significant, len(numbers) - 1)
    elif op == "~":
        bump = min(1, len(numbers) - 1)
    else:
        bump = len(numbers) - 1
    raised = [*numbers[:bump], numbers[bump] + 1]
    padded = (*raised, *([0] * (3 - len(raised))))
    return (padded[0], padded[1], padded[2])
