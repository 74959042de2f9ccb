"""A warm pool's arithmetic: given its declared size and the members found, which to create and which
to delete.

Only unclaimed members count toward the size; a claimed member is its claimant's, so it is never
deleted here. An unclaimed member whose Pod is gone (deleted by someone, evicted) is repaired: its
objects are created again under its name, so its PVCs are used rather than leaked. When the pool shrinks, the newest unclaimed members go first (the oldest have had the
longest to become ready). Member names are `<pool>-<5 random characters>`, like Kubernetes'
`generateName`, chosen here so a member's Pod and PVCs share one name.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName alphabet: no vowels, no 0/1/3
SUFFIX_LENGTH = 5


@dataclass(frozen=True, kw_only=True)
class Member:
    """One pool member as found in the cluster. `created` is its RFC 3339 creationTimestamp, which
    sorts chronologically as text."""

    name: str
    claimed: bool
    created: str
    has_pod: bool = True


@dataclass(frozen=True, kw_only=True)
class PoolChanges:
    create: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    repair: tuple[str, ...] = ()  # unclaimed members whose Pod is gone, to create again


def random_suffix(length: int = SUFFIX_LENGTH) -> str:
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(length))


def member_name(pool: str, suffix: str) -> str:
    return f"{pool}-{suffix}"


def pool_changes(
    pool: str, size: int, members: Iterable[Member], *, suffix: Callable[[], str] = random_suffix
) -> PoolChanges:
    """What brings the pool back to `size` unclaimed members: new names to create, or the newest
    unclaimed names to delete. Claimed members are never deleted and never counted."""
    found = list(members)
    unclaimed = sorted((m for m in found if not m.claimed), key=lambda m: (m.created, m.name))
    if len(unclaimed) > size:
        surplus = unclaimed[size:]
        repair = tuple(m.name for m in unclaimed[:size] if not m.has_pod)
        return PoolChanges(delete=tuple(m.name for m in reversed(surplus)), repair=repair)
    repair = tuple(m.name for m in unclaimed if not m.has_pod)
    taken = {m.name for m in found}
    names: list[str] = []
    while len(names) < size - len(unclaimed):
        name = member_name(pool, suffix())
        if name not in taken:
            taken.add(name)
            names.append(name)
    return PoolChanges(create=tuple(names), repair=repair)
