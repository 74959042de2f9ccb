"""docs/gitops.md's recipes, run as written against the embedded cluster.

The pipeline's pull-request `plan` job and merge `apply` job run step by step from the workflow in the
doc: each job's and step's `if:` is evaluated, each `run:` script runs in bash as GitHub runs it (`bash -e`,
in the job's workspace, with the step's `env:` and a `$GITHUB_OUTPUT` file that later steps' expressions
read), and the artifact the plan job uploads is the one the apply job downloads. Only what needs GitHub
is stood in for: `actions/checkout` copies the test's repository into the workspace, the upload and
download actions copy files through a directory keyed by branch and name, the sticky-comment action keeps
the file it would post, `gh pr list --search SHA --state merged` answers from the test's merged pull
requests (as `gh --jq` prints an empty result: an empty line), `pip install kube-planner` is checked to
name this project's distribution and `planner` is this checkout's, and the kubeconfig that an earlier
step would write from a secret is the cluster's. A step or action the stand-ins do not know fails the
test, so a changed recipe is run, not skipped.

The scheduled-reconcile recipes:

The CronJob's container command and the systemd unit's ExecStart run with only their paths moved
(`/plans`, `/srv/plans` and the metrics file into a temporary directory, `planner` as this checkout's
`python -m planner`). The cluster enforces RBAC, and the CronJob's command runs as its ServiceAccount:
the ServiceAccount, Role, RoleBinding, ClusterRole and ClusterRoleBinding next to it are created as
written (moved into the test's namespace), and the run authenticates with a token issued for that
ServiceAccount, so it may do exactly what they grant. The server's request log then shows that no
request of the runs was refused (planner carries on past some refusals, such as reading StorageClasses,
so converging alone would not prove the Role complete) and that they made the writes the recipe is for;
a Role without its Lease rule cannot reconcile at all.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from ruamel.yaml import YAML

from planner.slim.cluster import ClusterHandle, running_cluster, write_kubeconfig
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import http
from tests.e2e.test_deploy import verbs_of
from tests.paths import REPO

GITOPS = REPO / "docs" / "gitops.md"
TIME_SCALE = 0.2


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True, rbac=True) as handle:
        yield handle


def fences(language: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(GITOPS.read_text())
    return [token.content for token in tokens if token.type == "fence" and token.info == language]


def manifests() -> list[dict[str, Any]]:
    (block,) = [text for text in fences("yaml") if "kind: CronJob" in text]
    return [document for document in YAML(typ="safe").load_all(block) if document]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [document for document in manifests() if document["kind"] == kind]


def unit(name: str) -> str:
    (text,) = [text for text in fences("ini") if text.startswith(f"# /etc/systemd/system/{name}")]
    return text


def shop(namespace: str, *, image: str, config_maps: tuple[str, ...], claim: bool = False) -> str:
    """The shop plan; with `claim`, web mounts a claim the plan declares (so an apply waits for it)."""
    mounts = (
        ", volumes: [{name: uploads, persistentVolumeClaim: uploads, mountPath: /uploads}]" if claim else ""
    )
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n"
        + "".join(f"  - {{name: {name}, data: {{A: b}}}}\n" for name in config_maps)
        + ("volumeClaims:\n  - {name: uploads, size: 1Gi}\n" if claim else "")
        + (
            "secrets:\n  - {name: token, data: {token: t0k3n}}\n"
            "workloads:\n"
            f"  - {{name: migrate, kind: job, image: '{image}'}}\n"
            f"  - {{name: web, image: '{image}', port: 8080, expose: true, dependsOn: [migrate]{mounts}}}\n"
        )
    )


def run(command: list[str], *, kubeconfig: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def as_run_here(command: list[str], moves: dict[str, str]) -> list[str]:
    """The recipe's command with `planner` as this checkout's and its paths moved."""
    assert Path(command[0]).name == "planner", command
    return [sys.executable, "-m", "planner", *(moves.get(arg, arg) for arg in command[1:])]


COLLECTIONS = {
    "ServiceAccount": "/api/v1/namespaces/{namespace}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def moved(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`document` with the recipe's namespace (`shop`) replaced by `namespace`, and a cluster-scoped
    object's name made the namespace's own (one cluster serves every test of the module)."""
    written = json.loads(json.dumps(document).replace('"namespace": "shop"', f'"namespace": "{namespace}"'))
    if "namespace" not in written["metadata"]:
        written["metadata"]["name"] = f"{written['metadata']['name']}-{namespace}"
        if "roleRef" in written:
            written["roleRef"]["name"] = f"{written['roleRef']['name']}-{namespace}"
    return written


