"""The battery: kubectl commands in the order they run, each with its expected exit code and output."""

from __future__ import annotations

from tests.conformance.battery.shapes import NAMESPACE, Step, document, exactly, has, is_json

API = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {part: shop}}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: nginx:1.25}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-config, labels: {part: shop}}
data: {mode: live}
"""
API_ONLY = API.split("---")[0]
CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""
TYPO = """
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containers: [{name: app, image: nginx, imagePullPolicy: IfNotPresent, resource: {}}]
"""
CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "1", b: "2", c: "3"}
"""
HEADER_DEPLOY = "NAME READY UP-TO-DATE AVAILABLE AGE"
RBAC = "rbac.authorization.k8s.io/v1"


def steps() -> list[Step]:
    return [
        *_setup(),
        *_creates(),
        *_applies(),
        *_gets(),
        *_selectors(),
        *_describes(),
        *_rollouts(),
        *_edits(),
        *_waits_and_deletes(),
        *_discovery(),
        *_auth(),
        *_policies(),
    ]


def _setup() -> list[Step]:
    return [
        Step(
            "version",
            ("version",),
            (has(r'^Server Version: (v1\.29\.0|version\.Info\{.*GitVersion:"v1\.29\.0".*\})$'),),
        ),
        Step(
            "cluster-info",
            ("cluster-info",),
            (has(r"Kubernetes control plane is running at https://<server>"),),
        ),
        Step(
            "create namespace",
            ("create", "namespace", NAMESPACE),
            (exactly(f"namespace/{NAMESPACE} created"),),
        ),
        Step(
            "config set-context",
            ("config", "set-context", "--current", f"--namespace={NAMESPACE}"),
            (has(r'^Context ".*" modified\.$'),),
        ),
    ]


def _creates() -> list[Step]:
    return [
        Step(
            "create configmap",
            ("create", "configmap", "settings", "--from-literal=a=1", "--from-literal=b=2"),
            (exactly("configmap/settings created"),),
        ),
        Step(
            "create secret generic",
            ("create", "secret", "generic", "creds", "--from-literal=password=s3cret"),
            (exactly("secret/creds created"),),
        ),
        Step(
            "create deployment",
            ("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=8080"),
            (exactly("deployment.apps/web created"),),
        ),
        Step(
            "create service",
            ("create", "service", "clusterip", "web", "--tcp=80:8080"),
            (exactly("service/web created"),),
        ),
        Step(
            "create serviceaccount",
            ("create", "serviceaccount", "robot"),
            (exactly("serviceaccount/robot created"),),
        ),
        Step(
            "create job",
            ("create", "job", "once", "--image=busybox", "--", "echo", "hi"),
            (exactly("job.batch/once created"),),
        ),
        Step("run", ("run", "solo", "--image=nginx", "--labels=app=solo"), (exactly("pod/solo created"),)),
        Step(
            "create -f", ("create", "-f", "-"), (exactly("persistentvolumeclaim/data created"),), stdin=CLAIM
        ),
        Step(
            "expose",
            ("expose", "deployment", "web", "--name=web-exposed", "--port=80", "--target-port=8080"),
            (exactly("service/web-exposed exposed"),),
        ),
        Step(
            "create a duplicate",
            ("create", "configmap", "settings", "--from-literal=a=1"),
            (
                has(
                    r'^error: failed to create configmap: configmaps "settings" already exists$',
                    stream="stderr",
                ),
            ),
            code=1,
        ),
        Step(
            "create role",
            ("create", "role", "reader", "--verb=get,list", "--resource=pods"),
            (exactly("role.rbac.authorization.k8s.io/reader created"),),
            needs=(f"{RBAC} roles",),
        ),
        Step(
            "create rolebinding",
            ("create", "rolebinding", "reader", "--role=reader", f"--serviceaccount={NAMESPACE}:robot"),
            (exactly("rolebinding.rbac.authorization.k8s.io/reader created"),),
            needs=(f"{RBAC} rolebindings",),
        ),
    ]


