"""Real kubectl (1.27 and 1.33) against a cluster started with RBAC: the admin makes a ServiceAccount,
a Role, a RoleBinding and a token with kubectl's own commands; then, with that token, `kubectl auth
can-i` answers exactly what the server does for the same requests made over raw HTTP, and kubectl's
reads and listings of RBAC objects look as they do against a real server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, kubeconfig_document, running_cluster
from tests.slimcluster import Kubectl, KubectlRunner, http

_names = count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True) as handle:
        yield handle


def as_token(kubectl: Kubectl, cluster: ClusterHandle, token: str, tmp_path: Path) -> Kubectl:
    """The same kubectl, with a kubeconfig holding `token`."""
    path = tmp_path / "token.kubeconfig"
    path.write_text(json.dumps(kubeconfig_document(cluster.url, token, cluster.ca)))
    return KubectlRunner(kubectl.binary, path, kubectl.cache)


def deployer(kubectl: Kubectl, tmp_path: Path, cluster: ClusterHandle) -> tuple[str, Kubectl, str]:
    """A namespace with ServiceAccount `planner` bound to Role `deployer`; its kubectl and token."""
    ns = f"k{os.getpid()}-{next(_names)}"
    kubectl("create", "namespace", ns)
    kubectl("create", "serviceaccount", "planner", "-n", ns)
    kubectl("create", "role", "deployer", "-n", ns, "--verb=get,list,watch,create", "--resource=deployments")
    kubectl("create", "role", "scaler", "-n", ns, "--verb=update", "--resource=deployments/scale")
    for role in ("deployer", "scaler"):
        kubectl("create", "rolebinding", role, "-n", ns, f"--role={role}", f"--serviceaccount={ns}:planner")
    token = kubectl("create", "token", "planner", "-n", ns).stdout.strip()
    return ns, as_token(kubectl, cluster, token, tmp_path), token


# (kubectl auth can-i arguments, the same request over HTTP, whether the Role allows it)
CHECKS = [
    (("list", "deployments"), ("GET", "/apis/apps/v1/namespaces/{ns}/deployments"), True),
    (("get", "deployments/web"), ("GET", "/apis/apps/v1/namespaces/{ns}/deployments/web"), True),
    (("delete", "deployments/web"), ("DELETE", "/apis/apps/v1/namespaces/{ns}/deployments/web"), False),
    (
        ("update", "deployments", "--subresource=scale"),
        ("PUT", "/apis/apps/v1/namespaces/{ns}/deployments/web/scale"),
        True,
    ),
    (
        ("get", "deployments", "--subresource=scale"),
        ("GET", "/apis/apps/v1/namespaces/{ns}/deployments/web/scale"),
        False,
    ),
    (("list", "pods"), ("GET", "/api/v1/namespaces/{ns}/pods"), False),
    (("list", "secrets"), ("GET", "/api/v1/namespaces/{ns}/secrets"), False),
]


def test_can_i_agrees_with_what_the_server_allows(
    kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path
) -> None:
    ns, mine, token = deployer(kubectl, tmp_path, cluster)
    answers, served = {}, {}
    for args, (method, path), _ in CHECKS:
        answer = mine("auth", "can-i", *args, "-n", ns, check=False)
        answers[args] = (answer.returncode, answer.stdout.strip())
        body = {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web"},
            "spec": {"replicas": 1},
        }
        status = http(
            cluster, method, path.format(ns=ns), body if method == "PUT" else None, token=token
        ).status
        served[args] = status != 403
    assert answers == {args: (0, "yes") if allowed else (1, "no") for args, _, allowed in CHECKS}
    assert served == {args: allowed for args, _, allowed in CHECKS}


def test_can_i_as_another_user_and_list(kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path) -> None:
    ns, mine, _ = deployer(kubectl, tmp_path, cluster)
    who = f"--as=system:serviceaccount:{ns}:planner"
    assert kubectl("auth", "can-i", "create", "deployments", "-n", ns, who).stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "create", "pods", "-n", ns, who, check=False).stdout.strip() == "no"
    rules = [line.split() for line in mine("auth", "can-i", "--list", "-n", ns).stdout.splitlines()]
    assert ["deployments.apps", "[]", "[]", "[get", "list", "watch", "create]"] in rules
    assert ["deployments.apps/scale", "[]", "[]", "[update]"] in rules


def test_a_forbidden_read_is_reported_as_the_server_words_it(
    kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path
) -> None:
    ns, mine, _ = deployer(kubectl, tmp_path, cluster)
    refused = mine("get", "pods", "-n", ns, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        f'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:{ns}:planner" cannot '
        f'list resource "pods" in API group "" in the namespace "{ns}"'
    )
    assert mine("get", "deployments", "-n", ns).stderr.strip() == f"No resources found in {ns} namespace."


def test_whoami(kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path) -> None:
    if kubectl.binary.name == "kubectl.1.27":
        pytest.skip("kubectl 1.27 asks for SelfSubjectReview in v1alpha1/v1beta1, which v1.28 does not serve")
    ns, mine, _ = deployer(kubectl, tmp_path, cluster)
    lines = [line.split(None, 1) for line in mine("auth", "whoami").stdout.splitlines()]
    assert lines[0] == ["ATTRIBUTE", "VALUE"]
    assert lines[1] == ["Username", f"system:serviceaccount:{ns}:planner"]
    assert lines[-1] == [
        "Groups",
        f"[system:serviceaccounts system:serviceaccounts:{ns} system:authenticated]",
    ]


def test_cluster_roles_and_bindings_from_kubectl(kubectl: Kubectl, cluster: ClusterHandle) -> None:
    name = f"c{os.getpid()}-{next(_names)}"
    kubectl("create", "clusterrole", name, "--verb=get,list", "--resource=nodes", "--resource-name=n1")
    kubectl("create", "clusterrole", f"{name}-agg", "--aggregation-rule=team=a")
    kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}", "--user=alice", "--group=ops")
    role = http(cluster, "GET", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}").body
    assert role["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes"], "resourceNames": ["n1"]}
    ]
    aggregated = http(cluster, "GET", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}-agg").body
    assert aggregated["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]}
    wide = kubectl("get", "clusterrolebinding", name, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    row = wide[1].split()
    assert (row[0], row[1], row[3], row[4]) == (name, f"ClusterRole/{name}", "alice", "ops")
    created = kubectl("get", "clusterrole", name).stdout.splitlines()
    assert created[0].split() == ["NAME", "CREATED", "AT"] and created[1].split()[0] == name


def test_a_server_side_apply_that_creates_needs_create_as_well_as_patch(
    kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path
) -> None:
    """As kube-apiserver's patch handler authorizes an apply that creates its object as a `create`
    (createValidation): with `patch` alone `kubectl apply --server-side` of a new ConfigMap is
    refused, naming the verb; an existing one it may change; with `create` too it creates."""
    ns = f"k{os.getpid()}-{next(_names)}"
    kubectl("create", "namespace", ns)
    kubectl("create", "serviceaccount", "applier", "-n", ns)
    kubectl("create", "role", "patcher", "-n", ns, "--verb=get,patch", "--resource=configmaps")
    kubectl("create", "rolebinding", "patcher", "-n", ns, "--role=patcher", f"--serviceaccount={ns}:applier")
    applier = as_token(
        kubectl, cluster, kubectl("create", "token", "applier", "-n", ns).stdout.strip(), tmp_path
    )
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: new, namespace: {ns}}}\ndata: {{a: '1'}}\n"
    )

    refused = applier("apply", "--server-side", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert f'cannot create resource "configmaps" in API group "" in the namespace "{ns}"' in refused.stderr
    assert kubectl("get", "configmap", "new", "-n", ns, check=False).returncode == 1

    kubectl("create", "configmap", "new", "-n", ns, "--from-literal=a=0")
    assert applier("apply", "--server-side", "--force-conflicts", "-f", str(manifest)).returncode == 0
    kubectl("delete", "configmap", "new", "-n", ns)
    kubectl("create", "role", "creator", "-n", ns, "--verb=create", "--resource=configmaps")
    kubectl("create", "rolebinding", "creator", "-n", ns, "--role=creator", f"--serviceaccount={ns}:applier")
    assert applier("apply", "--server-side", "-f", str(manifest)).returncode == 0
    assert kubectl("get", "configmap", "new", "-n", ns, "-o", "jsonpath={.data.a}").stdout == "1"
