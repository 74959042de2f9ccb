"""Real kubectl 1.27 and 1.33 against the simulated cluster: wait, rollout, scale, logs, delete, describe,
and `get pods` showing what the node agent does (time scale 0.05)."""

from __future__ import annotations

import json
import time

from tests.simulated import eventually, simulated_cluster_fixture
from tests.slimcluster import Kubectl

cluster = simulated_cluster_fixture()


def apply(kubectl: Kubectl, namespace: str, manifest: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest)


def pod_row(kubectl: Kubectl, namespace: str, name: str) -> list[str]:
    """READY, STATUS, RESTARTS of one pod as `kubectl get pods` prints them."""
    out = kubectl("get", "pod", name, "-n", namespace, "--no-headers").stdout.split()
    ready, status = out[1], out[2]
    restarts = out[3]
    return [ready, status, restarts]


def pod_names(kubectl: Kubectl, namespace: str, selector: str) -> list[str]:
    out = kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name").stdout
    return out.split()


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox, command: [sh, -c, echo hi]}]
"""


def test_wait_for_an_available_deployment_and_roll_out_an_image_change(
    kubectl: Kubectl, namespace: str
) -> None:
    apply(kubectl, namespace, DEPLOYMENT)
    waited = kubectl("wait", "-n", namespace, "--for=condition=Available", "deployment/web", "--timeout=30s")
    assert "condition met" in waited.stdout
    kubectl("set", "image", "-n", namespace, "deployment/web", "nginx=nginx:1.25")
    rolled = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=30s")
    assert 'deployment "web" successfully rolled out' in rolled.stdout
    images = kubectl(
        "get", "pods", "-n", namespace, "-l", "app=web", "-o", "jsonpath={.items[*].spec.containers[0].image}"
    )
    eventually(
        lambda: (
            set(
                kubectl(
                    "get",
                    "pods",
                    "-n",
                    namespace,
                    "-l",
                    "app=web",
                    "-o",
                    "jsonpath={.items[*].spec.containers[0].image}",
                ).stdout.split()
            )
            == {"nginx:1.25"}
        )
    )
    assert images.returncode == 0


def revisions(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """Image by revision of the deployment's ReplicaSets."""
    sets = json.loads(kubectl("get", "rs", "-n", namespace, "-l", "app=web", "-o", "json").stdout)["items"]
    return {
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs["spec"]["template"]["spec"][
            "containers"
        ][0]["image"]
        for rs in sets
    }


def test_rollout_undo_twice_moves_back_and_forth_with_new_revisions(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, DEPLOYMENT)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=30s")
    kubectl("set", "image", "-n", namespace, "deployment/web", "nginx=nginx:1.25")
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=30s")
    first = kubectl("rollout", "undo", "-n", namespace, "deployment/web")
    assert first.stdout.strip() == "deployment.apps/web rolled back"
    eventually(lambda: revisions(kubectl, namespace) == {"2": "nginx:1.25", "3": "nginx"})
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=30s")
    second = kubectl("rollout", "undo", "-n", namespace, "deployment/web")
    assert second.stdout.strip() == "deployment.apps/web rolled back"
    eventually(lambda: revisions(kubectl, namespace) == {"3": "nginx", "4": "nginx:1.25"})
    history = kubectl("rollout", "history", "-n", namespace, "deployment/web").stdout.split()
    assert history[history.index("REVISION") + 2 :] == ["3", "<none>", "4", "<none>"]
    rs = json.loads(kubectl("get", "rs", "-n", namespace, "-l", "app=web", "-o", "json").stdout)["items"]
    by_revision = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r for r in rs}
    assert by_revision["4"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "2"


def test_the_replica_set_controller_reports_the_pods_it_creates_and_deletes(
    kubectl: Kubectl, namespace: str
) -> None:
    apply(kubectl, namespace, DEPLOYMENT)
    kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=30s")
    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=1")
    eventually(lambda: len(pod_names(kubectl, namespace, "app=web")) == 1)

    def reasons() -> list[str]:
        out = kubectl(
            "get",
            "events",
            "-n",
            namespace,
            "--field-selector",
            "involvedObject.kind=ReplicaSet",
            "-o",
            "jsonpath={range .items[*]}{.reason} {.source.component} {.message}{'\\n'}{end}",
        ).stdout
        return out.splitlines()

    lines = eventually(
        lambda: (found := reasons()) and any("SuccessfulDelete" in line for line in found) and found
    )
    created = [
        line for line in lines if line.startswith("SuccessfulCreate replicaset-controller Created pod: web-")
    ]
    deleted = [
        line for line in lines if line.startswith("SuccessfulDelete replicaset-controller Deleted pod: web-")
    ]
    assert len(created) == 2 and len(deleted) == 1


def test_scale_changes_the_pod_count(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, DEPLOYMENT)
    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=4")
    eventually(lambda: len(pod_names(kubectl, namespace, "app=web")) == 4)
    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=1")
    eventually(lambda: len(pod_names(kubectl, namespace, "app=web")) == 1)


def test_delete_deployment_removes_its_replica_set_and_pods(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, DEPLOYMENT)
    kubectl("wait", "-n", namespace, "--for=condition=Available", "deployment/web", "--timeout=30s")
    kubectl("delete", "-n", namespace, "deployment", "web")
    eventually(lambda: not kubectl("get", "rs,pods", "-n", namespace, "-o", "name").stdout.strip())


def test_wait_for_a_complete_job_then_delete_it_and_its_pods(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, JOB)
    waited = kubectl("wait", "-n", namespace, "--for=condition=complete", "job/once", "--timeout=30s")
    assert "condition met" in waited.stdout
    [name] = pod_names(kubectl, namespace, "job-name=once")
    assert pod_row(kubectl, namespace, name.split("/")[1]) == ["0/1", "Completed", "0"]
    assert "[work] command: sh -c echo hi" in kubectl("logs", "-n", namespace, "job/once").stdout
    kubectl("delete", "-n", namespace, "job", "once", timeout=30)
    eventually(lambda: not pod_names(kubectl, namespace, "job-name=once"))


def test_get_pods_shows_a_sidecar_pod_two_of_two_running(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: duo}
spec:
  containers: [{name: app, image: nginx}, {name: proxy, image: envoy}]
""",
    )
    eventually(lambda: pod_row(kubectl, namespace, "duo") == ["2/2", "Running", "0"])


def test_a_native_sidecar_keeps_running_and_counts_in_ready(kubectl: Kubectl, namespace: str) -> None:
    """Init containers with restartPolicy Always run as v1.29 runs them (the server reports v1.29.0)."""
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: meshed}
spec:
  initContainers: [{name: proxy, image: envoy, restartPolicy: Always}, {name: setup, image: busybox}]
  containers: [{name: app, image: nginx}]
""",
    )
    eventually(lambda: pod_row(kubectl, namespace, "meshed") == ["2/2", "Running", "0"])
    pod = json.loads(kubectl("get", "pod", "meshed", "-n", namespace, "-o", "json").stdout)
    proxy, setup = pod["status"]["initContainerStatuses"]
    assert (proxy["started"], proxy["ready"], "running" in proxy["state"]) == (True, True, True)
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert pod["spec"]["initContainers"][0]["restartPolicy"] == "Always"


