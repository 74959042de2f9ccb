"""DESIGN §3 identity: ApplySet membership, plan and runtime annotations, run-keys, depends-on, hashes,
the ApplySet parent, and runtime IDs; and the renderer's determinism."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import planner
import planner.render
from planner.errors import RuntimeIDError
from planner.objects import Manifest, ref_of
from planner.plan.model import Claim, ConfigMap, Container, Plan, Rootfs, Sandbox, Secret
from planner.render import RuntimeID, plan_namespace, render
from planner.state.applyset import ParentRecord, applyset_id, parent_manifest, parent_ref
from planner.workloads.job import JobSpec
from tests.unit.render_support import (
    SHOP_APPLYSET,
    expected_applyset_id,
    find,
    plan,
    rendered,
    sha256_of_canonical,
    validate,
    without_hash,
    workload,
)

PART_OF = "applyset.kubernetes.io/part-of"
DEPENDS_ON = "config.kubernetes.io/depends-on"


def box(name: str, **fields: Any) -> Sandbox:
    return Sandbox(
        name=name, image="devbox:1", rootfs=Rootfs(size="1Gi"), workspace=Claim(size="1Gi"), **fields
    )


def full_plan() -> Plan:
    """Every kind of object the renderer writes, with a dependency of each sort."""
    return plan(
        config_maps=(ConfigMap(name="web-config", data={"b": "2", "a": "1"}),),
        secrets=(Secret(name="db", data={"password": "pw", "user": "shop"}),),
        sandboxes=(box("alice", secret_env={"T": "t"}, depends_on=("migrate",)), box("bob", state="paused")),
        workloads=(
            workload("migrate", kind="job", env={"Z": "1", "A": "2"}),
            workload(
                "web",
                port=8080,
                expose=True,
                labels={"team": "a", "tier": "b"},
                depends_on=("migrate", "alice", "bob"),
                sidecars=(Container(name="side", image="side:1"),),
            ),
        ),
    )


def test_the_applyset_id_of_a_known_plan_follows_kep_3659() -> None:
    # sha256("shop.shop.Secret.") as base64url without padding, between "applyset-" and "-v1".
    assert applyset_id("shop", "shop") == expected_applyset_id("shop", "shop")
    assert applyset_id("shop", "shop") == "applyset-GwAbKEnoQdgaoi0MSLuXqidpqgFxJVNssD4MzmoY9us-v1"


def test_every_top_level_object_is_an_applyset_member_and_names_the_plan() -> None:
    manifests = rendered(full_plan())
    assert [m["metadata"]["labels"][PART_OF] for m in manifests] == [SHOP_APPLYSET] * len(manifests)
    assert {m["metadata"]["annotations"]["planner.dev/plan"] for m in manifests} == {"shop"}


def test_pod_templates_are_never_applyset_members() -> None:
    manifests = rendered(full_plan())
    templates = [m["spec"]["template"]["metadata"] for m in manifests if m["kind"] in ("Deployment", "Job")]
    assert len(templates) == 2
    assert all(PART_OF not in t["labels"] for t in templates)
    assert all("planner.dev/plan" not in t.get("annotations", {}) for t in templates)


def test_the_applyset_uses_the_default_namespace_when_the_plan_has_none() -> None:
    manifests = rendered(plan(namespace=None, workloads=(workload(runtime_namespace="other"),)), "team-a")
    assert manifests[0]["metadata"]["labels"][PART_OF] == expected_applyset_id("shop", "team-a")


RUNTIME_ID_ROWS = [
    ("a ConfigMap has no runtime ID", "ConfigMap", "web-config", None),
    ("a plan Secret has no runtime ID", "Secret", "db", None),
    ("a sandbox's env Secret has the sandbox's", "Secret", "alice-env", "k8s-shop|sandbox|alice"),
    (
        "a sandbox's rootfs PVC has the sandbox's",
        "PersistentVolumeClaim",
        "alice-rootfs-g1",
        "k8s-shop|sandbox|alice",
    ),
    (
        "a sandbox's workspace PVC has the sandbox's",
        "PersistentVolumeClaim",
        "bob-workspace",
        "k8s-shop|sandbox|bob",
    ),
    ("a sandbox's Pod has the sandbox's", "Pod", "alice", "k8s-shop|sandbox|alice"),
    ("a Job has its own", "Job", "migrate", "k8s-shop|job|migrate"),
    ("a Deployment has its own", "Deployment", "web", "k8s-shop|deployment|web"),
    ("a Service has its Deployment's", "Service", "web-svc", "k8s-shop|deployment|web"),
]


@pytest.mark.parametrize(
    ("kind", "name", "expected"), [r[1:] for r in RUNTIME_ID_ROWS], ids=[r[0] for r in RUNTIME_ID_ROWS]
)
def test_runtime_id_annotation(kind: str, name: str, expected: str | None) -> None:
    annotations = find(rendered(full_plan()), kind, name)["metadata"]["annotations"]
    assert annotations.get("planner.dev/runtime-id") == expected


def test_the_run_key_is_the_hash_of_template_completions_and_parallelism() -> None:
    job = find(rendered(full_plan()), "Job", "migrate")
    keyed = {"template": job["spec"]["template"], "completions": None, "parallelism": None}
    assert job["metadata"]["annotations"]["planner.dev/run-key"] == sha256_of_canonical(keyed)


def _run_key(**fields: Any) -> str:
    job = find(
        render(plan(workloads=(workload("migrate", kind="job", **fields),)), "default"), "Job", "migrate"
    )
    return str(job["metadata"]["annotations"]["planner.dev/run-key"])


@pytest.mark.parametrize(
    ("changed", "same"),
    [
        ({"image": "migrate:2"}, False),
        ({"env": {"A": "1"}}, False),
        ({"pod_annotations": {"x": "y"}}, False),
        ({"labels": {"team": "a"}}, True),
        ({"annotations": {"note": "n"}}, True),
        ({"spec": JobSpec(backoff_limit=4, ttl_seconds_after_finished=10)}, True),
    ],
    ids=[
        "a new image is a new run",
        "new env is a new run",
        "new pod annotations are a new run (they are in the template)",
        "labels on the Job object do not make a new run",
        "annotations on the Job object do not make a new run",
        "retry and cleanup settings do not make a new run",
    ],
)
def test_run_key_changes_with_the_template_only(changed: dict[str, Any], same: bool) -> None:
    assert (_run_key(**changed) == _run_key()) is same


def test_depends_on_names_each_target_in_cli_utils_syntax_sorted() -> None:
    web = find(rendered(full_plan()), "Deployment", "web")
    assert web["metadata"]["annotations"][DEPENDS_ON] == (
        "/namespaces/shop/PersistentVolumeClaim/bob-workspace,"
        "/namespaces/shop/Pod/alice,"
        "batch/namespaces/shop/Job/migrate"
    )


DEPENDS_ON_ROWS = [
    (
        "a workload depending on a deployment in another namespace names that namespace",
        plan(workloads=(workload("api", runtime_namespace="backend"), workload("web", depends_on=("api",)))),
        ("Deployment", "web"),
        "apps/namespaces/backend/Deployment/api",
    ),
    (
        "a running sandbox's dependency is on its Pod",
        plan(workloads=(workload("web"),), sandboxes=(box("alice", depends_on=("web",)),)),
        ("Pod", "alice"),
        "apps/namespaces/shop/Deployment/web",
    ),
    (
        "a paused sandbox's dependency is on its workspace PVC",
        plan(workloads=(workload("web"),), sandboxes=(box("alice", state="paused", depends_on=("web",)),)),
        ("PersistentVolumeClaim", "alice-workspace"),
        "apps/namespaces/shop/Deployment/web",
    ),
]


@pytest.mark.parametrize(
    ("the_plan", "dependent", "expected"),
    [r[1:] for r in DEPENDS_ON_ROWS],
    ids=[r[0] for r in DEPENDS_ON_ROWS],
)
def test_depends_on(the_plan: Plan, dependent: tuple[str, str], expected: str) -> None:
    assert find(rendered(the_plan), *dependent)["metadata"]["annotations"][DEPENDS_ON] == expected


def test_only_dependents_carry_depends_on() -> None:
    carriers = [
        f"{m['kind']}/{m['metadata']['name']}"
        for m in rendered(full_plan())
        if DEPENDS_ON in m["metadata"]["annotations"]
    ]
    assert carriers == ["Pod/alice", "Deployment/web"]


def test_the_hash_is_sha256_of_the_canonical_json_without_itself() -> None:
    for manifest in rendered(full_plan()):
        assert manifest["metadata"]["annotations"]["planner.dev/hash"] == sha256_of_canonical(
            without_hash(manifest)
        )


def test_same_inputs_render_identical_bytes() -> None:
    first = json.dumps(render(full_plan(), "default"), sort_keys=True)
    second = json.dumps(render(full_plan(), "default"), sort_keys=True)
    assert first == second


def _reversed_maps(value: Any) -> Any:
    """The same plan, every mapping built with its keys in the opposite order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _reversed_maps(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_reversed_maps(v) for v in value)
    if isinstance(value, dict):
        return {k: _reversed_maps(value[k]) for k in reversed(list(value))}
    return value


