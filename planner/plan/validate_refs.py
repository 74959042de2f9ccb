"""References between the things of a plan: `dependsOn` and `forkFrom` must name something that
exists (and not themselves), and together they must not form a cycle.

A cycle is reported once per strongly connected group, at the reference that leaves the member written
first, as the loop a person would trace: `dependency cycle: a -> b -> a`. Apply orders work by these
edges (a fork's source must exist before its clones), so a cycle could never be applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.errors import Diagnostic
from planner.plan.raw import Node
from planner.plan.source import ParsedFile
from planner.plan.suggest import hint

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Edge:
    source: str  # the dependent (or the fork)
    target: str  # what it waits for (or forks from)
    path: str  # where the reference is written
    via: str  # "dependsOn" or "forkFrom"


def reference_diagnostics(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    workloads = _names(plan, "workloads")
    sandboxes = _names(plan, "sandboxes")
    others = set(_names(plan, "configMaps")) | set(_names(plan, "secrets"))
    targets = workloads | sandboxes  # once, not per edge: a plan may hold thousands of each
    valid: list[Edge] = []
    for edge in _edges(plan):
        problem = _problem(edge, targets, sandboxes, others)
        if problem:
            yield parsed.diagnostic(edge.path, problem)
        else:
            valid.append(edge)
    yield from _cycles(valid, parsed)


def _names(plan: Node, section: str) -> dict[str, None]:
    """The names of a section, in plan order (a dict: ordered, and a set's quick lookup)."""
    return {name: None for item in plan.items(section) if (name := item.text("name"))}


def _edges(plan: Node) -> Iterator[Edge]:
    for section in ("workloads", "sandboxes"):
        for item in plan.items(section):
            name = item.text("name")
            if not name:
                continue
            for path, target in item.strings("dependsOn"):
                if "/" not in target:  # `Kind/name` names a manifest: planner.plan.raw_manifests checks it
                    yield Edge(name, target, path, "dependsOn")
            source = item.text("forkFrom") if section == "sandboxes" else None
            if source is not None:
                yield Edge(name, source, item.at("forkFrom"), "forkFrom")


def _problem(
    edge: Edge, targets: dict[str, None], sandboxes: dict[str, None], others: set[str]
) -> str | None:
    if edge.via == "forkFrom":
        if edge.target == edge.source:
            return "a sandbox cannot fork from itself"
        if edge.target not in sandboxes:
            what = " (it is a workload)" if edge.target in targets else _hint(edge, sandboxes)
            return f'unknown forkFrom source "{edge.target}": no sandbox of this plan has that name{what}'
        return None
    if edge.target == edge.source:
        return f'"{edge.target}" cannot depend on itself'
    if edge.target not in targets:
        what = (
            " (it is a configMap or secret; those are always applied first)"
            if edge.target in others
            else _hint(edge, targets)
        )
        return f'unknown dependsOn target "{edge.target}": no workload or sandbox has that name{what}'
    return None


def _hint(edge: Edge, names: dict[str, None]) -> str:
    """The closest name and the others it could have meant: never the referring item itself."""
    return hint(edge.target, [name for name in names if name != edge.source], listing="defined", limit=10)


def _cycles(edges: list[Edge], parsed: ParsedFile) -> Iterator[Diagnostic]:
    if not edges:  # no cycle without an edge, and networkx is a tenth of a second to import
        return
    import networkx as nx

    graph = nx.DiGraph()
    for edge in edges:
        graph.add_edge(edge.source, edge.target, edge=edge)
    order = {edge.source: parsed.order(edge.path) for edge in reversed(edges)}
    for group in nx.strongly_connected_components(graph):
        if len(group) < 2:
            continue
        cycle = _cycle_edges(graph.subgraph(group), min(group, key=lambda name: order[name]), order)
        names = [cycle[0].source, *(edge.target for edge in cycle)]
        through = " (through forkFrom)" if any(edge.via == "forkFrom" for edge in cycle) else ""
        yield parsed.diagnostic(cycle[0].path, f"dependency cycle: {' -> '.join(names)}{through}")


def _cycle_edges(group: nx.DiGraph, first: str, order: dict[str, tuple[int, int]]) -> list[Edge]:
    """One cycle of `group`, starting at its member written first."""
    import networkx as nx

    found = [group.edges[source, target]["edge"] for source, target in nx.find_cycle(group, source=first)]
    start = min(range(len(found)), key=lambda index: order[found[index].source])
    return found[start:] + found[:start]
