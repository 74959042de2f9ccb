"""The graph orders a plan's ConfigMaps and Secrets before the workloads that read them through env and
envFrom (in any container), as it does for volumes; an object the plan does not declare adds no task.
The parent task carries the digest key the plan's config-hashes were made with."""

from __future__ import annotations

from planner.diff import Change, ChangeSet
from planner.graph import solve
from planner.objects import ref_of
from planner.plan.model import ConfigMap, Container, EnvFrom, EnvRef, Secret
from planner.render import render
from tests.unit.render_support import plan, workload

KEY = bytes(range(32))


def planned_creates(the_plan: object, *, digest_key: bytes | None = None) -> ChangeSet:
    manifests = render(the_plan, "default", config_key=KEY)  # type: ignore[arg-type]
    changes = tuple(Change(ref=ref_of(m), action="create", desired=m, live=None) for m in manifests)
    return ChangeSet(plan="shop", namespace="shop", changes=changes, digest_key=digest_key)


def test_env_and_env_from_of_plan_objects_order_their_creates_first() -> None:
    web = workload(
        env={"PW": EnvRef(source="secretKeyRef", name="db-credentials", key="password")},
        sidecars=(
            Container(
                name="proxy", image="busybox:1.36", env_from=(EnvFrom(source="configMap", name="web-config"),)
            ),
        ),
        init_containers=(
            Container(
                name="migrate",
                image="busybox:1.36",
                env={"TOKEN": EnvRef(source="secretKeyRef", name="vault-token", key="token")},
            ),
        ),
    )
    the_plan = plan(
        workloads=(web,),
        config_maps=(ConfigMap(name="web-config", data={"mode": "fast"}),),
        secrets=(Secret(name="db-credentials", data={"password": "x"}),),
    )
    execution = solve(planned_creates(the_plan), wait=True, timeouts={}, default_timeout=None)
    assert execution.task("create deployment/shop/web").predecessors == (
        "create configmap/shop/web-config",
        "create secret/shop/db-credentials",
    )
    assert not any("vault-token" in task.id for task in execution.tasks)


def test_the_parent_task_keeps_the_digest_key_the_plan_was_made_with() -> None:
    the_plan = plan(secrets=(Secret(name="db-credentials", data={"password": "x"}),))
    execution = solve(planned_creates(the_plan, digest_key=KEY), wait=True, timeouts={}, default_timeout=None)
    parent = execution.task("parent secret/shop/shop").parent
    assert parent is not None
    assert parent.digest_key == KEY
    assert repr(KEY) not in repr(parent)
