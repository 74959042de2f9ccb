"""Plan objects whose plan lives in a Git repository (`source.git`), against real Git servers: `git
daemon` (git://) and `git http-backend` behind lighttpd with basic auth (tests/gitservers.py). Each
push is a real commit; what the controller applied is checked through kubectl, the fetches counted in
the servers' own logs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import conditions, get_json, install_crd, plan_events
from tests.gitservers import (
    Served,
    WorkTree,
    git_daemon,
    http_backend,
    new_repository,
    ssh_key,
    ssh_server,
    ssh_signer,
    upload_packs,
)
from tests.simulated import eventually

__all__ = ["controllers"]  # the fixture, shared with test_controller


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with git_daemon(tmp_path_factory.mktemp("git-daemon")) as served:
        yield served


def shop_file(replicas: int, workload: str = "web", *, settings: bool = True) -> str:
    """The repository's plan: a Deployment, and (from a file it imports, outside its directory but
    inside the repository) a ConfigMap."""
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        "metadata: {name: ignored-the-plan-object-names-it}\n"
        + ("imports: [../common/settings.yaml]\n" if settings else "")
        + "workloads:\n"
        f"  - name: {workload}\n"
        "    image: ghcr.io/acme/shop-web:1.4.2\n"
        "    port: 8080\n"
        f"    replicas: {replicas}\n"
    )


SETTINGS = "configMaps:\n  - name: settings\n    data: {mode: production}\n"


def git_plan(
    namespace: str,
    name: str,
    url: str,
    *,
    interval: str = "1s",
    secret: str = "",
    path: str = "plans/shop.yaml",
    verify: str = "",
) -> str:
    secret_ref = f"    secretRef: {{name: {secret}}}\n" if secret else ""
    verified = f"    verify: {{mode: HEAD, secretRef: {{name: {verify}}}}}\n" if verify else ""
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        "source:\n"
        "  git:\n"
        f"    url: {url}\n"
        "    ref: {branch: main}\n"
        f"    path: {path}\n"
        f"    interval: {interval}\n"
        f"{secret_ref}"
        f"{verified}"
    )


def repository(served: Served, tmp_path: Path, name: str) -> WorkTree:
    return new_repository(served.base, name, tmp_path / f"work-{name}")


def applied(kubectl: Runner, namespace: str, name: str, revision: str) -> dict[str, object]:
    """The Plan once its last applied revision is `revision` and it is Ready at it."""
    seen: list[object] = []

    def probe() -> dict[str, object] | None:
        plan = get_json(kubectl, "plan", name, "-n", namespace)
        status = plan.get("status", {})
        ready = conditions(plan).get("Ready", {})
        done = status.get("lastAppliedRevision") == revision and ready.get("status") == "True"
        seen[:] = [status]
        return plan if done and revision in str(ready.get("message")) else None

    try:
        return eventually(probe, timeout=120, interval=0.2)
    except AssertionError:
        raise AssertionError(f"plan/{name} never applied {revision}: {seen}") from None


def replicas(kubectl: Runner, namespace: str) -> int:
    return int(get_json(kubectl, "deployment", "web", "-n", namespace)["spec"]["replicas"])


def test_a_push_is_applied_a_bad_commit_is_not_and_a_force_push_back_applies_the_earlier_plan(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, daemon: Served, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    work = repository(daemon, tmp_path, f"shop-{namespace}")
    first = work.commit({"plans/shop.yaml": shop_file(1), "common/settings.yaml": SETTINGS}, "one replica")
    controllers("-n", namespace, "--interval", "1h")
    url = daemon.url(f"shop-{namespace}")
    assert kubectl("apply", "-f", "-", stdin=git_plan(namespace, "shop", url)).returncode == 0

    # The first commit: applied, its revision in the status, the Event, the REVISION column, history.
    plan = applied(kubectl, namespace, "shop", f"main@sha1:{first}")
    assert conditions(plan)["SourceReady"]["status"] == "True"
    assert replicas(kubectl, namespace) == 1
    assert get_json(kubectl, "configmap", "settings", "-n", namespace)["data"] == {"mode": "production"}
    assert any(f"main@sha1:{first}" in message for _, _, message in plan_events(kubectl, namespace, "shop"))
    listed = kubectl("get", "plans", "-n", namespace)
    assert f"main@sha1:{first}" in listed.stdout.splitlines()[1], listed.stdout
    history = planner("history", "shop", "-n", namespace, "-o", "json")
    assert history.returncode == 0, history.stderr
    generations = json.loads(history.stdout)["generations"]
    assert [g["revision"] for g in generations] == [f"main@sha1:{first}"]

    # A push: the new commit applied.
    second = work.commit({"plans/shop.yaml": shop_file(2)}, "two replicas")
    applied(kubectl, namespace, "shop", f"main@sha1:{second}")
    assert replicas(kubectl, namespace) == 2

    # Rollback to the first commit's generation, although the branch moved on; suspended, the Plan
    # keeps it; resumed, the controller applies the branch's head again (docs/gitops.md, "Rolling back").
    suspend = '{"reconcile": {"suspend": true}}'
    assert kubectl("patch", "plan", "shop", "-n", namespace, "--type=merge", "-p", suspend).returncode == 0
    eventually(
        lambda: (
            conditions(get_json(kubectl, "plan", "shop", "-n", namespace))["Ready"]["reason"] == "Suspended"
        )
    )
    rolled = planner("rollback", "shop", "-n", namespace, "--to", "1")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert replicas(kubectl, namespace) == 1
    resume = '{"reconcile": {"suspend": false}}'
    assert kubectl("patch", "plan", "shop", "-n", namespace, "--type=merge", "-p", resume).returncode == 0
    eventually(lambda: replicas(kubectl, namespace) == 2, timeout=60, interval=0.2)

    # A commit whose plan is invalid: nothing written, SourceReady False says where, the last good stays.
    bad = work.commit({"plans/shop.yaml": shop_file(2).replace("replicas: 2", "replicas: two")}, "broken")

    def refused() -> dict[str, object] | None:
        found = get_json(kubectl, "plan", "shop", "-n", namespace)
        source = conditions(found).get("SourceReady", {})
        return found if source.get("status") == "False" and bad in str(source.get("message")) else None

    plan = eventually(refused, timeout=60, interval=0.2)
    source = conditions(plan)["SourceReady"]
    assert source["reason"] == "PlanInvalid"
    assert (
        "plans/shop.yaml:9:" in source["message"] and f"main@sha1:{second} stays applied" in source["message"]
    )
    assert plan["status"]["lastAttemptedRevision"] == f"main@sha1:{bad}"  # type: ignore[index]
    assert plan["status"]["lastAppliedRevision"] == f"main@sha1:{second}"  # type: ignore[index]
    assert replicas(kubectl, namespace) == 2

    # A force-push back to the first commit: its plan applied again.
    work.force_push(first)
    plan = applied(kubectl, namespace, "shop", f"main@sha1:{first}")
    assert conditions(plan)["SourceReady"]["status"] == "True"
    assert replicas(kubectl, namespace) == 1


def test_with_verify_a_signed_commit_is_applied_and_an_unsigned_one_pushed_on_top_is_refused(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, daemon: Served, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    alice = ssh_key(tmp_path, "alice")
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{alice}.pub"], capture_output=True, text=True, check=True
    )
    alice_fingerprint = listed.stdout.split()[1]
    trusted = kubectl(
        "create", "secret", "generic", "signers", "-n", namespace, f"--from-file=alice.pub={alice}.pub"
    )  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr
    work = repository(daemon, tmp_path, f"signed-{namespace}")
    files = {"plans/shop.yaml": shop_file(1), "common/settings.yaml": SETTINGS}
    signed = work.commit(files, "one replica, signed", signer=ssh_signer(alice))
    controllers("-n", namespace, "--interval", "1h")
    plan_text = git_plan(namespace, "shop", daemon.url(f"signed-{namespace}"), verify="signers")
    assert kubectl("apply", "-f", "-", stdin=plan_text).returncode == 0

    plan = applied(kubectl, namespace, "shop", f"main@sha1:{signed}")
    assert conditions(plan)["SourceReady"]["message"] == (
        f"fetched main@sha1:{signed}, signed by ssh key {alice_fingerprint} (entry alice.pub)"
    )
    assert replicas(kubectl, namespace) == 1

    # An unsigned commit on top: refused before its plan is read; the signed one stays applied.
    unsigned = work.commit({"plans/shop.yaml": shop_file(2)}, "two replicas, unsigned")

    def refused() -> dict[str, object] | None:
        found = get_json(kubectl, "plan", "shop", "-n", namespace)
        source = conditions(found).get("SourceReady", {})
        return found if source.get("status") == "False" and unsigned in str(source.get("message")) else None

    plan = eventually(refused, timeout=60, interval=0.2)
    source, ready = conditions(plan)["SourceReady"], conditions(plan)["Ready"]
    assert source["reason"] == ready["reason"] == "InvalidCommitSignature"
    assert source["message"] == (
        f"commit {unsigned} refused: it is not signed; main@sha1:{signed} stays applied"
    )
    assert plan["status"]["lastAttemptedRevision"] == f"main@sha1:{unsigned}"  # type: ignore[index]
    assert plan["status"]["lastAppliedRevision"] == f"main@sha1:{signed}"  # type: ignore[index]
    assert replicas(kubectl, namespace) == 1

    # Deleted while its head is refused: pruned by the generation it applied last, not held for ever.
    deleted = kubectl("delete", "plan", "shop", "-n", namespace, "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr
    assert kubectl("get", "deployment", "web", "-n", namespace).returncode != 0
    assert kubectl("get", "configmap", "settings", "-n", namespace).returncode != 0


def post_hook(address: str, name: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        f"http://{address}/hooks/{name}", data=body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_one_fetch_serves_every_plan_on_the_repository_and_a_signed_push_hook_fetches_it_again(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, daemon: Served, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    name = f"many-{namespace}"
    work = repository(daemon, tmp_path, name)
    files = {f"plans/shop-{n}.yaml": shop_file(1, f"web-{n}", settings=False) for n in range(4)}
    commit = work.commit(files, "one")
    before = upload_packs(daemon)
    plans = "---\n".join(
        git_plan(namespace, f"shop-{n}", daemon.url(name), interval="1h", path=f"plans/shop-{n}.yaml")
        for n in range(4)
    )
    assert kubectl("apply", "-f", "-", stdin=plans).returncode == 0
    token = "hook-token-1"
    made = kubectl("create", "secret", "generic", "hooks", "-n", namespace, f"--from-literal=deploy={token}")
    assert made.returncode == 0, made.stderr
    running = controllers("-n", namespace, "--interval", "1h", "--hooks-secret", "hooks")
    for n in range(4):
        applied(kubectl, namespace, f"shop-{n}", f"main@sha1:{commit}")
    # Four Plans on one repository, URL, ref and credentials: one fetch between them (the daemon's log
    # counts every upload-pack connection, across every test of the module: hence the difference).
    assert upload_packs(daemon) - before == 1

    # A push, told by webhooks: unsigned, wrongly signed, for no such hook: 401, nothing fetched.
    pushed = work.commit(
        {f"plans/shop-{n}.yaml": shop_file(2, f"web-{n}", settings=False) for n in range(4)}, "two"
    )
    body = json.dumps({"ref": "refs/heads/main", "repository": {"clone_url": daemon.url(name)}}).encode()
    signature = "sha256=" + hmac.new(token.encode(), body, hashlib.sha256).hexdigest()
    wrong = "sha256=" + hmac.new(b"guess", body, hashlib.sha256).hexdigest()
    github = {"Content-Type": "application/json", "X-GitHub-Event": "push"}
    assert post_hook(running.address, "deploy", body, github) == 401
    assert post_hook(running.address, "deploy", body, {**github, "X-Hub-Signature-256": wrong}) == 401
    assert post_hook(running.address, "other", body, {**github, "X-Hub-Signature-256": signature}) == 401
    assert post_hook(running.address, "deploy", body, {"X-Gitlab-Token": "guess"}) == 401
    assert upload_packs(daemon) - before == 1

    # Signed: one fetch, and every Plan on the repository applies the pushed commit (their interval is 1h).
    assert post_hook(running.address, "deploy", body, {**github, "X-Hub-Signature-256": signature}) == 202
    for n in range(4):
        applied(kubectl, namespace, f"shop-{n}", f"main@sha1:{pushed}")
    assert upload_packs(daemon) - before == 2
    with urllib.request.urlopen(f"http://{running.address}/metrics", timeout=30) as reply:
        assert 'planner_source_fetches_total{result="ok"} 2.0' in reply.read().decode()
    assert post_hook(running.address, "deploy", body, {"X-Gitlab-Token": token}) == 202  # GitLab's way


def test_over_http_refused_credentials_say_so_without_showing_them_and_good_ones_apply(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    with http_backend(tmp_path / "http", username="alice", password="s3cret-token") as served:
        work = repository(served, tmp_path, "shop")
        commit = work.commit({"plans/shop.yaml": shop_file(1), "common/settings.yaml": SETTINGS}, "one")
        made = kubectl(
            "create", "secret", "generic", "repo", "-n", namespace,
            "--from-literal=username=alice", "--from-literal=password=wrong-guess",
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        running = controllers("-n", namespace, "--interval", "1h")
        plan_text = git_plan(namespace, "shop", served.url("shop"), secret="repo")
        assert kubectl("apply", "-f", "-", stdin=plan_text).returncode == 0

        def refused() -> dict[str, object] | None:
            found = get_json(kubectl, "plan", "shop", "-n", namespace)
            return found if conditions(found).get("SourceReady", {}).get("status") == "False" else None

        plan = refused_plan = eventually(refused, timeout=60, interval=0.2)
        source = conditions(plan)["SourceReady"]
        assert source["reason"] == "AuthenticationFailed", source
        assert kubectl("get", "deployment", "web", "-n", namespace).returncode != 0  # nothing written
        shown = (
            json.dumps(refused_plan) + json.dumps(plan_events(kubectl, namespace, "shop")) + running.output()
        )
        assert "wrong-guess" not in shown

        # The Secret fixed, a reconcile asked for: the commit is fetched with the new credentials.
        fixed = kubectl(
            "create", "secret", "generic", "repo", "-n", namespace, "--dry-run=client", "-o", "yaml",
            "--from-literal=username=alice", "--from-literal=password=s3cret-token",
        )  # fmt: skip
        assert kubectl("apply", "-f", "-", stdin=fixed.stdout).returncode == 0
        now = planner("reconcile", "--now", "plan/shop", "-n", namespace, "--timeout", "120s")
        assert now.returncode == 0, now.stdout + now.stderr
        applied(kubectl, namespace, "shop", f"main@sha1:{commit}")
        assert replicas(kubectl, namespace) == 1
        assert "s3cret-token" not in running.output()


def test_over_ssh_a_known_host_is_fetched_with_the_secrets_key_and_an_unknown_host_key_is_refused(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    with ssh_server(tmp_path / "ssh") as served:
        work = repository(served, tmp_path, "shop")
        commit = work.commit({"plans/shop.yaml": shop_file(1), "common/settings.yaml": SETTINGS}, "one")
        stranger = served.known_hosts.split()[0] + " ssh-ed25519 " + STRANGER_KEY + "\n"
        for name, known_hosts in (("repo", served.known_hosts), ("stranger", stranger)):
            made = kubectl(
                "create", "secret", "generic", name, "-n", namespace,
                f"--from-literal=identity={served.identity}", f"--from-literal=known_hosts={known_hosts}",
            )  # fmt: skip
            assert made.returncode == 0, made.stderr
        running = controllers("-n", namespace, "--interval", "1h")
        texts = [
            git_plan(namespace, "shop", served.url("shop"), secret="repo"),
            git_plan(namespace, "other", served.url("shop"), secret="stranger", path="plans/none.yaml"),
        ]
        assert kubectl("apply", "-f", "-", stdin="---\n".join(texts)).returncode == 0

        applied(kubectl, namespace, "shop", f"main@sha1:{commit}")
        assert replicas(kubectl, namespace) == 1

        def refused() -> dict[str, object] | None:
            found = get_json(kubectl, "plan", "other", "-n", namespace)
            return found if conditions(found).get("SourceReady", {}).get("status") == "False" else None

        source = conditions(eventually(refused, timeout=60, interval=0.2))["SourceReady"]
        assert source["reason"] == "HostKeyRefused", source
        assert "PRIVATE KEY" not in running.output() + json.dumps(source)


# An ed25519 public key no server here has (made once with ssh-keygen, its private half thrown away).
STRANGER_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIHgRs/V6o1rrMdyVwVfemhftK/ZKkWkAvtqfIn2yT3Xx"


def test_a_chart_in_a_git_source_renders_with_the_clusters_capabilities(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, daemon: Served, tmp_path: Path
) -> None:
    """Helm's defaults (`helm template` without a cluster: KubeVersion v1.36.0, no planner.dev API)
    would print other values than the embedded cluster's discovery gives."""
    install_crd(planner, kubectl)
    work = repository(daemon, tmp_path, f"probe-{namespace}")
    revision = work.commit(
        {
            "charts/probe/Chart.yaml": "apiVersion: v2\nname: probe\nversion: 1.0.0\n",
            "charts/probe/templates/seen.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seen}\n"
            "data:\n  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}\n"
            '  servesPlans: {{ .Capabilities.APIVersions.Has "planner.dev/v1/Plan" | quote }}\n',
            "plans/shop.yaml": "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: ignored}\ncharts:\n"
            f"  - {{name: probe, chart: ../charts/probe, namespace: {namespace}}}\n",
        },
        "a chart that prints what it sees of the cluster",
    )
    controllers("-n", namespace, "--interval", "1h")
    url = daemon.url(f"probe-{namespace}")
    assert kubectl("apply", "-f", "-", stdin=git_plan(namespace, "probe", url)).returncode == 0
    applied(kubectl, namespace, "probe", f"main@sha1:{revision}")
    version = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert version != "v1.36.0"
    seen = get_json(kubectl, "configmap", "seen", "-n", namespace)["data"]
    assert seen == {"kubeVersion": version, "servesPlans": "true"}
