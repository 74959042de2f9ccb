"""The `sandbox` commands on warm-pool members and activity: `claim` a ready member of a pool,
`release` it, `touch` any sandbox. Names are what a user knows a sandbox by: the owner it was claimed
for, else its own name; the namespace is `-n` or the context's."""

from __future__ import annotations

from planner.app.target import Target
from planner.monitor import lifecycle, pool_members
from planner.render.identity import RuntimeID


def claim_sandbox(pool: str, owner: str, *, target: Target) -> RuntimeID:
    return pool_members.claim(target.client, target.default_namespace(), pool, owner)


def release_sandbox(owner: str, *, target: Target, allow_data_loss: bool) -> lifecycle.Outcome:
    return pool_members.release(
        target.client, target.default_namespace(), owner, allow_data_loss=allow_data_loss
    )


def touch_sandbox(name: str, *, target: Target) -> lifecycle.Outcome:
    rid = pool_members.sandbox_named(target.client, target.default_namespace(), name)
    return lifecycle.touch(target.client, rid)
