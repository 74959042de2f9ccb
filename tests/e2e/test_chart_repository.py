"""Charts from an HTTP chart repository served by a real web server (lighttpd, Debian's package, which
.ci/run installs when missing): `planner render` fetches a pinned version through `index.yaml`, caches
it by digest (a second render reads the cache, not the server's archive), refuses an archive that does
not match the index's digest, and refuses a version whose digest changed after it was first seen (no
cluster: render reads none). A repository behind basic auth: without credentials a plan error naming it
and the 401, nothing written; with `credentials` from the environment it plans and applies (checked
through kubectl), and the password shows in no output, saved plan, generation or object.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests import clirun
from tests.e2e.conftest import Runner, current_rv
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_git_sources import applied, git_plan
from tests.e2e.test_plan_objects import install_crd
from tests.gitservers import git_daemon, new_repository

__all__ = ["controllers"]  # the fixture, shared with test_controller

CHART = Path(__file__).parent.parent / "data" / "charts" / "web"
LIGHTTPD = shutil.which("lighttpd") or "/usr/sbin/lighttpd"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:  # Deployments ready, Jobs complete
        yield handle


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory served by lighttpd on a free loopback port, and its URL."""
    yield from _served(tmp_path, users=None)


@pytest.fixture
def private_site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """As `site`, every file behind basic auth (user `charts`, password `PASSWORD`)."""
    yield from _served(tmp_path, users=f"charts:{PASSWORD}\n")


PASSWORD = "s3cret-Zq8-chart-repo"