def _hashes(the_plan: Plan) -> list[str]:
    return [m["metadata"]["annotations"]["planner.dev/hash"] for m in render(the_plan, "default")]


def test_key_order_in_the_plan_changes_no_hash() -> None:
    original = full_plan()
    reordered = _reversed_maps(original)
    assert list(reordered.config_maps[0].data) == ["a", "b"]
    assert _hashes(reordered) == _hashes(original)


SPEC_CHANGES = [
    (
        "a ConfigMap value",
        lambda p: dataclasses.replace(
            p, config_maps=(ConfigMap(name="web-config", data={"a": "9", "b": "2"}),)
        ),
        "ConfigMap/web-config",
    ),
    (
        "a Secret value",
        lambda p: dataclasses.replace(
            p, secrets=(Secret(name="db", data={"password": "new", "user": "shop"}),)
        ),
        "Secret/db",
    ),
    ("a workload image", lambda p: _replace_workload(p, "web", image="web:2"), "Deployment/web"),
    ("a workload label", lambda p: _replace_workload(p, "web", labels={"team": "b"}), "Deployment/web"),
    ("a job's env", lambda p: _replace_workload(p, "migrate", env={"A": "3"}), "Job/migrate"),
    ("a service port", lambda p: _replace_workload(p, "web", port=9090), "Service/web-svc"),
    ("a sandbox image", lambda p: _replace_sandbox(p, "alice", image="devbox:2"), "Pod/alice"),
    (
        "a sandbox image, in the workspace's pod-spec",
        lambda p: _replace_sandbox(p, "alice", image="devbox:2"),
        "PersistentVolumeClaim/alice-workspace",
    ),
    (
        "a rootfs size",
        lambda p: _replace_sandbox(p, "alice", rootfs=Rootfs(size="2Gi")),
        "PersistentVolumeClaim/alice-rootfs-g1",
    ),
    ("a secretEnv value", lambda p: _replace_sandbox(p, "alice", secret_env={"T": "u"}), "Secret/alice-env"),
]


