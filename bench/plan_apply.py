"""planner against kubectl (and kpt) on one N-workload plan (Deployment + ConfigMap + Service each).

    .venv/bin/python bench/plan_apply.py [--workloads 1000] [--wait-workloads 100 1000]
        [--ready-after 5] [--time-scale 1.0] [--rounds create wait] [--kubeconfig PATH | --real]

Without `--kubeconfig` (or `KUBECONFIG`) it starts embedded clusters; with `--real`, one real control
plane (kube-apiserver v1.28.7 & co. from ../shared/k8s-bin, planner.testing) with simulated
nodes, each tool in its own namespace, and the wait rounds also measure the floor: the same objects
written at once straight through the API (32 threads of the official client in a process of their
own, no tool), from the first write to the last pod Ready by the node agent's own clock; each tool's
overhead is its seconds above it. Each tool works in its own fresh
namespace (on the embedded cluster, in its own fresh cluster for the wait round, so one tool's
rolling-out pods never load the other's run):

1. create (`--workloads`, controllers and node agent paused: nothing waits): `planner apply
   --no-wait` of the plan vs `kubectl apply -f` of the same plan's rendered manifests (`planner
   render`, for the other namespace), and vs `kubectl apply -f --validate=false` in a third: by
   default kubectl checks each object's kind for server-side field validation in its group
   version's OpenAPI v3 document, which client-go parses again for every object (openapi3
   `root.GVSpec`), so on a server serving those documents (a real one, or the embedded one) kubectl's
   own CPU is most of its time; without the check it sends the same requests (a GET of the object,
   one of its namespace, the POST, with `fieldValidation=Ignore` instead of `Strict`: the server
   still decodes the body into its type) and its time is the server's and kubectl's work per request;
2. no-op: `planner plan` vs `kubectl diff -f` of those manifests, each after its own create;
   `--rounds noop` measures it alone, at each of `--noop-workloads`, on settled objects: each tool
   applies the same rendered objects in its own namespace and waits for them (the simulation running,
   so a plan of ready objects exits 0: nothing to do), then `planner plan --detailed-exitcode` and
   `kubectl diff -f` take turns `--repeat` times and the medians are compared; `--planner DIR` adds
   another checkout's planner (an older commit's) to the turns, for a before and after in one run;
3. apply and wait (`--wait-workloads`, the simulation running, every pod ready `--ready-after`
   seconds after it starts, `sim.planner.dev/ready-after-seconds`): `planner apply` (which waits
   for every Deployment) vs `kubectl apply -f` then `kubectl wait --for=condition=Available deploy
   --all`, and vs `kpt live apply --reconcile-timeout` where the cluster serves CustomResourceDefinitions
   (kpt keeps its inventory in a ResourceGroup custom resource; the embedded cluster serves them, a
   cluster that does not, or a machine without kpt, skips it, saying why).

It prints each run's seconds, the ratio, the seconds from the start to the first write, the last write
and the last Deployment ready (planner's from its `-o json` events; kubectl's when `apply` and `wait`
end), and the API requests each made by verb (from the embedded cluster's /metrics; "n/a" against
other clusters). After the create and no-op rounds, what the run lock costs: the Lease requests of the
create (one renewal per third of the lease duration while it runs) and of a no-op `planner apply`,
whose requests are a no-op `planner plan`'s plus the lock's. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from planner.kube.client import DEFAULT_QPS
from planner.testing.slimadmin import SlimAdmin

REPO = Path(__file__).resolve().parents[1]
PLANNER = [sys.executable, "-m", "planner"]


READY_ANNOTATION = "sim.planner.dev/ready-after-seconds"
WAIT_TIMEOUT = "15m"


def plan_text(workloads: int, namespace: str, *, ready_after: float | None = None) -> str:
    lines = ["apiVersion: planner.dev/v1", "kind: Plan", f"metadata: {{name: bench, namespace: {namespace}}}"]
    lines.append("configMaps:")
    lines += [f"  - {{name: app-{i}-config, data: {{INDEX: '{i}'}}}}" for i in range(workloads)]
    lines.append("workloads:")
    pod = "" if ready_after is None else f", podAnnotations: {{{READY_ANNOTATION}: '{ready_after:g}'}}"
    lines += [
        f"  - {{name: app-{i}, image: 'nginx:1.27', port: 8080, expose: true, replicas: 1,"
        f" volumes: [{{configMap: app-{i}-config, mountPath: /etc/app}}]{pod}}}"
        for i in range(workloads)
    ]
    return "\n".join(lines) + "\n"


def run_output(
    command: list[str], kubeconfig: Path, *, ok: tuple[int, ...] = (0,), checkout: Path | None = None
) -> tuple[float, str]:
    """Run `command` against `kubeconfig` (in `checkout`, whose planner package comes first); its wall
    time and standard output."""
    started = time.perf_counter()
    env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    env |= {"PYTHONPATH": str(checkout)} if checkout else {}
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=checkout)
    elapsed = time.perf_counter() - started
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(command[:4])}… exited {result.returncode}: {result.stderr[-2000:]}")
    return elapsed, result.stdout


def run(command: list[str], kubeconfig: Path, *, ok: tuple[int, ...] = (0,)) -> float:
    return run_output(command, kubeconfig, ok=ok)[0]


def requests_by_verb(admin: SlimAdmin | None, resource: str | None = None) -> Counter[str]:
    """`slim_requests_total` summed by verb (of one resource, when given), from the embedded cluster's
    /metrics."""
    counts: Counter[str] = Counter()
    if admin is None:
        return counts
    try:
        found = admin.request_counts()
    except OSError:
        return counts
    for (verb, of, _), value in found.items():
        if resource is None or of == resource:
            counts[verb] += int(value)
    return counts


@contextlib.contextmanager
def real_cluster(nodes: int, pods: int) -> Iterator[tuple[str, Any]]:
    """A real control plane with `nodes` simulated nodes room for `pods` pods in all: (its admin
    kubeconfig, the node agent)."""
    from kubernetes import config

    from planner.testing.controlplane import running_control_plane
    from planner.testing.simnodes import running_node_agent

    with running_control_plane(REPO.parent / "shared" / "k8s-bin") as plane:
        api = config.new_client_from_config(str(plane.kubeconfig))
        with running_node_agent(api, nodes=nodes, pods_per_node=-(-pods // nodes)) as agent:
            print(f"real control plane ready in {plane.startup_seconds:.1f} s\n")
            yield str(plane.kubeconfig), agent


@contextlib.contextmanager
def cluster(kubeconfig: str | None, *, simulate: bool = False, time_scale: float = 1.0) -> Iterator[Cluster]:
    """The cluster at `kubeconfig`, or a fresh embedded one: with the simulation running
    (`simulate`: controllers and node agent, a full resync every 10 s as large simulations run) or
    paused (only /metrics on)."""
    if kubeconfig:
        yield Cluster(Path(kubeconfig), None)
        return
    from planner.slim.cluster import running_cluster

    options: dict[str, object] = (
        {"resync_seconds": 10} if simulate else {"paused": ("controllers", "nodeagent")}
    )
    with running_cluster(simulate=True, time_scale=time_scale, **options) as handle:
        yield Cluster(Path(handle.kubeconfig), SlimAdmin.of(handle))


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    admin: SlimAdmin | None  # the embedded cluster's, for /metrics


@dataclass(frozen=True)
class Timeline:
    """Seconds from a run's start to its first and last write and its last Deployment ready."""

    first_write: float | None = None
    last_write: float | None = None
    last_ready: float | None = None