def as_the_service_account(
    cluster: ClusterHandle, namespace: str, tmp_path: Path, *, without_rules_for: str | None = None
) -> tuple[Path, str]:
    """Create the recipe's ServiceAccount and roles (less the Role's rules for `without_rules_for`, a
    resource) in `namespace` as the admin; a kubeconfig holding a token issued for that ServiceAccount,
    and the user the server knows it as."""
    (account,) = of_kind("ServiceAccount")
    for kind, path in COLLECTIONS.items():
        for document in of_kind(kind):
            body = moved(document, namespace)
            if kind == "Role" and without_rules_for is not None:
                body["rules"] = [r for r in body["rules"] if without_rules_for not in r["resources"]]
            status, created = http(cluster, "POST", path.format(namespace=namespace), body)
            assert status == 201, created
    name = account["metadata"]["name"]
    status, issued = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {})
    assert status == 201, issued
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url, issued["status"]["token"], cluster.ca)
    return kubeconfig, f"system:serviceaccount:{namespace}:{name}"


def cronjob_command(plans: Path) -> list[str]:
    (cronjob,) = of_kind("CronJob")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = container["volumeMounts"]
    return as_run_here(container["command"] + container.get("args", []), {mount["mountPath"]: str(plans)})


def test_the_recipes_roles_are_bound_to_the_cronjobs_service_account() -> None:
    (cronjob,) = of_kind("CronJob")
    (role,), (cluster_role,), (account,) = of_kind("Role"), of_kind("ClusterRole"), of_kind("ServiceAccount")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    bindings = of_kind("RoleBinding") + of_kind("ClusterRoleBinding")
    assert {(b["kind"], b["roleRef"]["name"]) for b in bindings} == {
        ("RoleBinding", role["metadata"]["name"]),
        ("ClusterRoleBinding", cluster_role["metadata"]["name"]),
    }
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "shop"}
    assert all(b["subjects"] == [subject] for b in bindings)


def test_the_cronjobs_command_reconciles_as_its_service_account_and_no_request_is_refused(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path)
    plans = tmp_path / "plans"
    plans.mkdir()
    command = cronjob_command(plans)

    # A first run creates everything; the next one changes an image and prunes a ConfigMap.
    # web's claim is waited for, and a claim's verdict reads the StorageClasses (the ClusterRole's rule).
    (plans / "shop.yaml").write_text(
        shop(namespace, image="nginx:1.27", config_maps=("settings", "old"), claim=True)
    )
    first = run(command, kubeconfig=kubeconfig, home=home)
    (plans / "shop.yaml").write_text(
        shop(namespace, image="nginx:1.28", config_maps=("settings",), claim=True)
    )
    second = run(command, kubeconfig=kubeconfig, home=home)

    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    assert "warning" not in first.stderr + second.stderr
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/old")[0] == 404
    web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[1]
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    requests = SlimAdmin.of(cluster).requests(user=user)
    refused = sorted({(r["verb"], r["resource"], r["code"]) for r in requests if r["code"] in (401, 403)})
    assert refused == [], f"the Role does not grant what the runs asked for: {refused}"
    used = {(verb, r["resource"]) for r in requests for verb in verbs_of(r["verb"], r["code"])}
    assert {("create", "deployments"), ("patch", "deployments"), ("delete", "configmaps")} <= used
    assert {("create", "leases"), ("delete", "leases"), ("list", "storageclasses")} <= used
    assert ("watch", "jobs") in used and ("update", "leases") not in used  # waited; no renewal needed
    assert ("watch", "events") in used  # why a wait would not be over, read through an informer


def test_without_the_roles_lease_rule_the_cronjobs_command_reconciles_nothing(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path, without_rules_for="leases")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))

    result = run(cronjob_command(plans), kubeconfig=kubeconfig, home=home)

    assert result.returncode == 1, result.stdout + result.stderr
    reconciled, _summary = (json.loads(line) for line in result.stdout.splitlines())
    assert (reconciled["plan"], reconciled["result"]) == ("shop", "failed")
    assert reconciled["message"].startswith(
        f'forbidden: leases.coordination.k8s.io is forbidden: User "{user}" cannot create resource "leases" '
        f'in API group "coordination.k8s.io" in the namespace "{namespace}"'
    )
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")[0] == 404
    requests = SlimAdmin.of(cluster).requests(user=user)
    assert [(r["verb"], r["code"]) for r in requests if r["resource"] == "leases"] == [("create", 403)]


