"""Raw manifests on a real kube-apiserver v1.28.7: the Plan CRD (with `manifests` as embedded objects)
is still structural and takes a plan that holds raw manifests, what `planner render` writes for raw objects passes strict server-side validation,
a CRD and its custom resource apply in order, a second plan finds nothing to do, and the custom
resource is pruned when removed; a custom resource of a cluster-scoped CRD installed outside the plan
takes the scope discovery serves. Checked through kubectl.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_raw_manifests import PASSWORD, check_served_scope, plan_text, write_files
from tests.real.conftest import Runner, write_plan


def dry_run(kubectl: Runner, text: str) -> None:
    checked = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert checked.returncode == 0, checked.stderr


def test_a_crd_and_its_custom_resource_apply_and_prune_and_every_raw_object_passes_strict_validation(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    crd = planner("crd")
    assert crd.returncode == 0, crd.stderr
    dry_run(kubectl, crd.stdout)
    installed = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crd.stdout)
    assert installed.returncode == 0, installed.stderr
    established = kubectl("wait", "--for=condition=Established", "crd/plans.planner.dev", "--timeout=60s")
    assert established.returncode == 0, established.stderr

    kind = f"Part{namespace.replace('-', '').capitalize()}"
    plural = f"{kind.lower()}s"
    write_files(tmp_path, kind)
    plan = write_plan(tmp_path, plan_text(namespace, crd=True, custom=False, extras=True))
    dry_run(kubectl, plan.read_text())  # a plan with raw manifests is a Plan object the server keeps whole
    rendered = planner("render", str(plan))
    assert rendered.returncode == 0, rendered.stderr
    assert PASSWORD not in rendered.stdout
    dry_run(kubectl, rendered.stdout.replace("'***'", "x"))  # a Secret's masked values, as any string

    write_plan(tmp_path, plan_text(namespace, crd=True, custom=True, extras=True))
    applied = planner("apply", str(plan), "--timeout", "120s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    widget = json.loads(kubectl("get", plural, "first", "-n", namespace, "-o", "json").stdout)
    assert widget["spec"] == {"size": 3}
    assert (
        kubectl("get", "pdb/web", "networkpolicy/web-ingress", "secret/creds", "-n", namespace).returncode
        == 0
    )
    rendered = planner("render", str(plan))
    dry_run(kubectl, rendered.stdout.replace("'***'", "x"))  # the custom resource too, now served
    again = planner("plan", "--detailed-exitcode", str(plan))
    assert again.returncode == 0, again.stdout + again.stderr

    write_plan(tmp_path, plan_text(namespace, crd=True, custom=False, extras=True))
    pruned = planner("apply", str(plan), "--no-wait")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    gone = kubectl("get", plural, "first", "-n", namespace)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    write_plan(
        tmp_path, plan_text(namespace, crd=False, custom=False, extras=False) + "allowClusterScoped: true\n"
    )
    removed = planner("apply", str(plan), "--no-wait")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    crd_gone = kubectl("get", "crd", f"{plural}.example.com")
    assert crd_gone.returncode != 0 and "NotFound" in crd_gone.stderr


def test_a_custom_resource_of_a_crd_outside_the_plan_takes_the_scope_the_cluster_serves(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_served_scope(
        planner, kubectl, namespace, tmp_path, f"Rank{namespace.replace('-', '').capitalize()}"
    )
