"""Which Plans a controller's shard watches, and its Lease: selectors and names by hand."""

from __future__ import annotations

import pytest

from planner.controller.settings import controller_options
from planner.controller.sharding import is_shard_key, lease_name, plan_selector
from planner.errors import UsageError


def test_a_shard_selects_its_label_and_the_unsharded_the_plans_without_it() -> None:
    assert plan_selector("eu-1") == "planner.dev/shard=eu-1"
    assert plan_selector(None) == "!planner.dev/shard"
    assert lease_name("eu-1") == "planner-controller-eu-1"
    assert lease_name(None) == "planner-controller"


@pytest.mark.parametrize(
    ("key", "valid"),
    [("a", True), ("shard-2", True), ("a" * 40, True), ("a" * 41, False), ("Eu", False),
     ("-a", False), ("a-", False), ("a_b", False), ("a.b", False), ("", False)],
)  # fmt: skip
def test_a_shard_key_is_a_short_dns_label(key: str, valid: bool) -> None:
    assert is_shard_key(key) is valid


FLAGS = {
    "watch_namespace": None,
    "interval": 300.0,
    "resync": 30.0,
    "poll": 2.0,
    "listen": "127.0.0.1:0",
    "web_listen": None,
    "progress_deadline": 600.0,
    "leader_elect": False,
    "lease_namespace": None,
    "lease_duration": 15.0,
    "renew_deadline": 10.0,
    "retry_period": 2.0,
}


def test_shard_and_concurrent_reach_the_options_and_bad_shards_are_refused() -> None:
    options = controller_options(plans=(), shard="b", concurrent=8, **FLAGS)
    assert (options.shard, options.concurrent) == ("b", 8)
    with pytest.raises(UsageError, match="--shard selects Plan objects; it cannot be used with --plans"):
        controller_options(plans=("plans/",), shard="b", **FLAGS)
    with pytest.raises(UsageError, match="--shard 'B_1': a shard key is at most 40 lowercase"):
        controller_options(plans=(), shard="B_1", **FLAGS)
