"""Real kubectl (1.27 and 1.33, fresh --cache-dir each) against the embedded cluster: discovery,
create -f, get, get -o yaml, replace, delete (which waits, so it must return) and get --watch."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path

from ruamel.yaml import YAML

from planner.slim.cluster import ClusterHandle, write_kubeconfig
from planner.slim.resources import RESOURCES
from tests.slimcluster import Kubectl, http

MANIFESTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.25", resources: {limits: {cpu: "0.5", memory: 1024Mi}}}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec: {containers: [{name: c, image: nginx}]}
"""


def test_api_resources_lists_every_kind(kubectl: Kubectl) -> None:
    output = kubectl("api-resources", "--no-headers").stdout
    kinds = {line.split()[-1] for line in output.splitlines() if line.strip()}
    assert {r.kind for r in RESOURCES} <= kinds


def test_create_get_replace_delete(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "all.yaml"
    manifest.write_text(MANIFESTS)
    created = kubectl("create", "-n", namespace, "-f", str(manifest)).stdout
    assert "deployment.apps/web created" in created and "pod/solo created" in created
    listing = kubectl("get", "-n", namespace, "deployments,services,configmaps,secrets,pvc,jobs,pods").stdout
    for name in (
        "deployment.apps/web",
        "service/web",
        "configmap/settings",
        "secret/creds",
        "persistentvolumeclaim/data",
        "job.batch/once",
        "pod/solo",
    ):
        assert name in listing
    deployment = YAML(typ="safe").load(
        kubectl("get", "-n", namespace, "deployment", "web", "-o", "yaml").stdout
    )
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "500m", "memory": "1Gi"}}
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    deployment["spec"]["replicas"] = 3
    edited = tmp_path / "web.yaml"
    YAML().dump(deployment, edited)
    assert "deployment.apps/web replaced" in kubectl("replace", "-f", str(edited)).stdout
    assert (
        "3" in kubectl("get", "-n", namespace, "deployment", "web", "-o", "jsonpath={.spec.replicas}").stdout
    )
    started = time.monotonic()
    deleted = kubectl("delete", "-n", namespace, "-f", str(manifest), timeout=60).stdout
    assert 'pod "solo" deleted' in deleted and 'job.batch "once" deleted' in deleted
    assert time.monotonic() - started < 20
    assert "No resources found" in kubectl("get", "-n", namespace, "deployments,pods,jobs").stderr


def test_get_watch_sees_added_modified_deleted(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str
) -> None:
    watcher = subprocess.Popen(
        kubectl.command("get", "configmaps", "-n", namespace, "--watch", "--output-watch-events"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        collection = f"/api/v1/namespaces/{namespace}/configmaps"
        assert http(cluster, "POST", collection, {"metadata": {"name": "seen"}}).status == 201
        patch = http(
            cluster,
            "PATCH",
            f"{collection}/seen",
            {"data": {"a": "b"}},
            content_type="application/merge-patch+json",
        )
        assert patch.status == 200
        assert http(cluster, "DELETE", f"{collection}/seen").status == 200
        time.sleep(1.0)
    finally:
        watcher.terminate()
        output, _ = watcher.communicate(timeout=10)
    events = [
        line.split()[:2] for line in output.splitlines() if line.strip() and not line.startswith("EVENT")
    ]
    assert ["ADDED", "seen"] in events and ["MODIFIED", "seen"] in events and ["DELETED", "seen"] in events
    assert (
        events.index(["ADDED", "seen"])
        < events.index(["MODIFIED", "seen"])
        < events.index(["DELETED", "seen"])
    )


def test_create_generator_creates_the_object(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str
) -> None:
    """`kubectl create configmap` sends JSON up to 1.31 and protobuf from 1.32 on; both store it."""
    result = kubectl("create", "configmap", "gen", "-n", namespace, "--from-literal=k=v")
    assert result.stdout.strip() == "configmap/gen created"
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/gen").body["data"] == {"k": "v"}


# The last line kubectl printed when kube-apiserver v1.28.7 refused its kubeconfig's credentials
# (recorded with kubectl 1.27, 1.31 and 1.33): a token the server does not know is a 401; with no
# credentials at all kubectl asks for a username on stdin first, and stops at its end.
REFUSED = {
    "not-the-token": "error: You must be logged in to the server (the server has asked for the client to "
    "provide credentials)",
    None: "error: EOF",
}


def test_a_kubeconfig_without_the_admin_token_is_refused_as_a_real_server_refuses_it(
    kubectl: Kubectl, cluster: ClusterHandle, tmp_path: Path
) -> None:
    for token, last_line in REFUSED.items():
        kubeconfig = write_kubeconfig(tmp_path / f"kubeconfig-{token}", cluster.url, token, cluster.ca)
        for args in (("get", "secrets", "-A"), ("version",)):
            result = replace(kubectl, kubeconfig=kubeconfig)(*args, stdin="", check=False)
            assert result.returncode == 1
            assert result.stderr.splitlines()[-1] == last_line
