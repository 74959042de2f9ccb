"""Every bad value stops before the API: `apply` of a plan the API would refuse writes nothing at all.

Before, a 1.6 MB ConfigMap was refused by a real server only after the ApplySet parent Secret was
written, and a quantity of 99999999999999999999999999Ei reached the server (the embedded one answered
500 and planner retried; a real one clamps it, so `plan` showed a diff forever). The cluster is checked
through raw HTTP: no parent Secret, no object of the plan.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle
from tests.e2e.conftest import Runner, http, write_plan

BAD = [
    (
        "a ConfigMap over 1 MiB (1.2 MB: under the 1.5 MiB any object may be, so this is its only error)",
        "configMaps:\n  - name: big\n    data: {a: " + "x" * 1_200_000 + "}\n",
        '5:5: configMaps[0]: the rendered ConfigMap "big" holds 1,200,000 bytes of data: the API allows at most '
        "1,048,576 (1 MiB) in one ConfigMap (split it)",
    ),
    (
        "a memory quantity the server would clamp",
        "workloads:\n  - name: web\n    image: nginx\n    memory: 99999999999999999999999999Ei\n",
        "7:13: workloads[0].memory: expected a quantity of at most 2^63-1 (9223372036854775807, just under "
        '8Ei: the most Kubernetes can count), found "99999999999999999999999999Ei"',
    ),
    (
        "a label key the server rejects",
        "workloads:\n  - name: web\n    image: nginx\n    labels: {a/b/c: x}\n",
        '7:14: workloads[0].labels.a/b/c: label key "a/b/c" has more than one "/": expected "name" or '
        '"prefix/name"',
    ),
]


@pytest.mark.parametrize(("body", "where"), [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_apply_of_a_plan_the_api_would_refuse_writes_nothing(
    cluster: ClusterHandle, namespace: str, planner: Runner, tmp_path: Path, body: str, where: str
) -> None:
    header = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: limits, namespace: {namespace}}}\n"
    write_plan(tmp_path, header + body)
    validated = planner("validate", "plan.yaml", cwd=tmp_path)
    applied = planner("apply", "plan.yaml", cwd=tmp_path)
    for result in (validated, applied):
        assert (result.returncode, result.stderr) == (1, f"plan.yaml:{where}\n")
    for collection in ("secrets", "configmaps"):
        status, listed = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/{collection}")
        assert status == 200
        assert [item["metadata"]["name"] for item in listed["items"]] in ([], ["kube-root-ca.crt"])
    status, listed = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments")
    assert (status, listed["items"]) == (200, [])