@dataclass(frozen=True)
class Row:
    name: str
    seconds: float
    requests: Counter[str] = field(default_factory=Counter)
    leases: Counter[str] = field(default_factory=Counter)  # the run lock's requests, by verb
    timeline: Timeline = Timeline()


def planner_timeline(json_lines: str, started: float) -> Timeline:
    """From `planner apply -o json`'s events: writes are `Applied`, readiness a Deployment's `Ready`."""
    writes, ready = [], []
    for line in json_lines.splitlines():
        event = json.loads(line)
        at = datetime.fromisoformat(event["time"]).timestamp() - started
        if event["type"] == "Applied":
            writes.append(at)
        elif event["type"] == "Ready" and str(event.get("object", "")).startswith("deployment/"):
            ready.append(at)
    return Timeline(
        first_write=min(writes, default=None),
        last_write=max(writes, default=None),
        last_ready=max(ready, default=None),
    )


def planner_apply(plan: Path, where: Cluster, *options: str, name: str = "") -> Row:
    """`planner apply` with `-o json`, timed, with its request counts (all, and the run lock's) and its
    events' timeline."""
    before, leases, started = (
        requests_by_verb(where.admin),
        requests_by_verb(where.admin, "leases"),
        time.time(),
    )
    command = [*PLANNER, "apply", str(plan), "-o", "json", "--timeout", WAIT_TIMEOUT, *options]
    seconds, events = run_output(command, where.kubeconfig)
    return Row(
        name or " ".join(["planner apply", *options]),
        seconds,
        requests_by_verb(where.admin) - before,
        requests_by_verb(where.admin, "leases") - leases,
        planner_timeline(events, started),
    )


