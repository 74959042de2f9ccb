"""`planner plan` against live state that kubectl wrote (issue 6's end-to-end cases).

The live state is made the way planner's own writes would make it, but by real kubectl:
`planner render --show-secrets | kubectl apply --server-side --field-manager planner -f -`, plus the
ApplySet parent Secret created by the test. Assertions read planner's output and exit code; the cluster
is changed between steps only through kubectl.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, write_plan


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    """A simulating cluster (controllers, node agent, /metrics), as a real one behaves."""
    with running_cluster(simulate=True) as handle:
        yield handle


SECRET_VALUE = "s3cr3t-value-never-printed"
GROUP_KINDS = "ConfigMap,Deployment.apps,Job.batch,PersistentVolumeClaim,Pod,Secret,Service"


def shop_plan(
    namespace: str, *, image: str = "nginx:1.27", job_image: str = "busybox:1.36", web: bool = True
) -> str:
    web_workload = (
        "  - name: web\n"
        f"    image: '{image}'\n"
        "    port: 8080\n"
        "    expose: true\n"
        "    replicas: 2\n"
        "    cpu: '0.5'\n"
        "    memory: 1024Mi\n"
        "    env: {EMPTY: '', MODE: prod}\n"
        "    volumes:\n"
        "      - {configMap: web-config, mountPath: /etc/web, readOnly: false}\n"
        "      - {secret: db, mountPath: /etc/db, readOnly: true}\n"
    )
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: web-config, data: {LOG_LEVEL: info}}\n"
        f"secrets:\n  - {{name: db, data: {{password: {SECRET_VALUE}}}}}\n"
        "workloads:\n"
        f"  - {{name: migrate, kind: job, image: '{job_image}', command: [migrate]}}\n"
        + (web_workload if web else "")
    )


def sandbox_plan(
    namespace: str, *, state: str = "running", generation: int = 1, workspace: str = "2Gi"
) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: boxes, namespace: {namespace}}}\n"
        "sandboxes:\n"
        "  - name: alice\n"
        "    image: ghcr.io/acme/devbox:1\n"
        f"    state: {state}\n"
        f"    rootfs: {{size: 1Gi, generation: {generation}}}\n"
        f"    workspace: {{size: {workspace}}}\n"
    )


def seed(planner: Runner, kubectl: Runner, plan: Path, namespace: str, name: str) -> None:
    """Make the live state planner's own apply would: server-side apply as `planner`, plus the parent."""
    rendered = planner("render", str(plan), "--show-secrets", "-o", "yaml")
    assert rendered.returncode == 0, rendered.stderr
    applied = kubectl(
        "apply", "--server-side", "--field-manager", "planner", "-f", "-", stdin=rendered.stdout
    )
    assert applied.returncode == 0, applied.stderr
    applyset = next(
        line.split(": ")[1]
        for line in rendered.stdout.splitlines()
        if line.strip().startswith("applyset.kubernetes.io/part-of:")
    )
    parent = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "planner.dev/applyset",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"applyset.kubernetes.io/id": applyset.strip()},
            "annotations": {
                "applyset.kubernetes.io/tooling": "planner/0.1.0",
                "applyset.kubernetes.io/contains-group-kinds": GROUP_KINDS,
            },
        },
    }
    created = kubectl(
        "apply", "--server-side", "--field-manager", "planner", "-f", "-", stdin=json.dumps(parent)
    )
    assert created.returncode == 0, created.stderr
    # Ready, as after planner's own apply: a plan counts what is not ready yet as work.
    for workload in kubectl("get", "deployments", "-n", namespace, "-o", "name").stdout.split():
        rolled = kubectl("rollout", "status", workload, "-n", namespace, "--timeout=60s")
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    for job in kubectl("get", "jobs", "-n", namespace, "-o", "name").stdout.split():
        done = kubectl("wait", "--for=condition=Complete", job, "-n", namespace, "--timeout=60s")
        assert done.returncode == 0, done.stderr