def _applies() -> list[Step]:
    changed = API.replace("nginx:1.25", "nginx:1.26")
    return [
        Step(
            "apply",
            ("apply", "-f", "-"),
            (exactly("deployment.apps/api created\nconfigmap/api-config created"),),
            stdin=API,
        ),
        Step(
            "apply again",
            ("apply", "-f", "-"),
            (exactly("deployment.apps/api unchanged\nconfigmap/api-config unchanged"),),
            stdin=API,
        ),
        Step("diff with no change", ("diff", "-f", "-"), (exactly(""),), stdin=API),
        Step(
            "diff with a change",
            ("diff", "-f", "-"),
            (
                has(
                    r"^- - image: nginx:1\.25$",
                    r"^\+ - image: nginx:1\.26$",
                    r"^- generation: 1$",
                    r"^\+ generation: 2$",
                ),
            ),
            code=1,
            stdin=changed,
        ),
        Step(
            "apply --server-side",
            ("apply", "--server-side", "-f", "-"),
            (exactly("deployment.apps/api serverside-applied\nconfigmap/api-config serverside-applied"),),
            stdin=changed,
        ),
        Step(
            "apply view-last-applied",
            ("apply", "view-last-applied", "configmap/api-config", "-o", "json"),
            (document(lambda d: d["data"] == {"mode": "live"}, "the last applied ConfigMap"),),
        ),
        Step(
            "apply --prune with an allowlist",
            ("apply", "--prune", "-l", "part=shop", "--prune-allowlist=core/v1/ConfigMap", "-f", "-"),
            (has(r"^deployment\.apps/api (unchanged|configured)$", r"^configmap/api-config pruned$"),),
            stdin=API_ONLY.replace("nginx:1.25", "nginx:1.26"),
        ),
        Step(
            "apply --prune with the default prune list",
            ("apply", "--prune", "-l", "part=shop", "-f", "-"),
            (has(r"^deployment\.apps/api (unchanged|configured)$"),),
            stdin=API_ONLY.replace("nginx:1.25", "nginx:1.26"),
            needs=(
                "v1 replicationcontrollers",
                "batch/v1 cronjobs",
                "networking.k8s.io/v1 ingresses",
                "apps/v1 daemonsets",
                "apps/v1 statefulsets",
            ),
        ),
        Step(
            "strict apply of an unknown field",
            ("apply", "-f", "-"),
            (
                has(
                    r'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                    r'unknown field "spec\.containers\[0\]\.resource"',
                    stream="stderr",
                ),
            ),
            code=1,
            stdin=TYPO,
        ),
        Step(
            "create with --validate=warn",
            ("create", "--validate=warn", "-f", "-"),
            (
                exactly("pod/typo created"),
                has(r'^Warning: unknown field "spec\.containers\[0\]\.resource"$', stream="stderr"),
            ),
            stdin=TYPO,
        ),
    ]


