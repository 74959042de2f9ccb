"""What a workload kind is: the one interface render, plan, monitor and lifecycle call without naming kinds.

A plan workload's `kind` (`deployment`, `statefulset`, `daemonset`, `job`, `cronjob`) picks one
`WorkloadKind`, defined in that kind's own module of this package and listed once in the registry
(`planner.workloads`). Everything particular to the kind is there: the plan fields it alone accepts and
their checks, the spec it renders around the pod template render builds, its pods' restart policy and the
Service a port gives it, what the monitor watches and how one look at its object maps to lifecycle facts,
when it has settled, and how `start`, `stop`, `delete` and `inspect` act on it. Its readiness rule is its
API kind's, in `planner.wait.readiness`, since a raw manifest of that kind is judged the same way.

This package sits below `plan`: it sees plain data (the plan's YAML mapping, live objects as dicts) and
hands work back through the small protocols here, never importing the stages that call it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from planner.kinds import KindInfo
from planner.objects import Manifest
from planner.workloads.observation import Observation

Fields = dict[str, Any]
ServiceShape = Literal["exposed", "headless"]
# When a workload has settled for `--until-done` and `apply --watch`: once Started (or ended), once ended,
# or (a schedule) while none of its runs is running.
Settles = Literal["started", "ended", "between-runs"]
Spec = TypeVar("Spec")


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A plan error in a workload's own fields: `keys` lead from the workload to the bad key, and the
    position is that of the value (`at_value`) or of the key."""

    keys: tuple[str | int, ...]  # an int is a list index
    message: str
    at_value: bool = True


@dataclass(frozen=True, kw_only=True)
class PodInputs:
    """What render hands a kind to build its spec around: the selector labels, the pod template (with
    the kind's restart policy), the replicas the plan asks for, and a StatefulSet's claim templates."""

    name: str
    selector: Mapping[str, str]
    template: Fields
    replicas: int | None = None
    claim_templates: tuple[Fields, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Look:
    """One look at a workload's object for the monitor: how messages name it, and the exit code of a
    failed run (its pods' container's), asked only when needed."""

    describe: str
    exit_code: Callable[[Manifest], int | None] = lambda _job: None


class Handle(Protocol):
    """What a lifecycle operation may do to one workload (`planner.monitor.lifecycle` implements it):
    every write as field manager `planner-lifecycle`, every delete a no-op when already gone."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def describe(self) -> str: ...

    def own(self, *, why: str = "") -> Manifest:
        """The workload's object; WorkloadNotFoundError (exit 4) when it does not exist."""
        ...

    def scale(self, replicas: int) -> str: ...

    def patch(self, body: Fields) -> None: ...

    def delete(self, kind: KindInfo, name: str, *, propagation: str = "Background") -> bool: ...

    def delete_companions(self) -> str:
        """Delete what the workload brings along (its autoscaler and Ingress, each only when its runtime
        ID says it is this one's, and the Service its shape gives it) and say what, as
        `horizontalpodautoscaler web, ingress web, service web-svc (if any)`."""
        ...

    def delete_run(self) -> None:
        """Delete a Job (Foreground) and release its run-record finalizer."""
        ...

    def claims(self, own: Manifest) -> list[str]:
        """The PVCs a StatefulSet's claim templates made."""
        ...


@dataclass(frozen=True, kw_only=True)
class Lifecycle:
    """How the lifecycle commands act on the kind; each returns the sentence the command prints."""

    start: Callable[[Handle], str]
    stop: Callable[[Handle], str]
    delete: Callable[[Handle, bool], str]  # (handle, allow_data_loss)


Observe = Callable[[Manifest | None, Look], Observation]


@dataclass(frozen=True, kw_only=True)
class Runs:
    """The objects a workload starts that the monitor follows one by one, each with its own events
    under the workload's runtime ID: a CronJob's Jobs, a DaemonSet's pod on each node. `api` is their
    kind and `word` how events name one (`job/shop/backup-29000000`); `of` picks a workload's
    (`name`, `namespace`) from `objects`, oldest first; `owner` names the workload a run belongs to.
    When `leads`, the workload stands where its latest run does (a schedule has no phase of its own)."""

    api: KindInfo
    word: str
    observe: Observe
    of: Callable[[str, str, Iterable[Manifest]], list[Manifest]]
    owner: Callable[[Manifest], str | None]
    leads: bool = False


@dataclass(frozen=True, kw_only=True)
class WorkloadKind(Generic[Spec]):
    """One workload kind. `fields` are the plan fields it alone (or with the kinds also listing them)
    accepts; `parse` turns the workload's mapping into its spec fields, `checks` finds what the schema
    cannot say about them, `render` builds the object's `spec`."""

    name: str
    api: KindInfo
    fields: tuple[str, ...]
    parse: Callable[[Mapping[str, Any]], Spec]
    render: Callable[[Spec, PodInputs], Fields]
    lifecycle: Lifecycle
    observe: Observe
    checks: Callable[[Mapping[str, Any]], Iterator[Problem]] = lambda _data: iter(())
    label_maps: tuple[str, ...] = ()  # its fields that are node labels (checked as label keys and values)
    restart_policy: Literal["Always", "Never", "OnFailure"] = "Always"
    service: ServiceShape | None = None
    scalable: bool = False  # replicas and autoscale apply; stop scales to 0
    claim_templates: bool = False
    runs_once: bool = False  # a run-key: it runs again only when what it runs changes
    awaited: bool = True  # apply waits for it to be ready (a schedule is ready once it exists)
    settles: Settles = "started"
    also_read: tuple[KindInfo, ...] = ()  # read, not watched: a failed run's pods give its exit code
    runs: Runs | None = None  # a schedule's: each run followed on its own
    ready: Callable[[Manifest], str] | None = None  # `status`'s READY (`2/3`), and its rollout shown

    @property
    def watched(self) -> tuple[KindInfo, ...]:
        """The kinds the monitor subscribes to for it: its object, and a schedule's runs."""
        return (self.api, self.runs.api) if self.runs is not None else (self.api,)

    def steady(self, phase: str) -> bool:
        """Whether a workload of this kind standing at `phase` has settled."""
        if self.settles == "between-runs":
            return phase != "started"
        if phase in ("exited", "failed", "deleted"):
            return True
        return phase == "started" and self.settles == "started"