def measured(
    command: list[str], where: Cluster, ok: tuple[int, ...] = (0,)
) -> tuple[float, Counter[str], Counter[str]]:
    """Seconds, all requests by verb, and the run lock's (Lease) requests by verb."""
    before, leases = requests_by_verb(where.admin), requests_by_verb(where.admin, "leases")
    elapsed = run(command, where.kubeconfig, ok=ok)
    return elapsed, requests_by_verb(where.admin) - before, requests_by_verb(where.admin, "leases") - leases


def render(plan: Path, into: Path) -> None:
    rendered = subprocess.run(
        [*PLANNER, "render", str(plan), "--show-secrets"], capture_output=True, text=True, check=True
    )
    into.write_text(rendered.stdout)


def fresh_namespace(kubeconfig: Path, tag: str) -> str:
    name = f"bench-{tag}-{int(time.time())}"
    run(["kubectl", "create", "namespace", name], kubeconfig)
    return name


def plan_and_manifests(
    workloads: int, namespace: str, scratch: Path, *, ready_after: float | None = None
) -> tuple[Path, Path]:
    """The plan for `namespace` and its rendered manifests, the input of the other tools."""
    plan, manifests = scratch / f"{namespace}.yaml", scratch / f"{namespace}-manifests.yaml"
    plan.write_text(plan_text(workloads, namespace, ready_after=ready_after))
    render(plan, manifests)
    return plan, manifests


def compare(workloads: int, where: Cluster, scratch: Path) -> tuple[list[Row], list[Row], list[Row]]:
    """(create rows, no-op rows, lock rows): planner in one fresh namespace, kubectl in another,
    kubectl without its client-side OpenAPI check in a third."""
    mine, theirs = fresh_namespace(where.kubeconfig, "planner"), fresh_namespace(where.kubeconfig, "kubectl")
    unchecked = fresh_namespace(where.kubeconfig, "unchecked")
    plan, _ = plan_and_manifests(workloads, mine, scratch)
    _, manifests = plan_and_manifests(workloads, theirs, scratch)
    _, unchecked_manifests = plan_and_manifests(workloads, unchecked, scratch)
    creates = [
        planner_apply(plan, where, "--no-wait"),
        kubectl_apply(manifests, where),
        kubectl_apply(unchecked_manifests, where, "--validate=false"),
    ]
    # The controllers are paused: no Deployment becomes ready, which a plan counts as work (exit 2).
    noops = [
        Row(
            "planner plan", *measured([*PLANNER, "plan", str(plan), "--detailed-exitcode"], where, ok=(0, 2))
        ),
        Row("kubectl diff -f", *measured(["kubectl", "diff", "-f", str(manifests)], where)),
    ]
    locked = [creates[0], planner_apply(plan, where, "--no-wait", name="planner apply (no-op)"), noops[0]]
    return creates, noops, locked


def noop_rows(
    workloads: int, where: Cluster, scratch: Path, *, repeat: int, before: Path | None
) -> list[Row]:
    """The no-op round on settled objects (see the module's docstring): the median of `repeat` turns of
    each, planner first; requests by verb from one of its turns."""
    mine, theirs = fresh_namespace(where.kubeconfig, "planner"), fresh_namespace(where.kubeconfig, "kubectl")
    plan, _ = plan_and_manifests(workloads, mine, scratch)
    _, manifests = plan_and_manifests(workloads, theirs, scratch)
    run([*PLANNER, "apply", str(plan), "--timeout", WAIT_TIMEOUT], where.kubeconfig)
    run(["kubectl", "apply", "-f", str(manifests)], where.kubeconfig)
    wait = ["kubectl", "wait", "--for=condition=Available", "deploy", "--all", "-n", theirs]
    run([*wait, f"--timeout={WAIT_TIMEOUT}"], where.kubeconfig)
    turns: dict[str, tuple[list[str], Path | None]] = {
        "planner plan": ([*PLANNER, "plan", str(plan), "--detailed-exitcode"], None),
        "kubectl diff -f": (["kubectl", "diff", "-f", str(manifests)], None),
    }
    if before is not None:
        turns["planner plan (--planner)"] = (turns["planner plan"][0], before)
    seconds: dict[str, list[float]] = {name: [] for name in turns}
    requests: dict[str, Counter[str]] = {}
    for _ in range(repeat):
        for name, (command, checkout) in turns.items():
            counts = requests_by_verb(where.admin)
            seconds[name].append(run_output(command, where.kubeconfig, checkout=checkout)[0])
            requests[name] = requests_by_verb(where.admin) - counts
    turned = "; ".join(f"{name}: {', '.join(f'{t:.2f}' for t in times)}" for name, times in seconds.items())
    print(f"[{datetime.now():%H:%M:%S}] {workloads} workloads, no-op turns: {turned}", file=sys.stderr)
    return [Row(name, statistics.median(seconds[name]), requests[name]) for name in turns]