def _gets() -> list[Step]:
    replicas = "jsonpath={.spec.replicas}"
    return [
        Step(
            "rollout status",
            ("rollout", "status", "deployment/web", "--timeout=60s"),
            (has(r'deployment "web" successfully rolled out'),),
        ),
        Step("get", ("get", "deployment", "web"), (exactly(f"{HEADER_DEPLOY}\nweb 2/2 2 2 <age>"),)),
        Step(
            "get -o wide",
            ("get", "deployment", "web", "-o", "wide"),
            (
                exactly(
                    f"{HEADER_DEPLOY} CONTAINERS IMAGES SELECTOR\nweb 2/2 2 2 <age> nginx nginx:1.25 app=web"
                ),
            ),
        ),
        Step(
            "get -o yaml",
            ("get", "deployment", "web", "-o", "yaml"),
            (
                document(
                    lambda d: d["kind"] == "Deployment" and d["status"]["readyReplicas"] == 2,
                    "a ready Deployment",
                ),
            ),
        ),
        Step(
            "get -o json",
            ("get", "deployment", "web", "-o", "json"),
            (
                is_json,
                document(
                    lambda d: (
                        d["spec"]["template"]["spec"]["containers"][0]["ports"]
                        == [{"containerPort": 8080, "protocol": "TCP"}]
                    ),
                    "the port",
                ),
            ),
        ),
        Step(
            "get -o name",
            ("get", "deployments", "-o", "name"),
            (exactly("deployment.apps/api\ndeployment.apps/web"),),
        ),
        Step("get -o jsonpath", ("get", "deployment", "web", "-o", replicas), (exactly("2"),)),
        Step(
            "get -o go-template",
            ("get", "configmap", "settings", "-o", "go-template={{.data.a}}-{{.data.b}}"),
            (exactly("1-2"),),
        ),
        Step(
            "get -o custom-columns",
            ("get", "deployments", "-o", "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas"),
            (exactly("NAME REPLICAS\napi 1\nweb 2"),),
        ),
        Step(
            "get -o jsonpath over a list",
            (
                "get",
                "services",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name}:{.spec.ports[0].port}{' '}{end}",
            ),
            (exactly("web:80 web-exposed:80"),),
        ),
        Step(
            "get --show-labels",
            ("get", "pod", "solo", "--show-labels"),
            (exactly("NAME READY STATUS RESTARTS AGE LABELS\nsolo 1/1 Running 0 <age> app=solo"),),
        ),
        Step(
            "get -L",
            ("get", "deployment", "api", "-L", "part"),
            (exactly(f"{HEADER_DEPLOY} PART\napi 1/1 1 1 <age> shop"),),
        ),
        Step(
            "get several kinds",
            ("get", "configmap,secret", "-o", "name"),
            (exactly("configmap/kube-root-ca.crt\nconfigmap/settings\nsecret/creds"),),
        ),
        Step(
            "get all",
            ("get", "all"),
            (
                has(
                    r"^deployment\.apps/web 2/2 2 2 <age>$",
                    r"^service/web ClusterIP <cluster-ip> <none> 80/TCP <age>$",
                    r"^job\.batch/once ",
                ),
            ),
        ),
        Step(
            "get --sort-by",
            ("get", "configmaps", "--sort-by=.metadata.name", "-o", "name"),
            (exactly("configmap/kube-root-ca.crt\nconfigmap/settings"),),
        ),
        Step(
            "get -f", ("get", "-f", "-", "-o", "name"), (exactly("persistentvolumeclaim/data"),), stdin=CLAIM
        ),
        Step(
            "get a missing object",
            ("get", "deployment", "nope"),
            (has(r'^Error from server \(NotFound\): deployments\.apps "nope" not found$', stream="stderr"),),
            code=1,
        ),
        Step(
            "get -w --request-timeout",
            ("get", "deployment", "web", "--watch", "--request-timeout=1s"),
            (has(r"^web 2/2 2 2 <age>$"),),
        ),
        Step(
            "scale", ("scale", "deployment", "web", "--replicas=3"), (exactly("deployment.apps/web scaled"),)
        ),
        Step(
            "rollout status after scale",
            ("rollout", "status", "deployment/web", "--timeout=60s"),
            (has(r"successfully rolled out"),),
        ),
        Step(
            "autoscale",
            ("autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=80"),
            (exactly("horizontalpodautoscaler.autoscaling/web autoscaled"),),
            needs=("autoscaling/v2 horizontalpodautoscalers",),
        ),
    ]


def _selectors() -> list[Step]:
    return [
        Step(
            "-l equality",
            ("get", "pods", "-l", "app=web", "-o", "name"),
            (has(r"\A(pod/web-<rs>-<pod>\n?){3}\Z"),),
        ),
        Step(
            "-l set",
            ("get", "pods", "-l", "app in (solo,api)", "-o", "name"),
            (exactly("pod/api-<rs>-<pod>\npod/solo"),),
        ),
        Step(
            "-l inequality",
            ("get", "pods", "-l", "app!=web,app", "-o", "name"),
            (exactly("pod/api-<rs>-<pod>\npod/solo"),),
        ),
        Step(
            "-l not exists",
            ("get", "deployments", "-l", "!part", "-o", "name"),
            (exactly("deployment.apps/web"),),
        ),
        Step(
            "-l exists", ("get", "deployments", "-l", "part", "-o", "name"), (exactly("deployment.apps/api"),)
        ),
        Step(
            "--field-selector",
            ("get", "pods", "--field-selector", "status.phase=Running,metadata.name=solo", "-o", "name"),
            (exactly("pod/solo"),),
        ),
        Step(
            "--field-selector !=",
            ("get", "configmaps", "--field-selector", "metadata.name!=kube-root-ca.crt", "-o", "name"),
            (exactly("configmap/settings"),),
        ),
        Step(
            "-A with a selector",
            ("get", "pods", "-A", "-l", "app=solo"),
            (exactly(f"NAMESPACE NAME READY STATUS RESTARTS AGE\n{NAMESPACE} solo 1/1 Running 0 <age>"),),
        ),
        Step(
            "a bad selector",
            ("get", "pods", "--field-selector", "spec.bogus=x"),
            (has(r"field label not supported: spec\.bogus", stream="stderr"),),
            code=1,
        ),
    ]