def _served(tmp_path: Path, users: str | None) -> Iterator[tuple[Path, str]]:
    if not os.path.exists(LIGHTTPD):
        pytest.fail("lighttpd is not installed (.ci/run installs it): apt-get install lighttpd")
    root = tmp_path / "site"
    root.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "lighttpd.conf"
    config.write_text(
        f'server.document-root = "{root}"\nserver.bind = "127.0.0.1"\nserver.port = {port}\n'
        f'server.errorlog = "{tmp_path / "error.log"}"\n'
        'mimetype.assign = (".yaml" => "text/yaml", ".tgz" => "application/gzip")\n'
    )
    if users is not None:
        (tmp_path / "users").write_text(users)
        with config.open("a") as appended:
            appended.write(
                'server.modules += ("mod_auth", "mod_authn_file")\nauth.backend = "plain"\n'
                f'auth.backend.plain.userfile = "{tmp_path / "users"}"\n'
                'auth.require = ("/" => ("method" => "basic", "realm" => "charts", "require" => "valid-user"))\n'
            )
    server = subprocess.Popen([LIGHTTPD, "-D", "-f", str(config)], stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield root, f"http://127.0.0.1:{port}/charts"
    finally:
        server.terminate()
        server.wait(timeout=10)


def publish(site: Path, chart: Path, *, greeting: str = "hello", digest: str | None = None) -> str:
    """The chart packaged as web-1.0.0.tgz under site/charts with an index.yaml naming it; its digest."""
    source = site.parent / "source" / "web"
    shutil.rmtree(source.parent, ignore_errors=True)
    shutil.copytree(chart, source)
    (source / "values.yaml").write_text((source / "values.yaml").read_text().replace("hello", greeting))
    (site / "charts").mkdir(exist_ok=True)
    archive = site / "charts" / "web-1.0.0.tgz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(source, arcname="web")
    actual = hashlib.sha256(archive.read_bytes()).hexdigest()
    (site / "charts" / "index.yaml").write_text(
        "apiVersion: v1\nentries:\n  web:\n"
        f"    - {{name: web, version: 1.0.0, digest: {digest or actual}, urls: [web-1.0.0.tgz]}}\n"
    )
    return actual


def render(plan: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PLANNER_CACHE_DIR": str(cache)}
    return clirun.run(["render", "-n", "shop", str(plan)], cwd=plan.parent, env=environment)


def test_a_pinned_chart_is_fetched_through_the_index_cached_by_digest_and_never_changes_silently(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    root, url = site
    digest = publish(root, CHART)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\n"
        f"allowClusterScoped: true\ncharts:\n  - {{name: web, chart: web, version: 1.0.0, repo: '{url}', skipTests: true}}\n"
    )
    cache = tmp_path / "cache"

    first = render(plan, cache)
    assert first.returncode == 0, first.stderr
    assert "greeting: hello" in first.stdout and "kind: Gizmo" in first.stdout
    assert (cache / "charts" / f"sha256-{digest}.tgz").is_file()

    # The index still names the same digest: the cached archive is used, whatever the server now holds.
    (root / "charts" / "web-1.0.0.tgz").write_bytes(b"not a chart")
    again = render(plan, cache)
    assert again.returncode == 0, again.stderr
    assert "greeting: hello" in again.stdout

    # An archive that does not match its index entry is refused (a fresh cache must download it).
    publish(root, CHART, greeting="tampered", digest="f" * 64)
    mismatch = render(plan, tmp_path / "fresh")
    assert mismatch.returncode == 1
    assert f"{plan}:6:" in mismatch.stderr and "not the sha256:" + "f" * 64 in mismatch.stderr

    # Republished under the same version with other content: refused, where the old digest was seen.
    changed = publish(root, CHART, greeting="bonjour")
    refused = render(plan, cache)
    assert refused.returncode == 1
    assert f"now has digest sha256:{changed}, but had sha256:{digest} before" in refused.stderr
    assert "bonjour" not in refused.stdout


def test_a_version_the_repository_lacks_and_an_unreachable_repository_are_plan_errors(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    root, url = site
    publish(root, CHART)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\ncharts:\n"
        f"  - {{name: web, chart: web, version: 9.9.9, repo: '{url}'}}\n"
        f"  - {{name: api, chart: web, version: 1.0.0, repo: '{url}/missing'}}\n"
    )
    found = render(plan, tmp_path / "cache")
    assert found.returncode == 1
    assert found.stderr.splitlines()[-2:] == [
        f"{plan}:5:51: charts[0].repo: the repository has no version 9.9.9 of 'web' (it has 1.0.0)",
        f"{plan}:6:51: charts[1].repo: cannot read the repository's index: {url}/missing/index.yaml: "
        "HTTP 404 Not Found",
    ]


def test_a_repository_behind_basic_auth_needs_credentials_from_the_environment_and_never_shows_them(
    private_site: tuple[Path, str],
    tmp_path: Path,
    planner: Runner,
    kubectl: Runner,
    cluster: ClusterHandle,
    namespace: str,
) -> None:
    root, url = private_site
    publish(root, CHART)
    plan = tmp_path / "plan.yaml"
    head = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: private, namespace: {namespace}}}\nallowClusterScoped: true\n"
        "charts:\n"
        f"  - name: web\n    chart: web\n    version: 1.0.0\n    repo: '{url}'\n    skipTests: true\n"
    )
    plan.write_text(head)
    environment = {"PLANNER_CACHE_DIR": str(tmp_path / "cache")}

    before = current_rv(cluster)
    refused = planner("apply", str(plan), "--timeout", "90s", env=environment)
    assert refused.returncode == 1
    assert f"{plan}:9:11: charts[0].repo: cannot read the repository's index: {url}/index.yaml: HTTP 401" in (
        refused.stderr
    )
    assert "requires authentication" in refused.stderr and "Traceback" not in refused.stderr
    assert current_rv(cluster) == before  # nothing written

    plan.write_text(
        head + "    credentials:\n      username: {valueFrom: {env: CHARTS_USERNAME}}\n"
        "      password: {valueFrom: {env: CHARTS_PASSWORD}}\n"
    )
    outputs, saved = applied_with_credentials(planner, plan, environment, PASSWORD, "repository")
    environment |= {"CHARTS_USERNAME": "charts", "CHARTS_PASSWORD": PASSWORD}
    outputs.append(planner("history", str(plan), "--show", "1", env=environment))
    assert outputs[-1].returncode == 0, outputs[-1].stderr

    deployment = json.loads(kubectl("get", "deployment", "web", "-n", namespace, "-o", "json").stdout)
    assert deployment["spec"]["replicas"] == 1  # the chart's default
    settings = json.loads(kubectl("get", "configmap", "web-settings", "-n", namespace, "-o", "json").stdout)
    assert settings["data"]["greeting"] == "hello"
    never_shown(
        PASSWORD, kubectl, [*(o.stdout + o.stderr for o in outputs), saved.read_text(errors="replace")]
    )

    # Flux's form, as a Plan object the controller reconciles uses it: the keys of a Secret in the
    # plan's namespace, read from the cluster (the CLI reads it as its kubeconfig's user).
    plan.write_text(head + "    credentials: {secretRef: {name: chart-repo}}\n")
    missing = planner("plan", str(plan), env=environment)
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f'{plan}:11:37: charts[0].credentials.secretRef.name: Secret "chart-repo" not found in namespace {namespace}'
    ]
    created = kubectl(
        "create", "secret", "generic", "chart-repo", "-n", namespace,
        "--from-literal=username=charts", f"--from-literal=password={PASSWORD}",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    by_secret = planner("plan", str(plan), env={"PLANNER_CACHE_DIR": str(tmp_path / "cache")})
    assert by_secret.returncode == 0, by_secret.stderr
    assert PASSWORD not in by_secret.stdout + by_secret.stderr


def applied_with_credentials(
    planner: Runner, plan: Path, environment: dict[str, str], password: str, where: str
) -> tuple[list[subprocess.CompletedProcess[str]], Path]:
    """The plan, whose credentials are `{valueFrom: {env: CHARTS_USERNAME}}` and `CHARTS_PASSWORD`,
    refused by the `where` ("repository", "registry") with a wrong password, then planned into a saved
    plan and applied as user `charts` with `password`: every output (the refusal first) and the saved
    plan."""
    wrong = planner(
        "plan", str(plan), env={**environment, "CHARTS_USERNAME": "charts", "CHARTS_PASSWORD": "no"}
    )
    assert wrong.returncode == 1 and f"(the {where} refused the `credentials` given)" in wrong.stderr
    environment = {**environment, "CHARTS_USERNAME": "charts", "CHARTS_PASSWORD": password}
    saved = plan.parent / "saved.plan"
    outputs = [wrong, planner("plan", str(plan), "--out", str(saved), env=environment)]
    assert outputs[-1].returncode == 0, outputs[-1].stderr
    outputs.append(planner("apply", str(saved), "--timeout", "90s", env=environment))
    assert outputs[-1].returncode == 0, outputs[-1].stderr
    return outputs, saved


def never_shown(password: str, kubectl: Runner, texts: list[str]) -> None:
    """`password`, plain or base64, is in none of `texts` nor in any ConfigMap or Secret of the cluster."""
    everything = kubectl("get", "configmaps,secrets", "-A", "-o", "json").stdout
    encoded = base64.b64encode(password.encode()).decode()
    for text in [*texts, everything]:
        assert password not in text and encoded not in text


def test_a_plan_object_from_git_reads_the_repository_credentials_from_its_secret(
    private_site: tuple[Path, str],
    tmp_path: Path,
    planner: Runner,
    kubectl: Runner,
    namespace: str,
    controllers: Start,
) -> None:
    root, url = private_site
    chart = tmp_path / "small"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "settings.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {greeting: {{ .Values.greeting }}}\n"
    )
    publish(root, chart)
    install_crd(planner, kubectl)
    entry = f"{{name: web, chart: web, version: 1.0.0, repo: '{url}', namespace: {namespace}}}"
    reconciled_from_git(tmp_path, kubectl, controllers, namespace, entry, PASSWORD)
    settings = json.loads(kubectl("get", "configmap", "web-settings", "-n", namespace, "-o", "json").stdout)
    assert settings["data"] == {"greeting": "hello"}


