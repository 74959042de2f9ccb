"""Record how a real kube-apiserver v1.28.7 answers for the kinds of the workload controllers (development time).

    .venv/bin/python scripts/record_k8s_goldens.py [--out tests/golden/controllers] [--apigroups DIR]

Starts the control plane of the real test tier (`planner.testing`: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler v1.28.7 from ../shared/k8s-bin, with the node agent
registering one node, `planner-node-0`, as the embedded cluster has) and records, for a StatefulSet
(with a volume claim template), a DaemonSet, a CronJob and an HPA on the StatefulSet, the create, the
object once its controller has settled (`_get_after_controller`: every replica ready, the CronJob's
first run finished, the HPA's conditions written; the HPA also through autoscaling/v1, which carries
what v1 cannot hold in `autoscaling.alpha.kubernetes.io/*` annotations) and the namespace's list as a
Table, in tests/golden/k8s's format (`{"request", "response_status", "response_body"}` per file,
`_index.json`), unnormalised: the comparing test masks what is run-specific. With `--apigroups`, also what kubectl
1.27, 1.31 and 1.33 print for `api-resources [-o wide]` and `api-versions` (which must agree).
Requests carry python-requests' User-Agent, as the other recordings, so managers are `python-requests`.
"""

from __future__ import annotations

import argparse
import json
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import config

from planner.testing.controlplane import ControlPlane, running_control_plane
from planner.testing.simnodes import running_node_agent
from tests.realplane import BINARIES
from tests.slimcluster import kubectl_binary

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "default"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
USER_AGENT = "python-requests/2.31.0"
SETTLE_SECONDS = 240.0
KUBECTLS = ("1.27", "1.31", "1.33")

Obj = dict[str, Any]


def _container(name: str, image: str, **extra: Any) -> Obj:
    return {"name": name, "image": image, **extra}


STATEFULSET: Obj = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "labels": {"app": "db"}},
    "spec": {
        "serviceName": "db",
        "replicas": 2,
        "selector": {"matchLabels": {"app": "db"}},
        "template": {
            "metadata": {"labels": {"app": "db"}},
            "spec": {
                "containers": [
                    _container(
                        "db",
                        "postgres:16",
                        ports=[{"containerPort": 5432}],
                        resources={"requests": {"cpu": "100m"}},
                        volumeMounts=[{"name": "data", "mountPath": "/data"}],
                    )
                ]
            },
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "standard",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    },
}
DAEMONSET: Obj = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [_container("agent", "fluent/fluent-bit:2.2")]},
        },
    },
}
CRONJOB: Obj = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "tick"},
    "spec": {
        "schedule": "* * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [_container("tick", "busybox:1.36", command=["date"])],
                    }
                }
            }
        },
    },
}
HPA: Obj = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "db"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            }
        ],
    },
}


def _status(obj: Obj) -> Obj:
    status: Obj = obj.get("status") or {}
    return status


def statefulset_settled(obj: Obj) -> bool:
    status, replicas = _status(obj), obj["spec"]["replicas"]
    counts = ("readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas")
    return (
        status.get("observedGeneration") == obj["metadata"]["generation"]
        and all(status.get(count) == replicas for count in counts)
        and status.get("currentRevision") == status.get("updateRevision")
    )


def daemonset_settled(obj: Obj) -> bool:
    status = _status(obj)
    desired = status.get("desiredNumberScheduled")
    counts = ("currentNumberScheduled", "numberReady", "numberAvailable", "updatedNumberScheduled")
    return (
        status.get("observedGeneration") == obj["metadata"]["generation"]
        and bool(desired)
        and all(status.get(count) == desired for count in counts)
    )


def cronjob_settled(obj: Obj) -> bool:
    status = _status(obj)
    return bool(status.get("lastSuccessfulTime")) and not status.get("active")


def hpa_settled(obj: Obj) -> bool:
    status = _status(obj)
    kinds = {c["type"] for c in status.get("conditions") or []}
    return {"AbleToScale", "ScalingActive"} <= kinds and status.get("currentReplicas") is not None