def _describes() -> list[Step]:
    return [
        Step(
            "describe deployment",
            ("describe", "deployment", "web"),
            (
                has(
                    r"^Name: web$",
                    r"^Replicas: 3 desired \| 3 updated \| 3 total \| 3 available \| 0 unavailable$",
                    r"^StrategyType: RollingUpdate$",
                    r"ScalingReplicaSet",
                ),
            ),
        ),
        Step(
            "describe pod",
            ("describe", "pod", "solo"),
            (
                has(
                    r"^Status: Running$",
                    r"^IP: <pod-ip>$",
                    r"Normal Scheduled",
                    r"Successfully assigned battery/solo to planner-node-0",
                    r"Normal Started",
                ),
            ),
        ),
        Step(
            "describe service",
            ("describe", "service", "web"),
            (has(r"^Type: ClusterIP$", r"^Endpoints: (<pod-ip>:8080,?){3}$"),),
        ),
        Step(
            "describe replicaset",
            ("describe", "rs", "-l", "app=web"),
            (has(r"Normal SuccessfulCreate", r"Created pod: web-<rs>-<pod>"),),
        ),
    ]


def _rollouts() -> list[Step]:
    return [
        Step(
            "set image",
            ("set", "image", "deployment/web", "nginx=nginx:1.26"),
            (exactly("deployment.apps/web image updated"),),
        ),
        Step(
            "rollout status",
            ("rollout", "status", "deployment/web", "--timeout=60s"),
            (has(r'deployment "web" successfully rolled out'),),
        ),
        Step(
            "rollout history",
            ("rollout", "history", "deployment/web"),
            (exactly("deployment.apps/web\nREVISION CHANGE-CAUSE\n1 <none>\n2 <none>"),),
        ),
        Step(
            "rollout history --revision",
            ("rollout", "history", "deployment/web", "--revision=2"),
            (has(r"Image: nginx:1\.26"),),
        ),
        Step(
            "rollout undo",
            ("rollout", "undo", "deployment/web"),
            (exactly("deployment.apps/web rolled back"),),
        ),
        Step(
            "rollout status after undo",
            ("rollout", "status", "deployment/web", "--timeout=60s"),
            (has(r"successfully rolled out"),),
        ),
        Step(
            "rollout undo again",
            ("rollout", "undo", "deployment/web"),
            (exactly("deployment.apps/web rolled back"),),
        ),
        Step(
            "rollout history after two undos",
            ("rollout", "history", "deployment/web"),
            (exactly("deployment.apps/web\nREVISION CHANGE-CAUSE\n3 <none>\n4 <none>"),),
        ),
        Step(
            "rollout restart",
            ("rollout", "restart", "deployment/web"),
            (exactly("deployment.apps/web restarted"),),
        ),
        Step(
            "rollout pause", ("rollout", "pause", "deployment/web"), (exactly("deployment.apps/web paused"),)
        ),
        Step(
            "rollout resume",
            ("rollout", "resume", "deployment/web"),
            (exactly("deployment.apps/web resumed"),),
        ),
        Step(
            "rollout status after restart",
            ("rollout", "status", "deployment/web", "--timeout=60s"),
            (has(r"successfully rolled out"),),
        ),
    ]


