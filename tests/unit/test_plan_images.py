"""An image must be a docker reference, as the kubelet parses it: else `validate` says where."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans

HEADER = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: p}\n"
HINT = (
    "is not an image reference: expected [registry[:port]/]repository[:tag][@digest] with a lowercase "
    "repository and no spaces (a 255-character name at most), as `nginx:1.27` or `ghcr.io/acme/app@sha256:…`"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'workloads:\n  - name: web\n    image: "nginx latest\\n"\n',
            f'p.yaml:6:12: workloads[0].image: "nginx latest\\n" {HINT}',
        ),
        (
            "workloads:\n  - name: web\n    image: Nginx:1\n",
            f'p.yaml:6:12: workloads[0].image: "Nginx:1" {HINT}',
        ),
        (
            "workloads:\n  - name: web\n    image: nginx\n    sidecars:\n      - {name: s, image: 'a::b'}\n",
            f'p.yaml:8:26: workloads[0].sidecars[0].image: "a::b" {HINT}',
        ),
        (
            "sandboxes:\n  - name: box\n    image: 'ghcr.io/acme/box:1 '\n    rootfs: {size: 1Gi}\n"
            "    workspace: {size: 1Gi}\n",
            f'p.yaml:6:12: sandboxes[0].image: "ghcr.io/acme/box:1 " {HINT}',
        ),
    ],
)
def test_a_bad_image_reference_is_an_error_at_its_value(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "p.yaml").write_text(HEADER + body)
    with pytest.raises(PlanError) as raised:
        load_plans([tmp_path / "p.yaml"])
    assert [str(d).replace(f"{tmp_path}/", "") for d in raised.value.diagnostics] == [expected]


@pytest.mark.parametrize(
    "image",
    [
        "nginx",
        "nginx:1.27",
        "localhost:5000/team/app:v1.2",
        "ghcr.io/acme/app@sha256:" + "a" * 64,
        "a__b-c.d/e:F_1",
    ],
)
def test_a_docker_reference_is_accepted(tmp_path: Path, image: str) -> None:
    (tmp_path / "p.yaml").write_text(HEADER + f"workloads:\n  - name: web\n    image: '{image}'\n")
    (plan,) = load_plans([tmp_path / "p.yaml"]).plans
    assert plan.workloads[0].image == image