def test_a_jobs_native_sidecar_stops_once_the_job_is_done(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: batch/v1
kind: Job
metadata: {name: meshed}
spec:
  template:
    spec:
      restartPolicy: Never
      initContainers: [{name: proxy, image: envoy, restartPolicy: Always}]
      containers: [{name: work, image: busybox}]
""",
    )
    kubectl("wait", "-n", namespace, "--for=condition=complete", "job/meshed", "--timeout=30s")
    [name] = pod_names(kubectl, namespace, "job-name=meshed")
    eventually(lambda: pod_row(kubectl, namespace, name.split("/")[1]) == ["0/2", "Completed", "0"])


def test_get_pods_shows_init_progress(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata:
  name: staged
  annotations: {sim.planner.dev/run-seconds.second: "60"}
spec:
  initContainers: [{name: first, image: busybox}, {name: second, image: busybox}]
  containers: [{name: app, image: nginx}]
""",
    )
    eventually(lambda: pod_row(kubectl, namespace, "staged") == ["0/1", "Init:1/2", "0"])
    eventually(
        lambda: (
            pod_row(kubectl, namespace, "staged")[1] == "PodInitializing"
            or pod_row(kubectl, namespace, "staged")[1] == "Running"
        ),
        timeout=20,
    )


def test_get_pods_shows_crash_loop_back_off_with_restarts_climbing(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata:
  name: crashy
  annotations: {sim.planner.dev/crash-after-seconds: "4"}
spec:
  containers: [{name: app, image: nginx}]
""",
    )
    first = eventually(
        lambda: (row := pod_row(kubectl, namespace, "crashy"))[1] == "CrashLoopBackOff" and row
    )
    later = eventually(
        lambda: (
            (row := pod_row(kubectl, namespace, "crashy"))[1] == "CrashLoopBackOff"
            and int(row[2].split()[0]) > int(first[2].split()[0])
            and row
        ),
        timeout=20,
    )
    assert int(later[2].split()[0]) > int(first[2].split()[0])


def test_logs_by_container_tail_and_previous(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata:
  name: chatty
  annotations: {sim.planner.dev/crash-after-seconds.app: "10"}
spec:
  containers: [{name: app, image: nginx}, {name: proxy, image: envoy}]
""",
    )
    eventually(
        lambda: (
            json.loads(kubectl("get", "pod", "chatty", "-n", namespace, "-o", "json").stdout)["status"][
                "containerStatuses"
            ][0]["restartCount"]
            >= 1
        )
    )
    app = kubectl("logs", "-n", namespace, "chatty", "-c", "app").stdout
    proxy = kubectl("logs", "-n", namespace, "chatty", "-c", "proxy").stdout
    assert app.splitlines()[0].startswith("[app] starting image=nginx") and proxy.splitlines()[0].startswith(
        "[proxy] starting image=envoy"
    )
    time.sleep(0.2)
    tail = kubectl("logs", "-n", namespace, "chatty", "-c", "proxy", "--tail=3").stdout.splitlines()
    assert len(tail) == 3
    previous = kubectl("logs", "-n", namespace, "chatty", "-c", "app", "--previous").stdout.splitlines()
    assert previous[0].startswith("[app] starting image=nginx run=")  # whichever run ended last
    assert previous[-1] == "[app] exiting with code 1"


def test_describe_pod_shows_its_events(kubectl: Kubectl, namespace: str) -> None:
    apply(
        kubectl,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: described}
spec:
  containers: [{name: app, image: nginx}]
""",
    )
    eventually(lambda: pod_row(kubectl, namespace, "described")[1] == "Running")
    described = eventually(
        lambda: (
            (out := kubectl("describe", "pod", "-n", namespace, "described").stdout)
            and "Started" in out
            and out
        )
    )
    events = described[described.index("Events:") :]
    for reason in ("Scheduled", "Pulled", "Created", "Started"):
        assert reason in events
    assert "Successfully assigned" in events