def _replace_workload(the_plan: Plan, name: str, **changes: Any) -> Plan:
    workloads = tuple(dataclasses.replace(w, **changes) if w.name == name else w for w in the_plan.workloads)
    return dataclasses.replace(the_plan, workloads=workloads)


def _replace_sandbox(the_plan: Plan, name: str, **changes: Any) -> Plan:
    sandboxes = tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in the_plan.sandboxes)
    return dataclasses.replace(the_plan, sandboxes=sandboxes)


def _hash_by_object(the_plan: Plan) -> dict[str, str]:
    return {
        f"{m['kind']}/{m['metadata']['name']}": m["metadata"]["annotations"]["planner.dev/hash"]
        for m in render(the_plan, "default")
    }


@pytest.mark.parametrize(
    ("change", "changed_object"),
    [r[1:] for r in SPEC_CHANGES],
    ids=[f"changing {r[0]} changes the hash" for r in SPEC_CHANGES],
)
def test_any_change_changes_the_hash(change: Any, changed_object: str) -> None:
    before = _hash_by_object(full_plan())
    after = _hash_by_object(change(full_plan()))
    assert after[changed_object] != before[changed_object]


def test_a_change_to_one_object_leaves_unrelated_hashes_alone() -> None:
    before = _hash_by_object(full_plan())
    after = _hash_by_object(_replace_workload(full_plan(), "web", image="web:2"))
    assert {k for k in before if before[k] != after[k]} == {"Deployment/web"}


def parent_secret(the_plan: Plan, default_namespace: str, manifests: list[Manifest]) -> Manifest:
    """The parent Secret a first apply of these manifests writes."""
    ref = parent_ref(the_plan.name, plan_namespace(the_plan, default_namespace))
    return parent_manifest(ref, None, ParentRecord.covering(map(ref_of, manifests), manifests))


def test_the_applyset_parent_secret_lists_group_kinds_and_other_namespaces() -> None:
    the_plan = plan(
        config_maps=(ConfigMap(name="c", data={}),),
        sandboxes=(box("alice"),),
        workloads=(
            workload("web", runtime_namespace="zeta", port=80, expose=True),
            workload("m", kind="job", runtime_namespace="alpha"),
        ),
    )
    assert parent_secret(the_plan, "default", render(the_plan, "default")) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "shop",
            "namespace": "shop",
            "labels": {"applyset.kubernetes.io/id": SHOP_APPLYSET},
            "annotations": {
                "applyset.kubernetes.io/tooling": f"planner/{planner.__version__}",
                "applyset.kubernetes.io/contains-group-kinds": (
                    "ConfigMap,Deployment.apps,Job.batch,PersistentVolumeClaim,Pod,Service"
                ),
                "applyset.kubernetes.io/additional-namespaces": "alpha,zeta",
                "planner.dev/plan": "shop",
            },
        },
        "type": "planner.dev/applyset",
        "data": {},
    }


