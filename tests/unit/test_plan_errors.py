"""Every kind of bad plan input yields exactly the expected `file:LINE:COL: path: message` lines.

Each case is a small plan body written after the four-line header of `write_plan` (so the body starts
on line 5); the expected lines were counted by hand from the text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans

WORKLOAD_FIELDS = (
    "name, kind, image, entrypoint, command, workdir, env, envFrom, cpu, memory, volumes, user, port, expose, "
    "ingress, scheduling, runtimeNamespace, pullPolicy, replicas, progressDeadlineSeconds, strategy, backoffLimit, "
    "activeDeadlineSeconds, ttlSecondsAfterFinished, schedule, timeZone, concurrencyPolicy, "
    "startingDeadlineSeconds, successfulJobsHistoryLimit, failedJobsHistoryLimit, suspend, "
    "labels, annotations, podAnnotations, timeout, "
    "dependsOn, sidecars, initContainers, readinessProbe, livenessProbe, podManagementPolicy, "
    "updateStrategy, nodeSelector, tolerations, autoscale"
)
NAMES_RULE = "workload and sandbox names are unique (dependsOn names them bare)"
SANDBOX = "    image: x\n    rootfs: {size: 1Gi}\n    workspace: {size: 1Gi}\n"
LONG_60 = "a" * 60
LONG_64 = "b" * 64

CASES: list[tuple[str, str, list[str]]] = [
    (
        "a YAML syntax error is reported where ruamel found it",
        "workloads:\n  - name: web\n    image: nginx: 1\n",
        ["{f}:7:17: invalid YAML: mapping values are not allowed here"],
    ),
    (
        "a duplicate key is a syntax error that does not quote the values",
        "runtime: k8s\nruntime: k3s\n",
        ['{f}:6:1: invalid YAML: duplicate key "runtime"'],
    ),
    (
        "an unknown tag on a mapping is refused where it is, not dropped (a mistyped !remove)",
        "workloads:\n  - !remov {name: worker, image: x}\n",
        [
            "{f}:6:5: invalid YAML: unknown tag '!remov' on a mapping (did you mean \"!remove\"? known tags: "
            "!default, !remove, !!map)"
        ],
    ),
    (
        "an unknown tag on a list is refused",
        "workloads: !foo\n  - name: web\n    image: x\n",
        ["{f}:5:12: invalid YAML: unknown tag '!foo' on a list (known tags: !default, !remove, !!seq)"],
    ),
    (
        "an unknown tag on a value is refused the same way, naming YAML's own scalar tags",
        "runtime: !k8s k8s\n",
        [
            "{f}:5:10: invalid YAML: unknown tag '!k8s' on a value (known tags: !default, !remove, !!str, "
            "!!int, !!float, !!bool, !!null, !!timestamp, !!binary)"
        ],
    ),
    (
        "a YAML tag of the wrong kind of node is refused too (!!set would make a mapping of nulls)",
        "workloads:\n  - name: web\n    image: x\n    labels: !!set {a, b}\n",
        ["{f}:8:13: invalid YAML: unknown tag '!!set' on a mapping (known tags: !default, !remove, !!map)"],
    ),
    (
        "a second YAML document is rejected at its start",
        "---\napiVersion: planner.dev/v1\n",
        ["{f}:5:1: a second YAML document: a plan file holds exactly one plan (split it into two files)"],
    ),
    (
        "an unknown field suggests the closest and lists the fields that are allowed",
        "workloads:\n  - name: web\n    image: nginx\n    imagee: nginx:1.27\n",
        [
            f'{{f}}:8:5: workloads[0].imagee: unknown field "imagee" (did you mean "image"? expected one of: '
            f"{WORKLOAD_FIELDS})"
        ],
    ),
    (
        "an unknown field like none lists the fields that are allowed",
        "workloads:\n  - name: web\n    image: nginx\n    zzz: 1\n",
        [f'{{f}}:8:5: workloads[0].zzz: unknown field "zzz" (expected one of: {WORKLOAD_FIELDS})'],
    ),
    (
        "a missing required field is reported at the item that lacks it",
        "workloads:\n  - name: web\n",
        ['{f}:6:5: workloads[0]: missing required field "image"'],
    ),
    (
        "a wrong type names the expected type and the value found",
        'workloads:\n  - name: web\n    image: nginx\n    port: "8080"\n',
        ['{f}:8:11: workloads[0].port: expected an integer, found string "8080"'],
    ),
    (
        "a bad quantity shows the accepted forms",
        "workloads:\n  - name: web\n    image: nginx\n    memory: 2 GB\n",
        [
            '{f}:8:13: workloads[0].memory: bad quantity "2 GB": expected a Kubernetes quantity like 500m, '
            "0.5, 256Mi or 1Gi"
        ],
    ),
    (
        "a quantity above 2^63-1 is refused: the server would clamp a binary one (a perpetual diff)",
        "workloads:\n  - name: web\n    image: nginx\n    memory: 99999999999999999999999999Ei\n",
        [
            "{f}:8:13: workloads[0].memory: expected a quantity of at most 2^63-1 (9223372036854775807, just "
            'under 8Ei: the most Kubernetes can count), found "99999999999999999999999999Ei"'
        ],
    ),
    (
        "a number too large for a float is checked as written, not as infinity",
        "workloads:\n  - name: web\n    image: nginx\n    cpu: 1e400\n",
        [
            "{f}:8:10: workloads[0].cpu: expected a quantity of at most 2^63-1 (9223372036854775807, just "
            'under 8Ei: the most Kubernetes can count), found "1e400"'
        ],
    ),
    (
        "a quantity the Python client would take but the server refuses is a bad quantity",
        "sandboxes:\n  - name: dev\n    image: x\n    rootfs: {size: 1K}\n    workspace: {size: 1Gi}\n",
        [
            '{f}:8:20: sandboxes[0].rootfs.size: bad quantity "1K": expected a Kubernetes quantity like 500m, '
            "0.5, 256Mi or 1Gi"
        ],
    ),
    (
        "a label key with two slashes and a label value with a space are the API's errors, at key and value",
        'workloads:\n  - name: web\n    image: nginx\n    labels: {a/b/c: x, Team: "bad value!"}\n',
        [
            '{f}:8:14: workloads[0].labels.a/b/c: label key "a/b/c" has more than one "/": expected "name" or '
            '"prefix/name"',
            '{f}:8:30: workloads[0].labels.Team: label value "bad value!" is not valid: expected empty, or '
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        ],
    ),
    (
        "a label key prefix must be a lowercase DNS subdomain, an annotation key prefix may have capitals",
        "workloads:\n  - name: web\n    image: nginx\n    labels: {Acme.dev/team: a}\n"
        "    annotations: {Acme.dev/team: a, -x: b}\n",
        [
            '{f}:8:14: workloads[0].labels.Acme.dev/team: label key prefix "Acme.dev" is not a DNS subdomain: '
            "expected lowercase letters, digits, '-' and '.', starting and ending with a letter or digit "
            "(example.com)",
            '{f}:9:37: workloads[0].annotations.-x: annotation key name "-x" is not valid: expected letters, '
            "digits, '-', '_' or '.', starting and ending with a letter or digit",
        ],
    ),
    (
        "a label value of 64 characters is one too many",
        f"workloads:\n  - name: web\n    image: nginx\n    labels: {{team: {LONG_64}}}\n",
        ["{f}:8:20: workloads[0].labels.team: label value is 64 characters: at most 63"],
    ),
    (
        "a label key name of 64 characters and a prefix of 254 are too long",
        f"workloads:\n  - name: web\n    image: nginx\n    labels: {{{LONG_64}: a, {'p' * 254}/n: b}}\n",
        [
            "{f}:8:14: workloads[0].labels." + LONG_64 + ": label key name is 64 characters: at most 63",
            "{f}:8:83: workloads[0].labels." + "p" * 254 + "/n: label key prefix is 254 characters: at most "
            "253 (a DNS subdomain)",
        ],
    ),
    (
        "a scheduling key is a node label key",
        "workloads:\n  - name: web\n    image: nginx\n"
        "    scheduling: [{type: node, key: zone/, operator: Exists}]\n",
        ['{f}:8:36: workloads[0].scheduling[0].key: node label key "zone/" has an empty name'],
    ),
    (
        "a size of zero is rejected",
        "sandboxes:\n  - name: dev\n    image: x\n    rootfs: {size: 0}\n    workspace: {size: 1Gi}\n",
        ['{f}:8:20: sandboxes[0].rootfs.size: expected a size greater than zero, found "0"'],
    ),
    (
        "a workload and a sandbox with one name collide, naming the first",
        "workloads:\n  - name: db\n    image: postgres:16\nsandboxes:\n  - name: db\n" + SANDBOX,
        [f'{{f}}:9:11: sandboxes[0].name: name "db" is already used by workloads[0] (line 6): {NAMES_RULE}'],
    ),
    (
        "two secrets with one name collide",
        "secrets:\n  - {name: db, data: {a: b}}\n  - {name: db, data: {c: d}}\n",
        [
            '{f}:7:12: secrets[1].name: name "db" is already used by secrets[0] (line 6): secret names are unique'
        ],
    ),
    (
        "an unknown dependsOn target",
        "workloads:\n  - name: web\n    image: nginx\n    dependsOn: [migrate]\n",
        [
            '{f}:8:17: workloads[0].dependsOn[0]: unknown dependsOn target "migrate": no workload or sandbox '
            "has that name"
        ],
    ),
    (
        "a misspelt dependsOn target suggests the closest and lists the others",
        "workloads:\n  - name: migrate\n    image: x\n  - name: web\n    image: nginx\n    dependsOn: [migrte]\n"
        "  - name: worker\n    image: x\n",
        [
            '{f}:10:17: workloads[1].dependsOn[0]: unknown dependsOn target "migrte": no workload or sandbox '
            'has that name (did you mean "migrate"? defined: migrate, worker)'
        ],
    ),
    (
        "a dependsOn target like no name lists the names defined",
        "workloads:\n  - name: migrate\n    image: x\n  - name: web\n    image: nginx\n    dependsOn: [db]\n",
        [
            '{f}:10:17: workloads[1].dependsOn[0]: unknown dependsOn target "db": no workload or sandbox '
            "has that name (defined: migrate)"
        ],
    ),
    (
        "a workload that depends on itself",
        "workloads:\n  - name: web\n    image: nginx\n    dependsOn: [web]\n",
        ['{f}:8:17: workloads[0].dependsOn[0]: "web" cannot depend on itself'],
    ),
    (
        "a dependsOn cycle is named from its first member",
        "workloads:\n  - name: a\n    image: x\n    dependsOn: [b]\n  - name: b\n    image: x\n    "
        "dependsOn: [a]\n",
        ["{f}:8:17: workloads[0].dependsOn[0]: dependency cycle: a -> b -> a"],
    ),
    (
        "a cycle through forkFrom says so",
        "sandboxes:\n  - name: a\n"
        + SANDBOX
        + "    forkFrom: b\n  - name: b\n"
        + SANDBOX
        + "    dependsOn: [a]\n",
        ["{f}:10:15: sandboxes[0].forkFrom: dependency cycle: a -> b -> a (through forkFrom)"],
    ),
    (
        "an unknown forkFrom source",
        "sandboxes:\n  - name: a\n" + SANDBOX + "    forkFrom: nobody\n",
        [
            '{f}:10:15: sandboxes[0].forkFrom: unknown forkFrom source "nobody": no sandbox of this plan has '
            "that name"
        ],
    ),
    (
        "a misspelt forkFrom source suggests the closest sandbox",
        "sandboxes:\n  - name: alice\n" + SANDBOX + "  - name: bob\n" + SANDBOX + "    forkFrom: alcie\n",
        [
            '{f}:14:15: sandboxes[1].forkFrom: unknown forkFrom source "alcie": no sandbox of this plan has '
            'that name (did you mean "alice"? defined: alice)'
        ],
    ),
    (
        "pullPolicy Never is rejected with the seed's reason",
        "workloads:\n  - name: web\n    image: nginx\n    pullPolicy: Never\n",
        [
            '{f}:8:17: workloads[0].pullPolicy: Never is rejected: "Pull policy Never is rejected for '
            'preflight validation"; use Always or IfNotPresent'
        ],
    ),
    (
        "an unknown runtime lists the runtimes",
        "runtime: docker\n",
        ['{f}:5:10: runtime: expected one of k8s, k3s, found "docker"'],
    ),
    (
        "expose without a port",
        "workloads:\n  - name: web\n    image: nginx\n    expose: true\n",
        ["{f}:8:5: workloads[0].expose: expose needs a port: the Service forwards to it (add port)"],
    ),
    (
        "expose on a job",
        "workloads:\n  - name: once\n    image: x\n    kind: job\n    port: 80\n    expose: true\n",
        ["{f}:10:5: workloads[0].expose: expose is for deployments only: a job gets no Service"],
    ),
    (
        "an env number asks to be quoted",
        "workloads:\n  - name: web\n    image: nginx\n    env: {PORT: 8080}\n",
        ['{f}:8:17: workloads[0].env.PORT: expected a string, found number 8080: quote it ("8080")'],
    ),
    (
        "an env boolean asks to be quoted",
        "workloads:\n  - name: web\n    image: nginx\n    env:\n      DEBUG: true\n",
        ['{f}:9:14: workloads[0].env.DEBUG: expected a string, found boolean true: quote it ("true")'],
    ),
    (
        "a bad duration shows Go duration examples",
        "workloads:\n  - name: web\n    image: nginx\n    timeout: 5 minutes\n",
        [
            '{f}:8:14: workloads[0].timeout: bad duration "5 minutes": expected a Go duration like 90s, 5m, '
            "1h30m"
        ],
    ),
    (
        "a secret named like a sandbox's env Secret collides with it",
        "sandboxes:\n  - name: alice\n"
        + SANDBOX
        + "    secretEnv: {TOKEN: t}\nsecrets:\n  - name: alice-env\n"
        "    data: {a: b}\n",
        [
            '{f}:12:11: secrets[0].name: Secret "alice-env" collides with the env Secret of sandbox "alice" '
            "(sandboxes[0].name, line 6): rename one of them"
        ],
    ),
    (
        "a secret named like the plan collides with the ApplySet parent",
        "secrets:\n  - name: shop\n    data: {a: b}\n",
        [
            '{f}:6:11: secrets[0].name: Secret "shop" collides with the ApplySet parent Secret of plan '
            '"shop" (metadata.name, line 4): rename one of them'
        ],
    ),
    (
        "a name of 64 characters is too long",
        f"workloads:\n  - name: {LONG_64}\n    image: x\n",
        [f'{{f}}:6:11: workloads[0].name: "{LONG_64}" is 64 characters long; at most 63 are allowed'],
    ),
    (
        "an exposed workload of 60 characters leaves no room for -svc",
        f"workloads:\n  - name: {LONG_60}\n    image: x\n    port: 80\n    expose: true\n",
        [
            "{f}:6:11: workloads[0].name: name is 60 characters, too long for an exposed workload: at most "
            '59, so that the name "<name>-svc" fits in 63'
        ],
    ),
    (
        "a sandbox whose rootfs PVC name outgrows 63 characters",
        f"sandboxes:\n  - name: {'c' * 54}\n    image: x\n    rootfs: {{size: 1Gi, generation: 10}}\n"
        "    workspace: {size: 1Gi}\n",
        [
            "{f}:6:11: sandboxes[0].name: name is 54 characters, too long for a sandbox: at most 52, so that "
            'the name "<name>-rootfs-g10" fits in 63'
        ],
    ),
    (
        "replicas on a job",
        "workloads:\n  - name: once\n    image: x\n    kind: job\n    replicas: 2\n",
        [
            "{f}:9:5: workloads[0].replicas: replicas is for deployments and statefulsets only; this workload is a job"
        ],
    ),
    (
        "replicas on a daemonset: it runs one pod per eligible node",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    replicas: 2\n",
        [
            "{f}:9:5: workloads[0].replicas: replicas is for deployments and statefulsets only; this workload is "
            "a daemonset"
        ],
    ),
    (
        "a partition in a daemonset's update strategy",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    updateStrategy: {partition: 1}\n",
        [
            "{f}:9:22: workloads[0].updateStrategy.partition: partition is for statefulsets only: a daemonset "
            "rolls node by node, maxUnavailable at a time"
        ],
    ),
    (
        "maxUnavailable in a statefulset's update strategy",
        "workloads:\n  - name: db\n    image: x\n    kind: statefulset\n    updateStrategy: {maxUnavailable: 1}\n",
        [
            "{f}:9:22: workloads[0].updateStrategy.maxUnavailable: maxUnavailable is for daemonsets only: a "
            "statefulset rolls one pod at a time, by partition"
        ],
    ),
    (
        "a surge under OnDelete",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n"
        "    updateStrategy: {type: OnDelete, maxSurge: 1}\n",
        [
            "{f}:9:38: workloads[0].updateStrategy.maxSurge: maxSurge is for type RollingUpdate only: OnDelete "
            "replaces a pod only when it is deleted"
        ],
    ),
    (
        "a daemonset rollout that may neither take a node's pod down nor surge",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n"
        "    updateStrategy: {maxUnavailable: 0, maxSurge: 0}\n",
        [
            "{f}:9:38: workloads[0].updateStrategy.maxUnavailable: maxUnavailable and maxSurge cannot both be 0: "
            "the rollout could never replace a pod"
        ],
    ),
    (
        "a toleration with operator Exists and a value",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    tolerations:\n"
        "      - {key: a, operator: Exists, value: b}\n",
        [
            "{f}:10:43: workloads[0].tolerations[0].value: a value is for operator Equal only: Exists tolerates "
            "every value of the key"
        ],
    ),
    (
        "tolerationSeconds for an effect other than NoExecute",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    tolerations:\n"
        "      - {operator: Exists, effect: NoSchedule, tolerationSeconds: 5}\n",
        [
            "{f}:10:48: workloads[0].tolerations[0].tolerationSeconds: tolerationSeconds is for effect NoExecute "
            "only: it says how long the pod stays on a tainted node"
        ],
    ),
    (
        "a toleration without a key that is not Exists",
        "workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    tolerations:\n"
        "      - {effect: NoSchedule}\n",
        [
            "{f}:10:9: workloads[0].tolerations[0]: a toleration without a key needs operator Exists (it then "
            "tolerates every taint)"
        ],
    ),
    (
        "a node selector key that is no label key",
        'workloads:\n  - name: agent\n    image: x\n    kind: daemonset\n    nodeSelector: {"bad key": x}\n',
        [
            '{f}:9:20: workloads[0].nodeSelector.bad key: label key name "bad key" is not valid: expected '
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ],
    ),
    (
        "tolerations on a deployment",
        "workloads:\n  - name: web\n    image: x\n    tolerations: []\n",
        [
            "{f}:8:5: workloads[0].tolerations: tolerations is for daemonsets only; this workload is a deployment"
        ],
    ),
    (
        "a rollout strategy on a job",
        "workloads:\n  - name: once\n    image: x\n    kind: job\n    strategy: {type: Recreate}\n",
        ["{f}:9:5: workloads[0].strategy: strategy is for deployments only; this workload is a job"],
    ),
    (
        "rolling parameters under Recreate",
        "workloads:\n  - name: web\n    image: x\n    strategy: {type: Recreate, maxSurge: 1}\n",
        [
            "{f}:8:32: workloads[0].strategy.maxSurge: maxSurge is for type RollingUpdate only: Recreate "
            "stops every old pod first"
        ],
    ),
    (
        "a rollout that may neither surge nor go below the wanted replicas",
        "workloads:\n  - name: web\n    image: x\n    strategy: {maxSurge: 0, maxUnavailable: 0%}\n",
        [
            "{f}:8:45: workloads[0].strategy.maxUnavailable: maxSurge and maxUnavailable cannot both be 0: "
            "the rollout could never replace a pod"
        ],
    ),
    (
        "a surge that is neither a count nor a percentage",
        "workloads:\n  - name: web\n    image: x\n    strategy: {maxSurge: half}\n",
        [
            '{f}:8:26: workloads[0].strategy.maxSurge: expected a count or a percentage like 1 or 25%, found "half"'
        ],
    ),
    (
        "backoffLimit on a deployment",
        "workloads:\n  - name: web\n    image: x\n    backoffLimit: 2\n",
        [
            "{f}:8:5: workloads[0].backoffLimit: backoffLimit is for jobs and cronjobs only; this workload is a deployment"
        ],
    ),
    (
        "a probe on an init container",
        "workloads:\n  - name: web\n    image: x\n    initContainers:\n      - name: setup\n        image: "
        "busybox\n        readinessProbe: {exec: {command: [cat, /ready]}}\n",
        [
            "{f}:11:9: workloads[0].initContainers[0].readinessProbe: init containers cannot have a "
            "readinessProbe (Kubernetes rejects it): they run to completion"
        ],
    ),
    (
        "a probe with two handlers",
        "workloads:\n  - name: web\n    image: x\n    readinessProbe: {httpGet: {port: 80}, exec: {command: "
        "[cat]}}\n",
        [
            "{f}:8:5: workloads[0].readinessProbe: expected exactly one of httpGet, tcpSocket, exec, found "
            "httpGet and exec"
        ],
    ),
    (
        "a liveness probe with a success threshold other than 1",
        "workloads:\n  - name: web\n    image: x\n    livenessProbe:\n      tcpSocket: {port: 80}\n"
        "      successThreshold: 2\n",
        [
            "{f}:10:25: workloads[0].livenessProbe.successThreshold: expected 1 for a liveness probe "
            "(Kubernetes requires it), found 2"
        ],
    ),
    (
        "a volume with two sources",
        "workloads:\n  - name: web\n    image: x\n    volumes:\n      - emptyDir: {}\n        hostPath: "
        "/data\n        mountPath: /data\n",
        [
            "{f}:9:9: workloads[0].volumes[0]: expected exactly one of hostPath, emptyDir, configMap, "
            "secret, persistentVolumeClaim, claim, found hostPath and emptyDir"
        ],
    ),
    (
        "a shared volume name with two different sources",
        "workloads:\n  - name: web\n    image: x\n    volumes: [{name: data, emptyDir: {}, mountPath: /a}]\n"
        "    sidecars:\n      - name: side\n        image: y\n"
        "        volumes: [{name: data, configMap: cfg, mountPath: /b}]\n",
        [
            '{f}:12:19: workloads[0].sidecars[0].volumes[0]: volume "data" is configMap "cfg" here but '
            "emptyDir in "
            "workloads[0].volumes[0]: volumes that share a name are one pod volume and need the same source"
        ],
    ),
    (
        "a sidecar named like the main container",
        "workloads:\n  - name: web\n    image: x\n    sidecars:\n      - name: web\n        image: y\n",
        [
            '{f}:9:15: workloads[0].sidecars[0].name: container name "web" is already used by the main '
            "container (line 6): names are unique in a pod"
        ],
    ),
    (
        "operator In without values",
        "workloads:\n  - name: web\n    image: x\n    scheduling:\n      - {type: node, key: disk, operator: "
        "In}\n",
        ["{f}:9:43: workloads[0].scheduling[0].operator: operator In needs at least one value in values"],
    ),
    (
        "operator Exists with values",
        "workloads:\n  - name: web\n    image: x\n    scheduling:\n"
        "      - {type: node, key: disk, operator: Exists, values: [ssd]}\n",
        ["{f}:9:51: workloads[0].scheduling[0].values: operator Exists takes no values"],
    ),
    (
        "a warm pool named like a sandbox",
        "sandboxes:\n  - name: dev\n" + SANDBOX + "warmPools:\n  - name: dev\n    size: 1\n"
        "    template: {image: x, rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n",
        [
            '{f}:11:11: warmPools[0].name: warm pool name "dev" is already used by sandbox sandboxes[0] '
            "(line 6): warm pools and sandboxes share one name space"
        ],
    ),
    (
        "a namespace that is not a DNS label",
        "workloads:\n  - name: web\n    image: x\n    runtimeNamespace: Batch_Jobs\n",
        [
            '{f}:8:23: workloads[0].runtimeNamespace: "Batch_Jobs" is not a valid name: expected lowercase '
            "letters, digits and '-', starting and ending with a letter or digit (DNS-1123 label)"
        ],
    ),
    (
        "a secret value that is a number asks to be quoted without showing it",
        "secrets:\n  - name: db\n    data: {pin: 1234}\n",
        [
            "{f}:7:17: secrets[0].data.pin: expected a string, found a number: quote the value (not shown: "
            "it is a secret)"
        ],
    ),
    (
        "a secretEnv boolean is not shown either",
        "sandboxes:\n  - name: dev\n" + SANDBOX + "    secretEnv: {FLAG: true}\n",
        [
            "{f}:10:23: sandboxes[0].secretEnv.FLAG: expected a string, found a boolean: quote the value "
            "(not shown: it is a secret)"
        ],
    ),
    (
        "a secret value with both env and file",
        "secrets:\n  - name: db\n    data: {pin: {valueFrom: {env: PIN, file: pin.txt}}}\n",
        ["{f}:7:18: secrets[0].data.pin.valueFrom: expected exactly one of env, file, secretKeyRef"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_prints_the_exact_diagnostic(
    write_plan: Callable[..., Path], body: str, expected: list[str]
) -> None:
    path = write_plan(body)
    assert _errors([path]) == [line.format(f=path) for line in expected]


SECRET_FILE_CASES = [
    (
        "a secret file above the plan directory",
        "../outside.txt",
        'secret file "../outside.txt" is outside the plan file\'s directory',
    ),
    (
        "a symlink that leads outside the plan directory",
        "link",
        'secret file "link" resolves (through a symlink) to a path outside the plan file\'s directory',
    ),
    (
        "a secret file that does not exist",
        "nope",
        'secret file "nope" does not exist (relative to the plan file\'s directory)',
    ),
    ("a secret file that is a directory", "subdir", 'secret file "subdir" is not a regular file'),
]


@pytest.mark.parametrize(
    ("reference", "message"),
    [case[1:] for case in SECRET_FILE_CASES],
    ids=[case[0] for case in SECRET_FILE_CASES],
)
def test_secret_files_stay_inside_the_plan_directory(
    write_plan: Callable[..., Path], reference: str, message: str
) -> None:
    path = write_plan(
        f"secrets:\n  - name: db\n    data:\n      password: {{valueFrom: {{file: {reference}}}}}\n"
    )
    outside = path.parent.parent / "outside.txt"
    outside.write_text("top secret\n")
    (path.parent / "link").symlink_to(outside)
    (path.parent / "subdir").mkdir()
    assert _errors([path]) == [f"{path}:8:36: secrets[0].data.password.valueFrom.file: {message}"]


def test_a_missing_environment_variable_is_named_and_its_value_never_printed(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan("secrets:\n  - name: db\n    data:\n      password: {valueFrom: {env: DB_PASSWORD}}\n")
    assert _errors([path], environ={"OTHER": "x"}) == [
        f"{path}:8:35: secrets[0].data.password.valueFrom.env: environment variable DB_PASSWORD is not set"
    ]


def test_two_files_with_one_plan_name_collide(write_plan: Callable[..., Path]) -> None:
    first = write_plan("", name="a.yaml")
    second = write_plan("", name="b.yaml")
    assert _errors([first.parent]) == [
        f'{second}:4:9: metadata.name: plan "shop" is also defined in {first}:4:9: a plan name owns one '
        "ApplySet, so each plan file needs its own name"
    ]


def test_three_errors_print_three_lines_in_file_order(write_plan: Callable[..., Path]) -> None:
    path = write_plan(
        "workloads:\n  - name: web\n    image: nginx\n    dependsOn: [db]\n"
        "    env: {PORT: 8080}\nruntime: docker\n"
    )
    assert _errors([path]) == [
        f'{path}:8:17: workloads[0].dependsOn[0]: unknown dependsOn target "db": no workload or sandbox has '
        "that name",
        f'{path}:9:17: workloads[0].env.PORT: expected a string, found number 8080: quote it ("8080")',
        f'{path}:10:10: runtime: expected one of k8s, k3s, found "docker"',
    ]


def test_errors_of_several_files_come_together_sorted_by_file(write_plan: Callable[..., Path]) -> None:
    second = write_plan("runtime: docker\n", name="b.yaml")
    first = write_plan("metadata: {}\n", name="a.yaml", header=False)
    assert _errors([second, first]) == [
        f'{first}:1:1: missing required field "apiVersion"',
        f'{first}:1:1: missing required field "kind"',
        f'{first}:1:1: metadata: missing required field "name"',
        f'{second}:5:10: runtime: expected one of k8s, k3s, found "docker"',
    ]


def _errors(paths: list[Path], *, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load_plans(paths, environ=environ or {})
    return [str(diagnostic) for diagnostic in raised.value.diagnostics]


def test_a_repeated_sandbox_name_is_one_error_not_one_per_generated_object(
    write_plan: Callable[..., Path],
) -> None:
    sandbox = "  - name: dev\n" + SANDBOX + "    secretEnv: {A: b}\n"
    path = write_plan("sandboxes:\n" + sandbox + sandbox)
    assert _errors([path]) == [
        f'{path}:11:11: sandboxes[1].name: name "dev" is already used by sandboxes[0] (line 6): {NAMES_RULE}'
    ]


def test_names_are_unique_per_kind_as_kubernetes_has_them(write_plan: Callable[..., Path]) -> None:
    """A Secret and a ConfigMap may share a StatefulSet's name, as most charts name them (issue 39,
    item 12): only names that share a kind, or are found bare (workloads and sandboxes), collide."""
    (plan,) = load_plans(
        [
            write_plan(
                "configMaps:\n  - {name: db, data: {a: b}}\nsecrets:\n  - {name: db, data: {a: b}}\n"
                "workloads:\n  - name: db\n    kind: statefulset\n    image: postgres:16\n"
            )
        ]
    ).plans
    assert [w.name for w in plan.workloads] == ["db"] and [s.name for s in plan.secrets] == ["db"]