def test_the_systemd_units_execstart_reconciles_and_writes_its_metrics(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    service, timer = unit("planner-reconcile.service"), unit("planner-reconcile.timer")
    lines = dict(
        line.split("=", 1) for line in service.splitlines() if "=" in line and not line.startswith("#")
    )
    assert (lines["Type"], lines["SuccessExitStatus"]) == ("oneshot", "3")
    assert "OnUnitInactiveSec=10min" in timer.splitlines()
    command = shlex.split(lines["ExecStart"])
    plans, metrics = tmp_path / "plans", tmp_path / "planner.prom"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))
    moves = {"/srv/plans": str(plans), "/var/lib/node_exporter/textfile_collector/planner.prom": str(metrics)}

    result = run(as_run_here(command, moves), kubeconfig=cluster.kubeconfig, home=home)

    assert result.returncode == 0, result.stdout + result.stderr
    assert f'planner_reconcile_failed{{namespace="{namespace}",plan="shop"}} 0.0' in metrics.read_text()


def test_without_the_roles_events_rule_the_cronjobs_command_still_reconciles_and_says_what_it_misses(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path, without_rules_for="events")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))

    result = run(cronjob_command(plans), kubeconfig=kubeconfig, home=home)

    assert result.returncode == 0, result.stdout + result.stderr  # reasons help; they are never required
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(  # either of the two Event caches (their field selectors) says it
        f"warning: cannot read events for wait reasons: the events cache ({namespace}; "
    )
    assert warnings[0].endswith("; reasons leave out what they say")
    web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web[0] == 200
    requests = SlimAdmin.of(cluster).requests(user=user)
    assert {(r["verb"], r["code"]) for r in requests if r["resource"] == "events"} == {("list", 403)}


# --- the pipeline: the pull request's plan job and the merge's apply job ------------------------------


def workflow() -> dict[str, Any]:
    (block,) = [text for text in fences("yaml") if text.startswith("# .github/workflows/planner.yaml")]
    document: dict[str, Any] = YAML(typ="safe").load(block)
    return document


@dataclass
class GitHub:
    """What the jobs see of GitHub: the repository's files at each commit, the merged pull requests
    (merge commit -> branch), the artifacts uploaded (by branch and name) and the comments posted."""

    root: Path
    commits: dict[str, dict[str, str]] = field(default_factory=dict)
    merged: dict[str, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)

    def artifact(self, branch: str, name: str) -> Path:
        return self.root / "artifacts" / branch / name


@dataclass
class Job:
    succeeded: bool
    ran: list[str]  # the names (else the commands or actions) of the steps that ran, in order
    outputs: dict[str, dict[str, str]]  # by step id
    logs: dict[str, subprocess.CompletedProcess[str]]  # each run step's, by its name or command
    workspace: Path


def step_name(step: dict[str, Any]) -> str:
    return str(step.get("name") or step.get("uses") or step["run"].strip())


class Expressions:
    """The `${{ }}` expressions and `if:` conditions the recipe uses; any other is an error."""

    def __init__(self, event: str, runner_temp: Path, outputs: dict[str, dict[str, str]]) -> None:
        self.values = {
            "github.event_name": event,
            "runner.temp": str(runner_temp),
            "github.token": "gh-token",
        }
        self.outputs = outputs

    def value(self, name: str) -> str:
        if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", name):
            return self.outputs.get(match[1], {}).get(match[2], "")
        return self.values[name]

    def expand(self, text: str) -> str:
        return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: self.value(m[1]), text)

    def holds(self, condition: str | None) -> bool:
        if condition is None:
            return True
        match = re.fullmatch(r"([\w.-]+) == '([^']*)'", condition.strip())
        assert match, f"a condition the test cannot evaluate: {condition}"
        return self.value(match[1]) == match[2]