# (file prefix, the kind's collection path, the object, when its controller has settled)
KINDS: list[tuple[str, str, Obj, Callable[[Obj], bool]]] = [
    ("statefulset", "/apis/apps/v1/namespaces/default/statefulsets", STATEFULSET, statefulset_settled),
    ("daemonset", "/apis/apps/v1/namespaces/default/daemonsets", DAEMONSET, daemonset_settled),
    ("cronjob", "/apis/batch/v1/namespaces/default/cronjobs", CRONJOB, cronjob_settled),
    ("hpa", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", HPA, hpa_settled),
]
# Other served versions of a kind, read right after its settled GET: (file suffix, version's collection).
OTHER_VERSIONS: dict[str, list[tuple[str, str]]] = {
    "hpa": [("get_v1", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers")],
}
WHAT = {
    "create": "POST the {kind}: 201 + the defaulted object",
    "get_after_controller": "GET the {kind} once its controller has settled",
    "get_v1": "GET the same {kind} through its v1 version, right after",
    "table": "GET the namespace's {kind}s as a server-side Table (meta.k8s.io/v1)",
}


class Recorder:
    def __init__(self, plane: ControlPlane, out: Path) -> None:
        self.url = plane.url
        self.out = out
        self.index: list[Obj] = []
        self.context = ssl.create_default_context(cafile=str(plane.ca))
        pki = plane.kubeconfig.parent
        self.context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def request(
        self, method: str, path: str, body: Obj | None = None, accept: str = "application/json"
    ) -> Obj:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if body is not None:
            headers["Content-Type"] = "application/json"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as reply:
                status, text = reply.status, reply.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        exchange: Obj = {"request": {"method": method, "path": path, "headers": headers}}
        if body is not None:
            exchange["request"]["body"] = body
        return {**exchange, "response_status": status, "response_body": json.loads(text) if text else None}

    def save(self, name: str, exchange: Obj, what: str) -> None:
        (self.out / f"{name}.json").write_text(json.dumps(exchange, indent=2) + "\n")
        self.index.append({"file": f"{name}.json", "status": exchange["response_status"], "what": what})
        print(f"{name}.json {exchange['response_status']}", flush=True)

    def settle(self, path: str, settled: Callable[[Obj], bool]) -> Obj:
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            exchange = self.request("GET", path)
            if exchange["response_status"] == 200 and settled(exchange["response_body"]):
                return exchange
            if time.monotonic() > deadline:
                raise SystemExit(f"{path} did not settle: {json.dumps(exchange['response_body'])}")
            time.sleep(0.5)


def record_kinds(recorder: Recorder) -> None:
    # The controller-manager makes the namespace's default ServiceAccount shortly after start; pods need it.
    recorder.settle(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default", lambda _: True)
    for prefix, collection, obj, _ in KINDS:
        kind = obj["kind"]
        created = recorder.request("POST", collection, obj)
        assert created["response_status"] == 201, created
        recorder.save(f"{prefix}_create", created, WHAT["create"].format(kind=kind))
    for prefix, collection, obj, settled in KINDS:
        kind = obj["kind"]
        got = recorder.settle(f"{collection}/{obj['metadata']['name']}", settled)
        recorder.save(f"{prefix}_get_after_controller", got, WHAT["get_after_controller"].format(kind=kind))
        for suffix, other in OTHER_VERSIONS.get(prefix, []):
            view = recorder.request("GET", f"{other}/{obj['metadata']['name']}")
            recorder.save(f"{prefix}_{suffix}", view, WHAT[suffix].format(kind=kind))
        table = recorder.request("GET", collection, accept=TABLE)
        recorder.save(f"{prefix}_table", table, WHAT["table"].format(kind=kind))
    (recorder.out / "_index.json").write_text(json.dumps(recorder.index, indent=2) + "\n")


def record_kubectl(plane: ControlPlane, out: Path) -> None:
    """`api-resources [-o wide]` and `api-versions` as each kubectl prints them; they must agree."""
    for name, argv in (
        ("api-resources.txt", ["api-resources"]),
        ("api-resources-wide.txt", ["api-resources", "-o", "wide"]),
        ("api-versions.txt", ["api-versions"]),
    ):
        printed = set()
        for version in KUBECTLS:
            binary = kubectl_binary(version)
            if binary is None:
                raise SystemExit(f"kubectl.{version} is not installed beside kubectl")
            with tempfile.TemporaryDirectory() as cache:
                run = subprocess.run(
                    [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--cache-dir={cache}", *argv],
                    capture_output=True,
                    text=True,
                    check=True,
                )
            printed.add(run.stdout)
        if len(printed) != 1:
            raise SystemExit(f"kubectl {' '.join(argv)}: the versions disagree")
        (out / name).write_text(printed.pop())
        print(name, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "golden" / "controllers")
    parser.add_argument(
        "--apigroups", type=Path, help="also record kubectl's api-resources/api-versions here"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with running_control_plane(BINARIES) as plane:
        print(f"control plane ready in {plane.startup_seconds:.1f} s", flush=True)
        api = config.new_client_from_config(str(plane.kubeconfig))
        with running_node_agent(api, nodes=1):
            if args.apigroups:
                record_kubectl(plane, args.apigroups)
            record_kinds(Recorder(plane, args.out))


if __name__ == "__main__":
    main()