def reconciled_from_git(
    tmp_path: Path, kubectl: Runner, controllers: Start, namespace: str, entry: str, password: str
) -> None:
    """The chart `entry` (a flow mapping, without credentials) in a plan file in Git, reconciled by the
    controller as the Plan object `shop`, its credentials `{secretRef: {name: chart-login}}`, a Secret
    of user `charts` with `password`: once applied, the password is in neither its status nor Events."""
    with git_daemon(tmp_path / "git") as daemon:
        work = new_repository(daemon.base, "shop", tmp_path / "work")
        with_credentials = entry[:-1] + ", credentials: {secretRef: {name: chart-login}}}"
        revision = work.commit(
            {
                "plans/shop.yaml": "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\ncharts:\n"
                f"  - {with_credentials}\n"
            },
            "a chart behind a login",
        )
        created = kubectl(
            "create", "secret", "generic", "chart-login", "-n", namespace,
            "--from-literal=username=charts", f"--from-literal=password={password}",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        controllers("-n", namespace, "--interval", "1h")
        stored = kubectl("apply", "-f", "-", stdin=git_plan(namespace, "shop", daemon.url("shop")))
        assert stored.returncode == 0, stored.stderr
        applied(kubectl, namespace, "shop", f"main@sha1:{revision}")
    status = kubectl("get", "plan", "shop", "-n", namespace, "-o", "yaml").stdout
    events = kubectl("get", "events", "-n", namespace, "-o", "yaml").stdout
    assert password not in status + events