@dataclass
class Pipeline:
    github: GitHub
    cluster: ClusterHandle
    home: Path

    def pull_request(self, branch: str) -> Job | None:
        """The workflow's `plan` job, run for a pull request from `branch` (its head commit)."""
        return self.run("plan", event="pull_request", commit=branch, branch=branch)

    def push(self, commit: str) -> Job | None:
        """The workflow's `apply` job, run for `commit` pushed to main."""
        return self.run("apply", event="push", commit=commit, branch="main")

    def run(self, name: str, *, event: str, commit: str, branch: str) -> Job | None:
        """Run the workflow's job `name` for an `event` on `commit` (of `branch`), as GitHub would; None
        when the job's `if:` leaves it out for that event."""
        job = workflow()["jobs"][name]
        runner = Runner.made(self.github.root / f"{name}-{commit}", self)
        result = Job(succeeded=True, ran=[], outputs={}, logs={}, workspace=runner.workspace)
        expressions = Expressions(event, runner.temp, result.outputs)
        if not expressions.holds(job.get("if")):
            return None
        for step in job["steps"]:
            if not expressions.holds(step.get("if")):
                continue
            result.ran.append(step_name(step))
            if "uses" in step:
                inputs = {
                    key: expressions.expand(str(value)) for key, value in (step.get("with") or {}).items()
                }
                act(
                    step["uses"],
                    inputs,
                    workspace=runner.workspace,
                    commit=commit,
                    branch=branch,
                    github=self.github,
                )
                continue
            script = expressions.expand(step["run"])
            if script.split()[:2] == ["pip", "install"]:
                (package,) = script.split()[2:]
                assert package == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
                continue  # `planner` on the PATH is this checkout's
            env = {key: expressions.expand(str(value)) for key, value in (step.get("env") or {}).items()}
            completed, outputs = runner.shell(script, env, commit=commit, event=event)
            result.logs[step_name(step)] = completed
            if "id" in step:
                result.outputs[step["id"]] = outputs
            if completed.returncode != 0:
                result.succeeded = False
                return result  # GitHub skips the rest of the job (no step here asks for `if: failure()`)
        return result