def test_a_single_namespace_parent_has_no_additional_namespaces() -> None:
    the_plan = plan(workloads=(workload("web"),))
    annotations = parent_secret(the_plan, "default", render(the_plan, "default"))["metadata"]["annotations"]
    assert "applyset.kubernetes.io/additional-namespaces" not in annotations
    assert annotations["applyset.kubernetes.io/contains-group-kinds"] == "Deployment.apps"


def test_the_parent_secret_validates() -> None:
    the_plan = full_plan()
    validate([parent_secret(the_plan, "default", render(the_plan, "default"))])


def test_render_does_not_share_nested_dicts_between_manifests() -> None:
    manifests = render(plan(workloads=(workload("web", port=80, expose=True),)), "default")
    manifests[0]["spec"]["selector"]["matchLabels"]["app"] = "changed"
    assert manifests[1]["spec"]["selector"]["app"] == "web"
    assert manifests[0]["spec"]["template"]["metadata"]["labels"]["app"] == "web"


# Runtime IDs -------------------------------------------------------------------------------------------

dns_labels = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


@given(
    runtime=st.sampled_from(["k8s", "k3s"]),
    namespace=dns_labels,
    kind=st.sampled_from(["deployment", "job", "sandbox"]),
    name=dns_labels,
)
def test_runtime_ids_round_trip(runtime: Any, namespace: str, kind: Any, name: str) -> None:
    runtime_id = RuntimeID(runtime=runtime, namespace=namespace, kind=kind, name=name)
    assert str(runtime_id) == f"{runtime}-{namespace}|{kind}|{name}"
    assert RuntimeID.parse(str(runtime_id)) == runtime_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "k8s-default|deployment|web-api",
            RuntimeID(runtime="k8s", namespace="default", kind="deployment", name="web-api"),
        ),
        (
            "k3s-ai|job|batch-import-001",
            RuntimeID(runtime="k3s", namespace="ai", kind="job", name="batch-import-001"),
        ),
        (
            "k8s-team-a|sandbox|alice",
            RuntimeID(runtime="k8s", namespace="team-a", kind="sandbox", name="alice"),
        ),
    ],
    ids=[
        "the seed's deployment example",
        "the seed's k3s job example",
        "a namespace with a dash is split at the runtime's dash only",
    ],
)
def test_runtime_id_parse(text: str, expected: RuntimeID) -> None:
    assert RuntimeID.parse(text) == expected


REJECTIONS = [
    ("no separators", "k8s-default-web", "expected 3 parts separated by '|', found 1"),
    ("too many parts", "k8s-default|deployment|web|x", "expected 3 parts separated by '|', found 4"),
    (
        "an unknown runtime prefix",
        "docker-default|deployment|web",
        "unknown runtime prefix 'docker' (expected one of k8s, k3s)",
    ),
    (
        "no namespace after the runtime",
        "k8s|deployment|web",
        "runtime 'k8s' is not followed by '-<namespace>'",
    ),
    ("an empty namespace", "k8s-|deployment|web", "namespace '' is not a DNS label"),
    ("an upper-case namespace", "k8s-Default|deployment|web", "namespace 'Default' is not a DNS label"),
    (
        "an unknown kind",
        "k8s-default|replicaset|web",
        "unknown kind 'replicaset' (expected one of deployment, job, cronjob, statefulset, daemonset, sandbox)",
    ),
    ("a kind in another case", "k8s-default|Deployment|web", "unknown kind 'Deployment'"),
    ("an empty name", "k8s-default|job|", "name '' is not a DNS-1123 name of at most 63 characters"),
    ("a name with a dot", "k8s-default|job|a.b", "name 'a.b' is not a DNS-1123 name"),
    (
        "a name that is too long",
        "k8s-default|job|" + "a" * 64,
        "is not a DNS-1123 name of at most 63 characters",
    ),
]


@pytest.mark.parametrize(
    ("text", "problem"), [r[1:] for r in REJECTIONS], ids=[f"rejects {r[0]}" for r in REJECTIONS]
)
def test_runtime_id_rejections_name_the_form_and_the_problem(text: str, problem: str) -> None:
    with pytest.raises(RuntimeIDError) as caught:
        RuntimeID.parse(text)
    message = str(caught.value)
    assert message.startswith(f"malformed runtime ID {text!r}: ")
    assert problem in message
    assert message.endswith("expected <runtime>-<namespace>|<kind>|<name>")


def test_the_public_api_is_exactly_all() -> None:
    public = {name for name in dir(planner.render) if not name.startswith("_")}
    # The submodules, and the `annotations` feature flag of `from __future__ import annotations`.
    not_api = {
        "claims",
        "config_objects",
        "confighash",
        "identity",
        "size_limits",
        "plan_entries",
        "raw_objects",
        "pods",
        "sandbox_objects",
        "workload_objects",
        "annotations",
    }
    assert public - not_api == set(planner.render.__all__)
