"""deploy/shards.yaml: three shard controllers that are deploy/deployment.yaml's but for their name,
their app label and `--shard`, so a change of the one is never forgotten in the others."""

from __future__ import annotations

import copy
from typing import Any

from ruamel.yaml import YAML

from tests.paths import REPO


def load_all(name: str) -> list[dict[str, Any]]:
    return [doc for doc in YAML(typ="safe").load_all((REPO / "deploy" / name).read_text()) if doc]


def test_each_shard_is_the_base_deployment_with_its_name_label_and_shard() -> None:
    (base,) = load_all("deployment.yaml")
    shards = load_all("shards.yaml")

    expected = []
    for number in (1, 2, 3):
        name = f"planner-controller-shard-{number}"
        shard = copy.deepcopy(base)
        shard["metadata"] |= {"name": name, "labels": {"app": name}}
        shard["spec"]["selector"]["matchLabels"] = {"app": name}
        shard["spec"]["template"]["metadata"]["labels"] = {"app": name}
        container = shard["spec"]["template"]["spec"]["containers"][0]
        container["args"] = ["controller", f"--shard=shard-{number}", *container["args"][1:]]
        expected.append(shard)
    assert shards == expected
    assert "shards.yaml" not in (REPO / "deploy" / "kustomization.yaml").read_text()
