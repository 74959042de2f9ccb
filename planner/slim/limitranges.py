"""LimitRange admission: a namespace's Container limit ranges default and bound a new pod's containers.

As the apiserver's LimitRanger plugin: a container without a request or limit for a resource gets the
range's `defaultRequest`/`default` (after the pod's own defaulting, which copies limits to missing
requests), and the pod is annotated `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory
request for container c; cpu limit for container c`; a container outside the range's `min`/`max` is
refused with 403 (`maximum cpu usage per Container is 2, but limit is 3`).
"""

from __future__ import annotations

from typing import Any

from planner import quantities

Obj = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"


def container_items(ranges: list[Obj]) -> list[Obj]:
    return [
        item
        for r in ranges
        for item in (r.get("spec") or {}).get("limits") or []
        if item.get("type") == "Container"
    ]


def apply_defaults(spec: Obj, items: list[Obj]) -> list[str]:
    """Fill missing container requests and limits from the ranges; what was set, per container."""
    notes: list[str] = []
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.setdefault("resources", {})
        for level, source in (("requests", "defaultRequest"), ("limits", "default")):
            present = resources.get(level) or {}
            added = {
                name: value
                for item in items
                for name, value in (item.get(source) or {}).items()
                if name not in present
            }
            if added:
                resources[level] = {**present, **added}
                what = "request" if level == "requests" else "limit"
                notes.append(f"{', '.join(sorted(added))} {what} for container {container.get('name', '')}")
    return notes


def violations(spec: Obj, items: list[Obj]) -> list[str]:
    """Each container's request or limit outside a range's min or max."""
    problems: list[str] = []
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for item in items:
            for name, bound in (item.get("min") or {}).items():
                request = requests.get(name)
                if request is not None and _value(request) < _value(bound):
                    problems.append(
                        f"minimum {name} usage per Container is {bound}, but request is {request}"
                    )
            for name, bound in (item.get("max") or {}).items():
                limit = limits.get(name)
                if limit is None:
                    problems.append(f"maximum {name} usage per Container is {bound}. No limit is specified")
                elif _value(limit) > _value(bound):
                    problems.append(f"maximum {name} usage per Container is {bound}, but limit is {limit}")
    return problems


def _value(text: Any) -> Any:
    return quantities.parse(str(text))[0]