def by_verb(requests: Counter[str]) -> str:
    return ", ".join(f"{verb} {n}" for verb, n in sorted(requests.items()) if n) or "n/a"


def kubectl_apply(manifests: Path, where: Cluster, *options: str) -> Row:
    seconds, requests, _ = measured(["kubectl", "apply", "-f", str(manifests), *options], where)
    name = " ".join(["kubectl apply -f", *options])
    return Row(name, seconds, requests, timeline=Timeline(last_write=seconds))


def kubectl_apply_and_wait(manifests: Path, namespace: str, where: Cluster) -> Row:
    before, started = requests_by_verb(where.admin), time.perf_counter()
    run(["kubectl", "apply", "-f", str(manifests)], where.kubeconfig)
    applied = time.perf_counter() - started
    wait = ["kubectl", "wait", "--for=condition=Available", "deploy", "--all", "-n", namespace]
    run([*wait, f"--timeout={WAIT_TIMEOUT}"], where.kubeconfig)
    seconds = time.perf_counter() - started
    timeline = Timeline(last_write=applied, last_ready=seconds)
    return Row("kubectl apply + wait", seconds, requests_by_verb(where.admin) - before, timeline=timeline)


def kpt_skipped(where: Cluster) -> str | None:
    """Why kpt cannot run here, or None."""
    if shutil.which("kpt") is None:
        return "kpt is not installed"
    groups = ["kubectl", "api-resources", "--api-group=apiextensions.k8s.io", "-o", "name"]
    _, served = run_output(groups, where.kubeconfig, ok=(0, 1))
    if "customresourcedefinitions" not in served:
        return (
            "the cluster serves no CustomResourceDefinitions, and kpt live keeps its inventory in a "
            "ResourceGroup custom resource"
        )
    return None


def kpt_apply(manifests: Path, namespace: str, where: Cluster, scratch: Path) -> Row:
    """`kpt live apply --reconcile-timeout` of the manifests as a kpt package (inventory in `namespace`)."""
    package = scratch / f"kpt-{namespace}"
    package.mkdir()
    shutil.copy(manifests, package / "manifests.yaml")
    run(["kpt", "live", "install-resource-group"], where.kubeconfig)
    run(["kpt", "pkg", "init", str(package)], where.kubeconfig)
    run(["kpt", "live", "init", str(package), f"--namespace={namespace}"], where.kubeconfig)
    apply = ["kpt", "live", "apply", str(package), f"--reconcile-timeout={WAIT_TIMEOUT}"]
    seconds, requests, _ = measured(apply, where)
    return Row("kpt live apply", seconds, requests, timeline=Timeline(last_ready=seconds))


