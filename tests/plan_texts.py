"""Plan texts two test tiers share, so the embedded cluster and a real kube-apiserver are asked the same."""

from __future__ import annotations


def web_env_plan(namespace: str, password: str) -> str:
    """Plan `web`: a Deployment reading the plan Secret `db-credentials` (its password `password`), the
    plan ConfigMap `web-config`, pod fields, its own resources and a sidecar's, and the Secret
    `vault-token` that the test makes outside the plan, through env and envFrom of its containers, a
    sidecar and an init container."""
    return f"""apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: web, namespace: {namespace}}}
secrets:
  - name: db-credentials
    data: {{password: {password}}}
configMaps:
  - name: web-config
    data: {{mode: fast}}
workloads:
  - name: web
    image: nginx:1.27
    replicas: 1
    cpu: 250m
    env:
      DB_PASSWORD: {{secretKeyRef: {{name: db-credentials, key: password}}}}
      MODE: {{configMapKeyRef: {{name: web-config, key: mode, optional: true}}}}
      POD_IP: {{fieldRef: status.podIP}}
      APP: {{fieldRef: "metadata.labels['app']"}}
      TOKEN: {{secretKeyRef: {{name: vault-token, key: token}}}}
      CPU_MILLIS: {{resourceFieldRef: {{resource: limits.cpu, divisor: 1m}}}}
      PROXY_MEMORY: {{resourceFieldRef: {{resource: limits.memory, containerName: proxy, divisor: 1Mi}}}}
    envFrom: [{{configMap: web-config, prefix: WEB_}}, {{secret: db-credentials, optional: true}}]
    sidecars:
      - name: proxy
        image: busybox:1.36
        memory: 64Mi
        envFrom: [{{secret: vault-token}}]
    initContainers:
      - name: migrate
        image: busybox:1.36
        env: {{PW: {{secretKeyRef: {{name: db-credentials, key: password}}}}}}
"""