@dataclass(frozen=True)
class Runner:
    """One job's machine: its workspace, `runner.temp` (holding the kubeconfig an earlier step would
    write from a secret) and a PATH with this checkout's `planner` and the `gh` stand-in."""

    workspace: Path
    temp: Path
    bin: Path
    home: Path

    @classmethod
    def made(cls, base: Path, pipeline: Pipeline) -> Runner:
        runner = cls(base / "workspace", base / "temp", base / "bin", pipeline.home)
        for directory in (runner.workspace, runner.temp, runner.bin):
            directory.mkdir(parents=True)
        shutil.copy(pipeline.cluster.kubeconfig, runner.temp / "kubeconfig")
        (runner.bin / "planner").symlink_to(Path(sys.executable).parent / "planner")
        (runner.bin / "gh").write_text(gh_stand_in(pipeline.github))
        (runner.bin / "gh").chmod(0o755)
        return runner

    def shell(
        self, script: str, env: dict[str, str], *, commit: str, event: str
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
        """A `run:` script as GitHub runs it (`bash -e`, in the workspace); what it wrote to
        `$GITHUB_OUTPUT`."""
        output = Path(tempfile.mkstemp(dir=self.temp, prefix="output-")[1])
        github_env = {
            "GITHUB_OUTPUT": str(output),
            "GITHUB_SHA": commit,
            "GITHUB_EVENT_NAME": event,
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
        }
        completed = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=self.workspace,
            env={"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.home), **github_env, **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        written = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return completed, written


def gh_stand_in(github: GitHub) -> str:
    """`gh pr list --state merged --search SHA --json headRefName --jq '.[0].headRefName'`, answered from
    the merged pull requests: the branch, or the empty line `gh` prints for jq's null."""
    answers = "\n".join(f"  {sha}) echo {shlex.quote(branch)} ;;" for sha, branch in github.merged.items())
    return (
        "#!/bin/bash\n"
        '[ -n "$GH_TOKEN" ] || { echo "gh: not logged in" >&2; exit 4; }\n'
        'expected="pr list --state merged --search $GITHUB_SHA --json headRefName --jq .[0].headRefName"\n'
        '[ "$*" = "$expected" ] || { echo "gh stand-in: unexpected arguments: $*" >&2; exit 2; }\n'
        f'case "$GITHUB_SHA" in\n{answers}\n  *) echo ;;\nesac\n'
    )


def act(
    uses: str, inputs: dict[str, str], *, workspace: Path, commit: str, branch: str, github: GitHub
) -> None:
    """The GitHub actions of the recipe, by what they do to files."""
    action = uses.split("@", 1)[0]
    if action == "actions/checkout":
        for path, text in github.commits[commit].items():
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(text)
    elif action == "marocchino/sticky-pull-request-comment":
        github.comments.append((workspace / inputs["path"]).read_text())
    elif action == "actions/upload-artifact":
        stored = github.artifact(branch, inputs["name"])
        stored.mkdir(parents=True, exist_ok=True)
        shutil.copy(workspace / inputs["path"], stored)
    elif action == "dawidd6/action-download-artifact":
        assert inputs["workflow"] == "planner.yaml"
        stored = github.artifact(inputs["branch"], inputs["name"])
        assert stored.is_dir(), f"no artifact {inputs['name']} for branch {inputs['branch']!r}"
        shutil.copytree(stored, workspace / inputs["path"], dirs_exist_ok=True)
    else:
        raise AssertionError(f"the test has no stand-in for the action {uses}")


def pull_request(github: GitHub, plan: str, *, branch: str = "add-shop", merge: str = "m3rg3d") -> None:
    """A pull request from `branch` adding the plan file, merged as commit `merge` (same files)."""
    github.commits[branch] = github.commits[merge] = {"plans/shop.yaml": plan}
    github.merged[merge] = branch


def test_a_pull_requests_reviewed_plan_is_commented_then_applied_on_merge(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    github = GitHub(tmp_path)
    pipeline = Pipeline(github, cluster, home)
    pull_request(github, shop(namespace, image="nginx:1.27", config_maps=("settings",)))

    plan = pipeline.pull_request("add-shop")
    assert pipeline.run("apply", event="pull_request", commit="add-shop", branch="add-shop") is None
    assert plan is not None and plan.succeeded, plan and {k: v.stderr for k, v in plan.logs.items()}
    assert plan.outputs["plan"] == {"code": "2"}  # changes present: not a failure
    assert "fail on error" not in plan.ran
    (comment,) = github.comments
    assert f"deployment/{namespace}/web" in comment and "nginx:1.27" in comment
    # Reviewed, not applied.
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[0] == 404

    apply = pipeline.push("m3rg3d")

    assert apply is not None and apply.succeeded, apply and {k: v.stderr for k, v in apply.logs.items()}
    assert apply.outputs["merged"] == {"branch": "add-shop"}
    web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[1]
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    events = [json.loads(line) for line in (apply.workspace / "apply.jsonl").read_text().splitlines()]
    assert (events[-1]["type"], events[-1]["failed"]) == ("Summary", [])


def test_the_merge_apply_job_fails_when_the_cluster_moved_since_the_review(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    github = GitHub(tmp_path)
    pipeline = Pipeline(github, cluster, home)
    pull_request(github, shop(namespace, image="nginx:1.27", config_maps=("settings",)))
    plan = pipeline.pull_request("add-shop")
    assert plan is not None and plan.succeeded
    # After the review, someone creates an object the plan expected to create.
    made = {"metadata": {"name": "settings"}, "data": {"A": "by hand"}}
    assert http(cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", made)[0] == 201

    apply = pipeline.push("m3rg3d")

    assert apply is not None and not apply.succeeded
    refused = apply.logs[apply.ran[-1]]
    assert refused.returncode == 1 and "plan is stale" in refused.stderr, refused.stderr
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[0] == 404


def test_the_plan_job_fails_on_an_invalid_plan_and_posts_nothing(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    github = GitHub(tmp_path)
    pipeline = Pipeline(github, cluster, home)
    pull_request(
        github,
        shop(namespace, image="nginx:1.27", config_maps=("settings",)).replace("port: 8080", "port: http"),
    )

    plan = pipeline.pull_request("add-shop")

    assert plan is not None and not plan.succeeded
    assert plan.outputs["plan"] == {"code": "1"} and plan.ran[-1] == "fail on error"
    assert "workloads[1].port" in plan.logs["plan"].stderr
    assert github.comments == [] and not github.artifact("add-shop", "saved-plan").exists()


def test_the_apply_job_applies_nothing_for_a_push_no_pull_request_merged(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    github = GitHub(tmp_path)
    pipeline = Pipeline(github, cluster, home)
    pull_request(github, shop(namespace, image="nginx:1.27", config_maps=("settings",)))
    github.commits["d1r3ct"] = github.commits["m3rg3d"]  # pushed to main without a pull request

    apply = pipeline.push("d1r3ct")

    assert apply is not None and not apply.succeeded
    merged = apply.logs[apply.ran[-1]]
    assert merged.stdout.strip() == "no merged pull request for d1r3ct: nothing reviewed to apply"
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[0] == 404