def plan_exit(planner: Runner, plan: Path, *extra: str) -> tuple[int, str]:
    result = planner("plan", str(plan), "--detailed-exitcode", *extra)
    assert result.returncode in (0, 2), result.stderr + result.stdout
    return result.returncode, result.stdout


@pytest.fixture
def shop(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> Path:
    plan = write_plan(tmp_path, shop_plan(namespace))
    seed(planner, kubectl, plan, namespace, "shop")
    return plan


def test_a_plan_equal_to_the_cluster_exits_0_despite_defaults_injection_and_spelling(
    planner: Runner, kubectl: Runner, namespace: str, shop: Path
) -> None:
    sidecar = [
        {
            "op": "add",
            "path": "/spec/template/spec/containers/0",
            "value": {"name": "mesh-proxy", "image": "envoy:1"},
        },
        {"op": "add", "path": "/spec/template/spec/volumes/-", "value": {"name": "injected", "emptyDir": {}}},
    ]
    patched = kubectl(
        "patch", "deployment", "web", "-n", namespace, "--type", "json", "-p", json.dumps(sidecar)
    )
    assert patched.returncode == 0, patched.stderr
    # The injection rolls the Deployment (as a mesh's webhook does before the first pod): once rolled
    # out, the plan matches.
    rolled = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    code, output = plan_exit(planner, shop)
    assert code == 0, output
    assert output.splitlines()[-1] == "No changes. The cluster matches plan shop."


def test_an_image_change_is_an_update_showing_old_and_new(
    planner: Runner, namespace: str, shop: Path
) -> None:
    shop.write_text(shop_plan(namespace, image="nginx:1.28"))
    code, output = plan_exit(planner, shop)
    assert code == 2
    assert f"  ~ update deployment/{namespace}/web" in output
    assert '.spec.template.spec.containers[name=web].image: "nginx:1.27" → "nginx:1.28"' in output


def test_a_job_template_change_is_a_replace_forced_by_the_template(
    planner: Runner, namespace: str, shop: Path
) -> None:
    shop.write_text(shop_plan(namespace, job_image="busybox:1.37"))
    code, output = plan_exit(planner, shop)
    assert code == 2
    assert f"-/+ replace job/{namespace}/migrate (forced by spec.template)" in output


def test_kubectl_scale_is_drift_naming_the_manager(
    planner: Runner, kubectl: Runner, namespace: str, shop: Path
) -> None:
    scaled = kubectl("scale", "deployment", "web", "-n", namespace, "--replicas=5")
    assert scaled.returncode == 0, scaled.stderr
    code, output = plan_exit(planner, shop)
    assert code == 2
    line = next(line for line in output.splitlines() if f"deployment/{namespace}/web" in line)
    assert "drift" in line
    assert ".spec.replicas: 5 → 2 (now owned by kubectl" in output


def test_a_removed_workload_is_deleted(planner: Runner, namespace: str, shop: Path) -> None:
    shop.write_text(shop_plan(namespace, web=False))
    code, output = plan_exit(planner, shop)
    assert code == 2
    assert f"  - delete deployment/{namespace}/web" in output
    assert f"  - delete service/{namespace}/web-svc" in output


def test_secret_values_and_hashes_never_appear_in_any_output(
    planner: Runner, kubectl: Runner, namespace: str, shop: Path
) -> None:
    changed = shop_plan(namespace).replace(SECRET_VALUE, "another-secret-value")
    shop.write_text(changed)
    rendered = planner("render", str(shop), "--show-secrets", "-o", "json")
    secret = next(i for i in json.loads(rendered.stdout)["items"] if i["kind"] == "Secret")
    live = json.loads(kubectl("get", "secret", "db", "-n", namespace, "-o", "json").stdout)
    forbidden = {
        SECRET_VALUE,
        "another-secret-value",
        base64.b64encode(SECRET_VALUE.encode()).decode(),
        base64.b64encode(b"another-secret-value").decode(),
        secret["metadata"]["annotations"]["planner.dev/hash"],
        live["metadata"]["annotations"]["planner.dev/hash"],
    }
    for output in ("text", "json", "markdown"):
        result = planner("plan", str(shop), "-o", output)
        assert result.returncode == 0, result.stderr
        assert f"secret/{namespace}/db" in result.stdout
        leaked = [value for value in forbidden if value in result.stdout + result.stderr]
        assert leaked == [], output


@pytest.fixture
def boxes(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> Path:
    plan = write_plan(tmp_path, sandbox_plan(namespace))
    seed(planner, kubectl, plan, namespace, "boxes")
    return plan


def test_a_sandbox_paused_in_the_plan_is_a_pause_transition(
    planner: Runner, namespace: str, boxes: Path
) -> None:
    boxes.write_text(sandbox_plan(namespace, state="paused"))
    code, output = plan_exit(planner, boxes)
    assert code == 2
    assert f"  - delete pod/{namespace}/alice (pause" in output
    assert f"persistentvolumeclaim/{namespace}/alice-workspace (pause" in output
    assert f"persistentvolumeclaim/{namespace}/alice-rootfs-g1" not in output


def test_a_rootfs_generation_bump_is_a_rebase(planner: Runner, namespace: str, boxes: Path) -> None:
    boxes.write_text(sandbox_plan(namespace, generation=2))
    code, output = plan_exit(planner, boxes)
    assert code == 2
    assert f"  + create persistentvolumeclaim/{namespace}/alice-rootfs-g2 (rebase" in output
    assert f"  - delete persistentvolumeclaim/{namespace}/alice-rootfs-g1 (rebase" in output


def test_a_pvc_replacement_without_allow_data_loss_is_an_error_naming_it(
    planner: Runner, namespace: str, boxes: Path
) -> None:
    boxes.write_text(sandbox_plan(namespace, workspace="1Gi"))
    refused = planner("plan", str(boxes))
    assert refused.returncode == 1
    assert f"persistentvolumeclaim/{namespace}/alice-workspace" in refused.stderr
    assert "--allow-data-loss" in refused.stderr
    allowed = planner("plan", str(boxes), "--allow-data-loss")
    assert allowed.returncode == 0, allowed.stderr
    assert f"-/+ replace persistentvolumeclaim/{namespace}/alice-workspace" in allowed.stdout


def test_the_pr_comment_cautions_about_a_claim_replacement_with_or_without_allow_data_loss(
    planner: Runner, namespace: str, boxes: Path
) -> None:
    """The comment is printed either way, so a reviewer sees the loss; without the flag plan still exits 1."""
    boxes.write_text(sandbox_plan(namespace, workspace="1Gi"))
    claim = f"persistentvolumeclaim/{namespace}/alice-workspace"
    refused = planner("plan", str(boxes), "-o", "markdown")
    assert refused.returncode == 1
    assert claim in refused.stderr and "--allow-data-loss" in refused.stderr
    caution = refused.stdout.split("\n\n")[0]
    assert caution.startswith("> [!CAUTION]\n> **This plan destroys data** (1 object): ")
    assert "`--allow-data-loss` was not given, so apply refuses this plan" in caution
    assert (
        f"| `-/+` | replace | pending | `{claim}` | forced by spec.resources.requests.storage; **destroys data** |"
        in (refused.stdout)
    )
    allowed = planner("plan", str(boxes), "-o", "markdown", "--allow-data-loss")
    assert allowed.returncode == 0, allowed.stderr
    assert "`--allow-data-loss` was given: apply deletes it for good" in allowed.stdout.split("\n\n")[0]
    records = [json.loads(line) for line in planner("plan", str(boxes), "-o", "json").stdout.splitlines()]
    assert [r["object"] for r in records if r["type"] == "Planned" and r["destroys_data"]] == [claim]
    assert (records[-1]["destroys_data"], records[-1]["allow_data_loss"]) == (1, False)


def test_kubectl_edit_is_drift_naming_kubectl_edit(
    planner: Runner, kubectl: Runner, namespace: str, shop: Path, tmp_path: Path
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/LOG_LEVEL: info/LOG_LEVEL: debug/' \"$1\"\n")
    editor.chmod(0o755)
    edited = kubectl("edit", "configmap", "web-config", "-n", namespace, env={"EDITOR": str(editor)})
    assert edited.returncode == 0, edited.stderr
    code, output = plan_exit(planner, shop)
    assert code == 2
    assert f"  ~ update configmap/{namespace}/web-config" in output and "drift" in output
    assert '.data.LOG_LEVEL: "debug" → "info" (now owned by kubectl-edit)' in output


def test_server_dry_run_shows_the_servers_result_and_stores_nothing(
    planner: Runner, kubectl: Runner, namespace: str, shop: Path
) -> None:
    shop.write_text(shop_plan(namespace, image="nginx:1.28"))
    result = planner("plan", str(shop), "--server-dry-run", "--detailed-exitcode")
    assert result.returncode == 2, result.stderr
    assert f"  ~ update deployment/{namespace}/web (server dry run)" in result.stdout
    assert '.spec.template.spec.containers[name=web].image: "nginx:1.27" → "nginx:1.28"' in result.stdout
    live = kubectl(
        "get",
        "deployment",
        "web",
        "-n",
        namespace,
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    )
    assert live.stdout == "nginx:1.27"


def test_a_no_op_plan_costs_one_list_per_kind_and_namespace_plus_two_requests(
    planner: Runner, namespace: str, shop: Path, cluster: ClusterHandle
) -> None:
    admin = SlimAdmin.of(cluster)
    before = admin.request_counts()
    code, _ = plan_exit(planner, shop)
    after = admin.request_counts()
    assert code == 0
    delta = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    member_lists = {
        resource: n for (verb, resource, _), n in delta.items() if verb == "list" and resource != "namespaces"
    }
    others = sum(
        n for (verb, resource, _), n in delta.items() if not (verb == "list" and resource != "namespaces")
    )
    kinds = ["configmaps", "deployments", "jobs", "persistentvolumeclaims", "pods", "secrets", "services"]
    assert member_lists == dict.fromkeys(kinds, 1)
    assert others <= 2


def test_a_first_plan_of_many_objects_probes_for_foreign_ones_with_one_list_per_kind_not_a_get_each(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path, cluster: ClusterHandle
) -> None:
    """#45: a plan that would create 12 ConfigMaps finds the one already there without the plan's label
    with one LIST of ConfigMaps beside the member LIST, not 12 GETs; a few creates still cost a GET each."""
    made = kubectl("create", "configmap", "cm-3", "-n", namespace, "--from-literal=owner=someone")
    assert made.returncode == 0, made.stderr
    entries = "".join(f"  - {{name: cm-{i}, data: {{i: '{i}'}}}}\n" for i in range(12))
    plan = write_plan(
        tmp_path,
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: many, namespace: {namespace}}}\n"
        f"configMaps:\n{entries}",
    )
    admin = SlimAdmin.of(cluster)
    before = admin.request_counts()
    result = planner("plan", str(plan))
    after = admin.request_counts()
    assert f"configmap/{namespace}/cm-3" in result.stdout + result.stderr, result.stdout + result.stderr
    assert "cm-3 exists and is not managed by plan many" in result.stdout, result.stdout + result.stderr

    def made_requests(verb: str) -> float:
        return sum(n - before.get(key, 0) for key, n in after.items() if key[:2] == (verb, "configmaps"))

    assert (made_requests("list"), made_requests("get")) == (2, 0)
