"""A Plan with a Git source on a real control plane: kube-apiserver v1.28.7 accepts it under strict field
validation (the CRD's `source` schema), the controller fetches the repository over smart HTTP with basic
auth (`git http-backend` behind lighttpd), applies each pushed commit once its SSH signature verifies
against the `verify` Secret's key and reports it, and deleting the Plan prunes what the fetched plan made
(its finalizer loads, and verifies, the plan through the source too); over git://, a bad commit is not
applied, a force-push back applies the earlier plan, and a rollback holds while the Plan is suspended.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_git_sources import SETTINGS, applied, daemon, git_plan, replicas, shop_file
from tests.e2e.test_git_sources import (
    test_a_push_is_applied_a_bad_commit_is_not_and_a_force_push_back_applies_the_earlier_plan as pushes,
)
from tests.e2e.test_plan_objects import conditions, install_crd
from tests.gitservers import Served, http_backend, new_repository, ssh_key, ssh_signer
from tests.real.conftest import Runner

__all__ = ["controllers", "daemon"]  # the fixtures, shared with the e2e tier


def test_a_pushed_commit_is_applied_and_reported_and_deleting_the_plan_prunes_it(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    install_crd(planner, kubectl)
    with http_backend(tmp_path / "http", username="deployer", password="read-token") as served:
        work = new_repository(served.base, "shop", tmp_path / "work")
        signer = ssh_signer(ssh_key(tmp_path, "alice"))
        files = {"plans/shop.yaml": shop_file(1), "common/settings.yaml": SETTINGS}
        first = work.commit(files, "one", signer=signer)
        trusted = kubectl(
            "create", "secret", "generic", "signers", "-n", namespace, f"--from-file={tmp_path / 'alice.pub'}"
        )  # fmt: skip
        assert trusted.returncode == 0, trusted.stderr
        made = kubectl(
            "create", "secret", "generic", "repo", "-n", namespace,
            "--from-literal=username=deployer", "--from-literal=password=read-token",
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        text = git_plan(namespace, "shop", served.url("shop"), secret="repo", verify="signers")
        strict = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
        assert strict.returncode == 0, strict.stderr
        running = controllers("-n", namespace, "--interval", "1h")
        assert kubectl("apply", "-f", "-", stdin=text).returncode == 0

        plan = applied(kubectl, namespace, "shop", f"main@sha1:{first}")
        assert "signed by ssh key SHA256:" in conditions(plan)["SourceReady"]["message"]
        assert replicas(kubectl, namespace) == 1
        second = work.commit({"plans/shop.yaml": shop_file(2)}, "two replicas", signer=signer)
        applied(kubectl, namespace, "shop", f"main@sha1:{second}")
        assert replicas(kubectl, namespace) == 2

        deleted = kubectl("delete", "plan", "shop", "-n", namespace, "--timeout=120s")
        assert deleted.returncode == 0, deleted.stderr + running.output()
        assert kubectl("get", "deployment", "web", "-n", namespace).returncode != 0
        assert kubectl("get", "configmap", "settings", "-n", namespace).returncode != 0


def test_a_push_is_applied_a_bad_commit_is_not_and_a_force_push_back_applies_the_earlier_plan(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, daemon: Served, tmp_path: Path
) -> None:
    """Over git:// (`git daemon`): the e2e twin's pushes, a commit whose plan is invalid left
    unapplied with SourceReady False, a force-push back, and a rollback while suspended."""
    pushes(controllers, planner, kubectl, namespace, daemon, tmp_path)