def _edits() -> list[Step]:
    return [
        Step(
            "label",
            ("label", "deployment", "web", "tier=frontend"),
            (exactly("deployment.apps/web labeled"),),
        ),
        Step(
            "label --overwrite",
            ("label", "--overwrite", "deployment", "web", "tier=edge"),
            (exactly("deployment.apps/web labeled"),),
        ),
        Step(
            "label removal",
            ("label", "deployment", "web", "tier-"),
            (exactly("deployment.apps/web unlabeled"),),
        ),
        Step(
            "annotate",
            ("annotate", "deployment", "web", "note=hello"),
            (has(r"^deployment\.apps/web annotated?$"),),  # kubectl 1.27 prints "annotate",
        ),
        Step(
            "patch strategic",
            ("patch", "deployment", "web", "-p", '{"spec":{"replicas":2}}'),
            (exactly("deployment.apps/web patched"),),
        ),
        Step(
            "patch merge",
            ("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"c":"3"}}'),
            (exactly("configmap/settings patched"),),
        ),
        Step(
            "patch json",
            ("patch", "configmap", "settings", "--type=json", "-p", '[{"op":"remove","path":"/data/b"}]'),
            (exactly("configmap/settings patched"),),
        ),
        Step(
            "patch with no change",
            ("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"c":"3"}}'),
            (exactly("configmap/settings patched (no change)"),),
        ),
        Step(
            "patch with a wrong type",
            ("patch", "deployment", "web", "--type=merge", "-p", '{"spec":{"replicas":"two"}}'),
            (
                has(
                    r"The request is invalid: patch: Invalid value: .*json: cannot unmarshal string into Go struct field DeploymentSpec\.spec\.replicas of type int32",
                    stream="stderr",
                ),
            ),
            code=1,
        ),
        Step(
            "edit",
            ("edit", "configmap", "settings"),
            (exactly("configmap/settings edited"),),
            editor='s/^  a: "1"$/  a: edited/',
        ),
        Step(
            "get after edit",
            ("get", "configmap", "settings", "-o", "jsonpath={.data}"),
            (exactly('{"a":"edited","c":"3"}'),),
        ),
        Step("create for replace", ("create", "-f", "-"), (exactly("configmap/cfg created"),), stdin=CONFIG),
        Step(
            "replace",
            ("replace", "-f", "-"),
            (exactly("configmap/cfg replaced"),),
            stdin=CONFIG.replace('c: "3"', 'c: "4"'),
        ),
        Step(
            "replace --force",
            ("replace", "--force", "-f", "-"),
            (exactly('configmap "cfg" deleted\nconfigmap/cfg replaced'),),
            stdin=CONFIG,
        ),
        Step("logs", ("logs", "job/once"), (has(r"^\[once\] command: echo hi$"),)),
    ]


def _waits_and_deletes() -> list[Step]:
    return [
        Step(
            "wait for a condition",
            ("wait", "--for=condition=Available", "deployment/web", "--timeout=60s"),
            (exactly("deployment.apps/web condition met"),),
        ),
        Step(
            "wait for a complete job",
            ("wait", "--for=condition=complete", "job/once", "--timeout=60s"),
            (exactly("job.batch/once condition met"),),
        ),
        Step(
            "wait for a jsonpath",
            ("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s"),
            (exactly("persistentvolumeclaim/data condition met"),),
        ),
        Step(
            "get job",
            ("get", "job", "once"),
            (has(r"^NAME (STATUS )?COMPLETIONS DURATION AGE$", r"^once (Complete )?1/1 <age> <age>$"),),
        ),
        Step(
            "delete --cascade=orphan",
            ("delete", "deployment", "api", "--cascade=orphan"),
            (exactly('deployment.apps "api" deleted'),),
        ),
        Step(
            "the orphans stay",
            ("get", "rs,pods", "-l", "app=api", "-o", "name"),
            (exactly("replicaset.apps/api-<rs>\nreplicaset.apps/api-<rs>\npod/api-<rs>-<pod>"),),
        ),
        Step(
            "delete by label",
            ("delete", "rs", "-l", "app=api"),
            (exactly('replicaset.apps "api-<rs>" deleted\nreplicaset.apps "api-<rs>" deleted'),),
        ),
        Step("wait for deletion", ("wait", "--for=delete", "pod", "-l", "app=api", "--timeout=60s"), ()),
        Step(
            "delete --cascade=foreground",
            ("delete", "deployment", "web", "--cascade=foreground"),
            (exactly('deployment.apps "web" deleted'),),
        ),
        Step(
            "nothing is left of web",
            ("get", "rs,pods", "-l", "app=web"),
            (exactly(""), has(r"^No resources found in battery namespace\.$", stream="stderr")),
        ),
        Step("delete job", ("delete", "job", "once"), (exactly('job.batch "once" deleted'),)),
        Step(
            "delete --force",
            ("delete", "pod", "solo", "--grace-period=0", "--force"),
            (exactly('pod "solo" force deleted'), has(r"^Warning: Immediate deletion", stream="stderr")),
        ),
        Step(
            "get events",
            ("get", "events", "--field-selector", "involvedObject.kind=Pod,involvedObject.name=solo"),
            (
                has(
                    r"^LAST SEEN TYPE REASON OBJECT MESSAGE$",
                    r"Normal Scheduled pod/solo Successfully assigned battery/solo to planner-node-0",
                ),
            ),
        ),
        Step(
            "events",
            ("events", "--for", "pod/solo"),
            (
                has(
                    r"^LAST SEEN TYPE REASON OBJECT MESSAGE$",
                    r"Normal Started Pod/solo Started container solo",
                ),
            ),
        ),
    ]


def _discovery() -> list[Step]:
    return [
        Step(
            "api-resources",
            ("api-resources",),
            (
                has(
                    r"^NAME SHORTNAMES APIVERSION NAMESPACED KIND$",
                    r"^deployments deploy apps/v1 true Deployment$",
                    r"^pods po v1 true Pod$",
                ),
            ),
        ),
        Step(
            "api-resources --api-group",
            ("api-resources", "--api-group=batch", "-o", "name"),
            (exactly("cronjobs.batch\njobs.batch"),),
        ),
        Step("api-versions", ("api-versions",), (has(r"^apps/v1$", r"^batch/v1$", r"^v1$"),)),
        Step(
            "explain",
            ("explain", "deployment.spec.strategy"),
            (
                has(
                    r"^KIND: Deployment$",
                    r"^FIELD: strategy <DeploymentStrategy>$",
                    r"^rollingUpdate <RollingUpdateDeployment>$",
                    r"^type <string>$",
                    r'^- `"Recreate"` Kill all existing pods before creating new ones\.$',
                ),
            ),
        ),
        Step(
            "explain a resource",
            ("explain", "pods"),
            (has(r"^KIND: Pod$", r"^spec <PodSpec>$", r"^status <PodStatus>$"),),
        ),
        Step(
            "get --raw",
            ("get", "--raw", "/version"),
            (document(lambda d: d["gitVersion"] == "v1.29.0", "the version"),),
        ),
    ]


def _auth() -> list[Step]:
    return [
        Step(
            "auth can-i",
            ("auth", "can-i", "create", "deployments"),
            (exactly("yes"),),
            needs=("authorization.k8s.io/v1 selfsubjectaccessreviews",),
        ),
        Step(
            "auth can-i --list",
            ("auth", "can-i", "--list"),
            (has(r"^Resources Non-Resource URLs Resource Names Verbs$"),),
            needs=("authorization.k8s.io/v1 selfsubjectrulesreviews",),
        ),
        Step(
            "create token",
            ("create", "token", "robot"),
            (has(r"^[\w-]+\.[\w-]+\.[\w-]+$"),),
            needs=("v1 serviceaccounts/token",),
        ),
    ]


def _policies() -> list[Step]:
    """The kinds beyond workloads that users meet: quotas, disruption budgets, priority classes."""
    return [
        Step(
            "create quota",
            ("create", "quota", "q", "--hard=pods=50,count/deployments.apps=20"),
            (exactly("resourcequota/q created"),),
            needs=("v1 resourcequotas",),
        ),
        Step(
            "get quota",
            ("get", "quota", "q"),
            (has(r"^NAME AGE REQUEST LIMIT$", r"^q <age> count/deployments\.apps: \d+/20, pods: \d+/50$"),),
            needs=("v1 resourcequotas",),
        ),
        Step(
            "describe quota",
            ("describe", "quota", "q"),
            (has(r"^Resource Used Hard$", r"^pods \d+ 50$"),),
            needs=("v1 resourcequotas",),
        ),
        Step(
            "create pdb",
            ("create", "pdb", "web", "--selector=app=web", "--min-available=1"),
            (exactly("poddisruptionbudget.policy/web created"),),
            needs=("policy/v1 poddisruptionbudgets",),
        ),
        Step(
            "get pdb",
            ("get", "pdb", "web"),
            (has(r"^NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE$", r"^web 1 N/A \d+ <age>$"),),
            needs=("policy/v1 poddisruptionbudgets",),
        ),
        Step(
            "explain a budget",
            ("explain", "pdb.spec.maxUnavailable"),
            (has(r"^GROUP: policy$", r"^FIELD: maxUnavailable <IntOrString>$"),),
            needs=("policy/v1 poddisruptionbudgets",),
        ),
        Step(
            "get priorityclasses",
            ("get", "priorityclasses"),
            (
                has(
                    r"^NAME VALUE GLOBAL-DEFAULT AGE$",
                    r"^system-cluster-critical 2000000000 false <age>$",
                    r"^system-node-critical 2000001000 false <age>$",
                ),
            ),
            needs=("scheduling.k8s.io/v1 priorityclasses",),
        ),
    ]
