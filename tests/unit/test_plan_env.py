"""Env from Secrets, ConfigMaps, pod fields and container resources in plan files: what loads (the model, by hand) and every
bad reference as its exact `file:LINE:COL: path: message` (bodies start on line 5, counted by hand)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.model import EnvFrom, EnvRef

FIELDS = (
    "metadata.name, metadata.namespace, metadata.uid, metadata.labels['KEY'], metadata.annotations['KEY'], "
    "spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP, status.podIPs"
)
SECRET = "secrets:\n  - name: db\n    data: {password: hunter2, user: app}\n"


def test_env_references_load_into_the_model(write_plan: Callable[..., Path]) -> None:
    path = write_plan(
        SECRET + "workloads:\n  - name: web\n    image: nginx\n"
        "    env:\n"
        "      LOG: info\n"
        "      PW: {secretKeyRef: {name: db, key: password}}\n"
        "      MODE: {configMapKeyRef: {name: web-config, key: mode, optional: true}}\n"
        "      IP: {fieldRef: status.podIP}\n"
        "      CPU: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}\n"
        "      MEM: {resourceFieldRef: {resource: requests.memory, containerName: migrate, divisor: 1}}\n"
        "    envFrom: [{secret: db}, {configMap: web-config, prefix: WEB_, optional: true}]\n"
        "    initContainers:\n      - name: migrate\n        image: busybox\n        envFrom: [{secret: db}]\n"
    )
    (web,) = load_plans([path], environ={}).plans[0].workloads
    assert web.env == {
        "LOG": "info",
        "PW": EnvRef(source="secretKeyRef", name="db", key="password"),
        "MODE": EnvRef(source="configMapKeyRef", name="web-config", key="mode", optional=True),
        "IP": EnvRef(source="fieldRef", key="status.podIP"),
        "CPU": EnvRef(source="resourceFieldRef", key="limits.cpu", divisor="1m"),
        "MEM": EnvRef(source="resourceFieldRef", name="migrate", key="requests.memory", divisor="1"),
    }
    assert web.env_from == (
        EnvFrom(source="secret", name="db"),
        EnvFrom(source="configMap", name="web-config", prefix="WEB_", optional=True),
    )
    assert web.init_containers[0].env_from == (EnvFrom(source="secret", name="db"),)


WORKLOAD = "workloads:\n  - name: web\n    image: nginx\n"
CASES = [
    (
        "a fieldRef the downward API does not give to env",
        WORKLOAD + "    env: {PHASE: {fieldRef: status.phase}}\n",
        [
            f'{{f}}:8:29: workloads[0].env.PHASE.fieldRef: fieldRef "status.phase" is not a pod field env can read: '
            f"expected one of {FIELDS}"
        ],
    ),
    (
        "a sidecar's fieldRef is checked too, and a label subscript is allowed",
        WORKLOAD + "    env: {APP: {fieldRef: \"metadata.labels['app']\"}}\n"
        "    sidecars:\n      - name: s\n        image: busybox\n        env: {H: {fieldRef: spec.hostname}}\n",
        [
            f'{{f}}:12:29: workloads[0].sidecars[0].env.H.fieldRef: fieldRef "spec.hostname" is not a pod field env '
            f"can read: expected one of {FIELDS}"
        ],
    ),
    (
        "a key the plan's own secret does not have",
        SECRET + WORKLOAD + "    env: {PW: {secretKeyRef: {name: db, key: pasword}}}\n",
        [
            '{f}:11:46: workloads[0].env.PW.secretKeyRef.key: secret "db" of this plan has no key "pasword" '
            '(did you mean "password"? it has: password, user)'
        ],
    ),
    (
        "an optional key reference to the plan's secret is not checked",
        SECRET + WORKLOAD + "    env: {PW: {secretKeyRef: {name: db, key: other, optional: true}}}\n"
        "    replicas: -1\n",
        ["{f}:12:15: workloads[0].replicas: expected at least 0, found integer -1"],
    ),
    (
        "a workload in another namespace reads its objects there: the plan's keys are not checked",
        SECRET + WORKLOAD + "    runtimeNamespace: other\n    env: {PW: {secretKeyRef: {name: db, key: x}}}\n"
        "    replicas: -1\n",
        ["{f}:13:15: workloads[0].replicas: expected at least 0, found integer -1"],
    ),
    (
        "a key reference without its key",
        WORKLOAD + "    env: {PW: {configMapKeyRef: {name: db}}}\n",
        ['{f}:8:16: workloads[0].env.PW.configMapKeyRef: missing required field "key"'],
    ),
    (
        "two sources in one env value",
        WORKLOAD + "    env: {PW: {fieldRef: status.podIP, secretKeyRef: {name: db, key: k}}}\n",
        [
            "{f}:8:11: workloads[0].env.PW: expected exactly one of secretKeyRef, configMapKeyRef, fieldRef, "
            "resourceFieldRef"
        ],
    ),
    (
        "a misspelt source suggests the right one",
        WORKLOAD + "    env: {PW: {secretRef: {name: db, key: k}}}\n",
        [
            '{f}:8:16: workloads[0].env.PW.secretRef: unknown field "secretRef" (did you mean "secretKeyRef"? '
            "expected one of: secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef)"
        ],
    ),
    (
        "a resource env cannot read",
        WORKLOAD + "    env: {CPU: {resourceFieldRef: {resource: limits.gpu}}}\n",
        [
            '{f}:8:46: workloads[0].env.CPU.resourceFieldRef.resource: resource "limits.gpu" is not one env can '
            "read: expected one of limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, "
            "requests.memory, requests.ephemeral-storage, limits.hugepages-SIZE or requests.hugepages-SIZE"
        ],
    ),
    (
        "a container the workload does not have, and a divisor Kubernetes refuses",
        WORKLOAD + "    env: {MEM: {resourceFieldRef: {resource: limits.memory, containerName: proxi}}}\n"
        "    sidecars:\n      - name: proxy\n        image: busybox\n"
        "        env: {CPU: {resourceFieldRef: {resource: limits.cpu, divisor: 1Mi}}}\n",
        [
            '{f}:8:76: workloads[0].env.MEM.resourceFieldRef.containerName: no container "proxi" in this '
            'workload (did you mean "proxy"? its containers are: web, proxy)',
            '{f}:12:71: workloads[0].sidecars[0].env.CPU.resourceFieldRef.divisor: divisor "1Mi" is not one '
            "Kubernetes takes for limits.cpu: expected one of 1m, 1",
        ],
    ),
    (
        "a divisor is read as Kubernetes spells it: 1000m is 1, but 1024 is not 1Ki",
        WORKLOAD + "    env:\n      A: {resourceFieldRef: {resource: requests.cpu, divisor: 1000m}}\n"
        "      B: {resourceFieldRef: {resource: limits.memory, divisor: 1024Mi}}\n"
        "      C: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1024}}\n",
        [
            '{f}:11:75: workloads[0].env.C.resourceFieldRef.divisor: divisor "1024" is not one Kubernetes takes '
            "for limits.ephemeral-storage: expected one of 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
        ],
    ),
    (
        "a number is still a value to quote",
        WORKLOAD + "    env: {PORT: 8080}\n",
        ['{f}:8:17: workloads[0].env.PORT: expected a string, found number 8080: quote it ("8080")'],
    ),
    (
        "envFrom with both sources, then with none",
        WORKLOAD + "    envFrom:\n      - {secret: a, configMap: b}\n      - {prefix: X_}\n",
        [
            "{f}:9:9: workloads[0].envFrom[0]: expected exactly one of secret, configMap, found secret and configMap",
            "{f}:10:9: workloads[0].envFrom[1]: expected exactly one of secret, configMap, found none",
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_env_prints_the_exact_diagnostic(
    write_plan: Callable[..., Path], body: str, expected: list[str]
) -> None:
    path = write_plan(body)
    with pytest.raises(PlanError) as raised:
        load_plans([path], environ={})
    assert [str(d) for d in raised.value.diagnostics] == [line.format(f=path) for line in expected]