def apply_and_wait(
    workloads: int,
    kubeconfig: str | None,
    scratch: Path,
    *,
    ready_after: float,
    time_scale: float,
    agent: Any = None,
) -> tuple[list[Row], str | None, Row | None]:
    """(rows, why kpt was skipped, floor): each tool in a fresh embedded cluster (or a fresh namespace
    of the cluster at `kubeconfig`), on the same plan whose pods are ready `ready_after` s after
    starting; with the real cluster's node `agent`, the floor (see the module's docstring), first: on
    the emptiest cluster, so a tool's overhead above it is never understated. Each result is also
    printed to stderr as it comes, so a run cut short still tells what it measured."""
    rows: list[Row] = []
    floor: Row | None = None
    if agent is not None:
        with cluster(kubeconfig) as where:
            namespace = fresh_namespace(where.kubeconfig, "floor")
            _, manifests = plan_and_manifests(workloads, namespace, scratch, ready_after=ready_after)
            floor = floor_seconds(manifests, where, agent, namespace)
            progress(
                workloads, f"floor (its writes done in {floor.timeline.last_write:.2f} s)", floor.seconds
            )
    with cluster(kubeconfig, simulate=True, time_scale=time_scale) as where:
        namespace = fresh_namespace(where.kubeconfig, "planner")
        plan, _ = plan_and_manifests(workloads, namespace, scratch, ready_after=ready_after)
        rows.append(planner_apply(plan, where))
        progress(workloads, rows[-1].name, rows[-1].seconds)
    with cluster(kubeconfig, simulate=True, time_scale=time_scale) as where:
        namespace = fresh_namespace(where.kubeconfig, "kubectl")
        _, manifests = plan_and_manifests(workloads, namespace, scratch, ready_after=ready_after)
        rows.append(kubectl_apply_and_wait(manifests, namespace, where))
        progress(workloads, rows[-1].name, rows[-1].seconds)
    with cluster(kubeconfig, simulate=True, time_scale=time_scale) as where:
        skipped = kpt_skipped(where)
        if skipped is None:
            namespace = fresh_namespace(where.kubeconfig, "kpt")
            _, manifests = plan_and_manifests(workloads, namespace, scratch, ready_after=ready_after)
            rows.append(kpt_apply(manifests, namespace, where, scratch))
            progress(workloads, rows[-1].name, rows[-1].seconds)
    return rows, skipped, floor


def progress(workloads: int, what: str, seconds: float) -> None:
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    print(
        f"[{datetime.now():%H:%M:%S}] {workloads} workloads, {what}: {seconds:.2f} s (load average {load})",
        file=sys.stderr,
        flush=True,
    )


def floor_seconds(manifests: Path, where: Cluster, agent: Any, namespace: str) -> Row:
    """The floor's row: seconds from the first write of `manifests` (all at once, no tool) to the last of its pods
    Ready by the node agent's clock. The writes come from a process of their own, as a tool's do, so
    they never take the interpreter lock from the node agent in this one."""
    from ruamel.yaml import YAML

    documents = [d for d in YAML(typ="safe").load_all(manifests.read_text()) if d]
    deployments = sum(1 for d in documents if d["kind"] == "Deployment")
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        pool.submit(_import_client).result()  # its start-up and imports are not the floor's
        started, written = pool.submit(write_at_once, str(where.kubeconfig), documents, namespace).result()
    while len(agent.ready_times(namespace)) < deployments:
        time.sleep(0.1)
    seconds = float(max(agent.ready_times(namespace)) - started)
    return Row("floor", seconds, timeline=Timeline(0.0, written - started, seconds))


FLOOR_THREADS = 32


def _import_client() -> None:
    import kubernetes.client  # noqa: F401


def write_at_once(kubeconfig: str, documents: list[dict[str, Any]], namespace: str) -> tuple[float, float]:
    """Create every object with FLOOR_THREADS threads of the official client (raw POSTs whose answers
    are not decoded into models, a connection per thread); when the first write started and the last ended."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = FLOOR_THREADS
    api = client.ApiClient(configuration)

    def create(document: dict[str, Any]) -> None:
        group = "api" if "/" not in document["apiVersion"] else "apis"
        path = f"/{group}/{document['apiVersion']}/namespaces/{namespace}/{document['kind'].lower()}s"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        request = api.param_serialize("POST", path, header_params=headers, body=document, auth_settings=[])
        answer = api.call_api(*request[:4])
        answer.read()
        if answer.status != 201:
            raise SystemExit(f"the floor's POST {path} answered {answer.status}: {answer.data[:500]!r}")

    started = time.time()
    with ThreadPoolExecutor(FLOOR_THREADS) as pool:
        list(pool.map(create, documents))
    return started, time.time()


def print_floor(rows: Sequence[Row], floor: Row | None) -> None:
    """The floor, each tool's seconds above it, and planner's overhead as a share of the others'."""
    if floor is None:
        return
    print(
        f"floor (every object written at once, no tool; to the last pod Ready): {floor.seconds:.2f} s, "
        f"its writes done in {floor.timeline.last_write:.2f} s"
    )
    overheads = [row.seconds - floor.seconds for row in rows]
    for row, overhead in zip(rows, overheads, strict=True):
        print(f"{row.name:<34}overhead above the floor {overhead:7.2f} s")
    for row, overhead in zip(rows[1:], overheads[1:], strict=True):
        if overhead > 0:
            print(f"planner's overhead / {row.name}'s: {overheads[0] / overhead:.2f}")
    print()


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_rows(title: str, rows: Sequence[Row]) -> None:
    header = f"{'seconds':>9}{'1st write':>10}{'last write':>11}{'last ready':>11}{'requests':>10}"
    print(f"{title:<34}{header}  by verb")
    for row in rows:
        verbs = by_verb(row.requests)
        times = "".join(
            f"{_seconds(value):>{width}}"
            for value, width in (
                (row.timeline.first_write, 10),
                (row.timeline.last_write, 11),
                (row.timeline.last_ready, 11),
            )
        )
        print(f"{row.name:<34}{row.seconds:>9.2f}{times}{sum(row.requests.values()) or 'n/a':>10}  {verbs}")
    mine = rows[0]
    for other in rows[1:]:
        print(f"ratio {other.name} / {mine.name}: {other.seconds / mine.seconds:.2f}x")
    print()


