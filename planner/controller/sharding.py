"""Sharding Plan objects between controllers, as Flux shards its controllers: a controller started with
`--shard KEY` reconciles only the Plans labelled `planner.dev/shard=KEY`, one started without it only
the Plans without that label. The choice is a label selector on the controller's watch of the Plans, so
a controller never even receives another shard's Plans, and each shard elects its own leader with a
Lease of its own (`planner-controller-KEY`; `planner-controller` for the unlabelled).
"""

from __future__ import annotations

import re

LABEL_SHARD = "planner.dev/shard"
LEASE_NAME = "planner-controller"
# A label value that is also a DNS label, short enough to name the shard's Lease.
_SHARD_KEY = re.compile(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?")


def is_shard_key(key: str) -> bool:
    return _SHARD_KEY.fullmatch(key) is not None


def plan_selector(shard: str | None) -> str:
    """The label selector of the Plans a controller of `shard` (None: unsharded) reconciles."""
    return f"{LABEL_SHARD}={shard}" if shard is not None else f"!{LABEL_SHARD}"


def lease_name(shard: str | None) -> str:
    """The leader-election Lease of `shard`'s controllers."""
    return f"{LEASE_NAME}-{shard}" if shard is not None else LEASE_NAME
