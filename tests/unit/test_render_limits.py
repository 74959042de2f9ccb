"""Rendered objects too big for the API are plan errors at the entry that renders them.

Each case is a plan whose body follows the four-line header of `write_plan` (so the body starts on
line 5); data byte counts were worked out by hand from the text. A whole object's size also counts
planner's own metadata, so the expected line matches it as `{n}`, any number of bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from planner.plan import load_plans
from planner.render import limit_diagnostics, render

MIB = 1024 * 1024


def _problems(path: Path) -> list[str]:
    (plan,) = load_plans([path], environ={"BIG": "y" * (MIB - 2)}).plans
    return [str(found) for found in limit_diagnostics(plan, render(plan, "default"))]


CASES = [
    (
        "a ConfigMap of 1.6 MB is refused at its entry",
        f"configMaps:\n  - name: big\n    data: {{a: {'x' * 1_600_000}}}\n",
        [
            '{f}:6:5: configMaps[0]: the rendered ConfigMap "big" holds 1,600,000 bytes of data: the API allows '
            "at most 1,048,576 (1 MiB) in one ConfigMap (split it)",
            '{f}:6:5: configMaps[0]: the rendered ConfigMap "big" is {n} bytes: a Kubernetes object can be '
            "at most 1,572,864 (1.5 MiB, what etcd stores by default)",
        ],
    ),
    (
        "a Secret counts its decoded values: 1 MiB - 2 from the environment plus 3 bytes is one too many",
        "secrets:\n  - name: s\n    data:\n      a: {valueFrom: {env: BIG}}\n      b: xyz\n",
        [
            '{f}:6:5: secrets[0]: the rendered Secret "s" holds 1,048,577 bytes of data: the API allows at most '
            "1,048,576 (1 MiB) in one Secret (split it)"
        ],
    ),
    (
        "pod annotations over 256 KiB are counted on the pod template",
        f"workloads:\n  - name: web\n    image: nginx\n    podAnnotations: {{big: {'x' * 262_142}}}\n",
        [
            '{f}:6:5: workloads[0]: the rendered Deployment "web" carries 262,145 bytes of annotations: the API '
            "allows at most 262,144 (256 KiB) on one object"
        ],
    ),
    (
        "a sandbox's env is copied into its workspace PVC's pod-spec annotation, which passes 256 KiB",
        f"sandboxes:\n  - name: dev\n    image: x\n    rootfs: {{size: 1Gi}}\n    workspace: {{size: 1Gi}}\n"
        f"    env: {{BLOB: {'z' * 270_000}}}\n",
        [
            '{f}:6:5: sandboxes[0]: the rendered PersistentVolumeClaim "dev-workspace" carries {n} bytes of '
            "annotations: the API allows at most 262,144 (256 KiB) on one object"
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_objects_too_big_for_the_api_are_reported_at_their_plan_entry(
    write_plan: Callable[..., Path], body: str, expected: list[str]
) -> None:
    path = write_plan(body)
    found = _problems(path)
    patterns = [
        re.escape(line.format(f=path, n="{n}")).replace(r"\{n\}", r"[1-9][0-9]{0,2}(,[0-9]{3})*")
        for line in expected
    ]
    assert len(found) == len(patterns), found
    for line, pattern in zip(found, patterns, strict=True):
        assert re.fullmatch(pattern, line), line


def test_a_configmap_of_exactly_1_mib_and_a_secret_of_exactly_1_mib_render_without_problems(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan(
        f"configMaps:\n  - name: full\n    data: {{a: {'x' * (MIB - 1)}, b: x}}\n"
        "secrets:\n  - name: s\n    data:\n      a: {valueFrom: {env: BIG}}\n      b: xy\n"
    )
    assert _problems(path) == []