def print_lock(rows: list[Row]) -> None:
    """The run lock's requests: taking and releasing it, and a renewal per 10 s of a 30 s lease."""
    create, noop, plan = rows
    print(f"run lock (Lease requests){'':<4}{'seconds':>9}{'requests':>10}  by verb")
    for row in (create, noop):
        print(
            f"{row.name:<28}{row.seconds:>9.2f}{sum(row.leases.values()) or 'n/a':>10}  {by_verb(row.leases)}"
        )
    renewals = create.leases["update"]
    print(
        f"{create.name}: {renewals} renewals in {create.seconds:.1f}s (one per 10s of the default 30s lease)"
    )
    extra = noop.requests - plan.requests
    print(
        f"{noop.name} makes {sum(noop.requests.values())} requests, {plan.name} "
        f"{sum(plan.requests.values())}: {by_verb(extra)} more\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workloads", type=int, default=1000, help="workloads of the create and no-op rounds"
    )
    parser.add_argument("--wait-workloads", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--ready-after", type=float, default=5.0, help="seconds from a pod's start to ready")
    parser.add_argument("--time-scale", type=float, default=1.0, help="the embedded clusters' --time-scale")
    parser.add_argument("--rounds", nargs="+", choices=("create", "wait", "noop"), default=["create", "wait"])
    parser.add_argument("--noop-workloads", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--repeat", type=int, default=5, help="turns of each tool in the no-op round")
    parser.add_argument(
        "--planner", type=Path, help="another checkout whose planner takes turns in the no-op round"
    )
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--real", action="store_true", help="a real control plane with simulated nodes")
    parser.add_argument("--nodes", type=int, default=2, help="simulated nodes of the real control plane")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        agent = None
        if args.real:
            # Every round's pods stay (the floor's and three tools'): room for all of them, and the
            # create round's (three tools), whose Deployments roll out too.
            pods = 4 * sum(args.wait_workloads) * ("wait" in args.rounds)
            pods += ("create" in args.rounds) * 3 * args.workloads
            pods += ("noop" in args.rounds) * 2 * sum(args.noop_workloads)
            args.kubeconfig, agent = stack.enter_context(real_cluster(args.nodes, pods + 110))
        if "create" in args.rounds:
            with cluster(args.kubeconfig) as where:
                creates, noops, locked = compare(args.workloads, where, Path(scratch))
            objects = f"{3 * args.workloads} objects: Deployment + ConfigMap + Service each"
            print(f"{args.workloads} workloads ({objects})\n")
            print_rows("create", creates)
            print_rows("no-op", noops)
            print_lock(locked)
        for workloads in args.noop_workloads if "noop" in args.rounds else ():
            with cluster(args.kubeconfig, simulate=True) as where:
                rows = noop_rows(workloads, where, Path(scratch), repeat=args.repeat, before=args.planner)
            load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
            print_rows(f"no-op, {workloads} (median of {args.repeat}; load {load})", rows)
        for workloads in args.wait_workloads if "wait" in args.rounds else ():
            rows, kpt_skip, floor = apply_and_wait(
                workloads,
                args.kubeconfig,
                Path(scratch),
                ready_after=args.ready_after,
                time_scale=args.time_scale,
                agent=agent,
            )
            delay = f"pods ready {args.ready_after:g} s after start, time scale {args.time_scale:g}"
            print_rows(f"apply + wait, {workloads} ({delay})", rows)
            print_floor(rows, floor)
            if kpt_skip:
                print(f"kpt live apply skipped: {kpt_skip}\n")
    print(
        f"planner's client limits itself to {DEFAULT_QPS:g} requests/s (burst {2 * DEFAULT_QPS:g}) until the "
        "server answers with API Priority and Fairness's flow schema, then not at all; kubectl does not."
    )


if __name__ == "__main__":
    main()
