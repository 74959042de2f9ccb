"""The simulated kubelet's timeline: what each container of a pod is doing at a given moment.

Everything here is a pure function of the pod (spec, `sim.planner.dev/*` annotations), the moment its
volumes were ready (`t0`, in seconds since the epoch), the time scale and `now`. Nothing is stored
between calls, so the node agent is level-based: it recomputes a pod's status on every pass and
writes it only when it differs. Restarts, backoffs, probe timings and init sequencing all fall out of
replaying the containers' runs from `t0`, and the replay also tells the agent when the next change is
due so it need not recompute idle pods.

Sidecars (init containers with `restartPolicy: Always`, as v1.29 runs them) start in their place among
the init containers and let the next one start at once; they run and restart like regular containers
whatever the pod's restart policy, and stop (exit 0) when the last regular container of a pod that does
not restart has finished.

Knobs (annotations on the pod, each optionally suffixed `.<container>` to target one container):
`run-seconds`, `exit-code`, `ready-after-seconds`, `never-ready`, `crash-after-seconds`,
`liveness-fail-after-seconds`, `image-pull-error`, `init-exit-code`. An image whose registry is in a
reserved domain (`.invalid`, `.test`, `.example`, `.localhost`) never pulls, as on a real node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

KNOB_PREFIX = "sim.planner.dev/"
CREATE_DELAY = 0.3  # ContainerCreating before the first container starts
INIT_RUN_SECONDS = 0.3  # an init container's default run
JOB_RUN_SECONDS = 0.5  # a container under restartPolicy Never/OnFailure exits 0 after this by default
BACKOFF_START = 10.0
BACKOFF_CAP = 300.0
LIVENESS_EXIT_CODE = 137
MAX_RUNS = 200  # replay bound: a crash loop past this many runs is shown as its last run


@dataclass(frozen=True)
class Knobs:
    run_seconds: float | None = None
    exit_code: int | None = None
    ready_after: float = 0.0
    never_ready: bool = False
    crash_after: float | None = None
    liveness_fail_after: float | None = None
    image_pull_error: str | None = None
    init_exit_code: int | None = None


@dataclass(frozen=True)
class Run:
    """One start of a container: times in seconds since the epoch; `end` None while it runs."""

    start: float
    end: float | None
    exit_code: int
    reason: str
    ready_at: float | None


@dataclass(frozen=True)
class ContainerView:
    """A container at `now`: its finished runs, the current one, and why it waits if it does."""

    name: str
    runs: tuple[Run, ...]
    waiting_reason: str | None  # ContainerCreating, PodInitializing, CrashLoopBackOff, ErrImagePull…
    waiting_message: str | None
    done: bool  # terminated and will not restart
    backoff_seconds: float = 0.0

    @property
    def current(self) -> Run | None:
        return self.runs[-1] if self.runs and self.waiting_reason is None else None

    @property
    def restart_count(self) -> int:
        return max(len(self.runs) - 1, 0)

    def running(self, now: float) -> bool:
        run = self.current
        return run is not None and (run.end is None or run.end > now)

    def ready(self, now: float) -> bool:
        run = self.current
        return self.running(now) and run is not None and run.ready_at is not None and run.ready_at <= now


@dataclass(frozen=True)
class PodView:
    init: tuple[ContainerView, ...]
    main: tuple[ContainerView, ...]
    init_done_at: float | None  # when the last init container exited 0 (or the last sidecar started)
    failed: bool  # an init container failed under restartPolicy Never
    next_change: float | None
    sidecars: frozenset[str] = frozenset()  # names of the init containers that are sidecars

    def initialized(self, container: ContainerView) -> bool:
        """An init container is done initializing once it exited 0 — a sidecar once it started."""
        if container.name in self.sidecars:
            return bool(container.runs) and container.waiting_reason is None
        return container.done and bool(container.runs) and container.runs[-1].exit_code == 0


def is_sidecar(container: Obj) -> bool:
    return container.get("restartPolicy") == "Always"


# --- knobs --------------------------------------------------------------------------------------------


def knobs_for(annotations: dict[str, str], container: str) -> Knobs:
    def value(knob: str) -> str | None:
        targeted = annotations.get(f"{KNOB_PREFIX}{knob}.{container}")
        return targeted if targeted is not None else annotations.get(f"{KNOB_PREFIX}{knob}")

    return Knobs(
        run_seconds=_number(value("run-seconds")),
        exit_code=_integer(value("exit-code")),
        ready_after=_number(value("ready-after-seconds")) or 0.0,
        never_ready=(value("never-ready") or "").lower() in ("true", "1", "yes"),
        crash_after=_number(value("crash-after-seconds")),
        liveness_fail_after=_number(value("liveness-fail-after-seconds")),
        image_pull_error=value("image-pull-error") or None,
        init_exit_code=_integer(value("init-exit-code")),
    )


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _integer(text: str | None) -> int | None:
    number = _number(text)
    return int(number) if number is not None else None


# --- backoff and probes -------------------------------------------------------------------------------


def restart_delay(restarts_so_far: int, scale: float) -> float:
    """The kubelet restarts a first crash at once, then waits 10 s, 20 s, 40 s … up to 5 minutes."""
    if restarts_so_far <= 0:
        return 0.0
    return float(min(BACKOFF_START * 2.0 ** (restarts_so_far - 1), BACKOFF_CAP)) * scale


def _probe(container: Obj, kind: str) -> Obj | None:
    probe = container.get(kind)
    return probe if isinstance(probe, dict) else None


def _first_probe_at_or_after(probe: Obj, offset: float, scale: float) -> float:
    """Seconds after the start when the first probe at or after `offset` seconds runs."""
    initial = float(probe.get("initialDelaySeconds", 0)) * scale
    period = max(float(probe.get("periodSeconds", 10)), 1.0) * scale
    if offset <= initial:
        return initial
    return initial + math.ceil((offset - initial) / period - 1e-9) * period


def ready_offset(container: Obj, knobs: Knobs, scale: float) -> float | None:
    if knobs.never_ready:
        return None
    wanted = knobs.ready_after * scale
    probe = _probe(container, "readinessProbe")
    if probe is None:
        return wanted
    period = max(float(probe.get("periodSeconds", 10)), 1.0) * scale
    successes = max(int(probe.get("successThreshold", 1)), 1)
    return _first_probe_at_or_after(probe, wanted, scale) + (successes - 1) * period


def liveness_kill_offset(container: Obj, knobs: Knobs, scale: float) -> float | None:
    probe = _probe(container, "livenessProbe")
    if probe is None or knobs.liveness_fail_after is None:
        return None
    period = max(float(probe.get("periodSeconds", 10)), 1.0) * scale
    failures = max(int(probe.get("failureThreshold", 3)), 1)
    first_failure = _first_probe_at_or_after(probe, knobs.liveness_fail_after * scale, scale)
    return first_failure + (failures - 1) * period


# --- one container ------------------------------------------------------------------------------------


def _run_from(start: float, container: Obj, knobs: Knobs, *, init: bool, policy: str, scale: float) -> Run:
    """One run starting at `start`: ends at the earliest of crash, liveness kill and natural exit."""
    endings: list[tuple[float, int, str]] = []
    if knobs.crash_after is not None:
        code = knobs.exit_code if knobs.exit_code not in (None, 0) else 1
        endings.append((knobs.crash_after * scale, code, "Error"))
    killed = liveness_kill_offset(container, knobs, scale)
    if killed is not None:
        endings.append((killed, LIVENESS_EXIT_CODE, "Error"))
    natural = knobs.run_seconds
    exit_code = knobs.exit_code or 0
    if init:
        natural = INIT_RUN_SECONDS if natural is None else natural
        exit_code = knobs.init_exit_code if knobs.init_exit_code is not None else exit_code
    elif natural is None and (policy != "Always" or knobs.exit_code is not None):
        natural = JOB_RUN_SECONDS
    if natural is not None:
        endings.append((natural * scale, exit_code, "Completed" if exit_code == 0 else "Error"))
    ready = None if init else ready_offset(container, knobs, scale)
    if not endings:
        return Run(start, None, 0, "", None if ready is None else start + ready)
    offset, code, reason = min(endings, key=lambda e: e[0])
    ready_at = start + ready if ready is not None and ready < offset else None
    return Run(start, start + offset, code, reason, ready_at)


def _restarts(run: Run, policy: str, *, init: bool) -> bool:
    if policy == "Never":
        return False
    if init or policy == "OnFailure":
        return run.exit_code != 0
    return True


def container_view(
    container: Obj,
    knobs: Knobs,
    *,
    start: float,
    now: float,
    init: bool,
    policy: str,
    pod_ref: str,
    scale: float,
) -> tuple[ContainerView, float | None]:
    """Replay a container's runs from `start` up to `now`; also the time of its next change."""
    name = str(container.get("name", ""))
    image = str(container.get("image", ""))
    pull_error = knobs.image_pull_error or unresolvable_registry(image)
    if pull_error:
        reason = "ErrImagePull" if int((now - start) / (5 * scale or 1)) % 2 == 0 else "ImagePullBackOff"
        message = f'Failed to pull image "{image}": {pull_error}'
        return ContainerView(name, (), reason, message, False), None
    runs: list[Run] = []
    at = start
    while len(runs) < MAX_RUNS:
        run = _run_from(at, container, knobs, init=init, policy=policy, scale=scale)
        runs.append(run)
        if run.end is None or run.end > now:
            return ContainerView(name, tuple(runs), None, None, False), _next_in_run(run, now)
        if not _restarts(run, policy, init=init):
            return ContainerView(name, tuple(runs), None, None, True), None
        delay = restart_delay(len(runs) - 1, scale)
        if run.end + delay > now:
            message = f"back-off {_go_duration(delay / scale if scale else delay)} restarting failed container={name} pod={pod_ref}"
            view = ContainerView(name, tuple(runs), "CrashLoopBackOff", message, False, delay)
            return view, run.end + delay
        at = run.end + delay
    return ContainerView(name, tuple(runs), None, None, True), None


RESERVED_DOMAINS = (".invalid", ".test", ".example", ".localhost")  # RFC 2606/6761: never resolve


def unresolvable_registry(image: str) -> str | None:
    """containerd's error for an image whose registry is in a reserved domain (`registry.invalid/x`),
    which no resolver answers; None for any other image. The registry is the first path component when
    it looks like a host (a `.` or a `:` in it), as the docker reference grammar decides."""
    registry, _, rest = image.partition("/")
    host = registry.rsplit(":", 1)[0] if ":" in registry else registry
    if not rest or "." not in registry or not host.endswith(RESERVED_DOMAINS):
        return None
    repository, at, digest = rest.partition("@")
    if at:
        reference, manifest = f"{registry}/{rest}", digest
    else:
        tagged = ":" in repository.rsplit("/", 1)[-1]
        repository, manifest = repository.rsplit(":", 1) if tagged else (repository, "latest")
        reference = f"{registry}/{repository}:{manifest}"
    return (
        f'rpc error: code = Unknown desc = failed to pull and unpack image "{reference}": failed to resolve '
        f'reference "{reference}": failed to do request: Head "https://{registry}/v2/{repository}/manifests/'
        f'{manifest}": dial tcp: lookup {host}: no such host'
    )


def _next_in_run(run: Run, now: float) -> float | None:
    future = [t for t in (run.ready_at, run.end) if t is not None and t > now]
    return min(future) if future else None


def _go_duration(seconds: float) -> str:
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


# --- the pod ------------------------------------------------------------------------------------------


def pod_view(pod: Obj, *, t0: float, now: float, scale: float) -> PodView:
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    policy = str(spec.get("restartPolicy", "Always"))
    pod_ref = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
    created = t0 + CREATE_DELAY * scale
    upcoming: list[float] = [created] if created > now else []
    init_views: list[ContainerView] = []
    sidecars: set[str] = set()
    at: float | None = created if created <= now else None
    failed = False
    for container in spec.get("initContainers") or []:
        name = str(container.get("name", ""))
        if at is None or failed:
            init_views.append(ContainerView(name, (), "PodInitializing", None, False))
            continue
        sidecar = is_sidecar(container)
        view, change = container_view(
            container,
            knobs_for(annotations, name),
            start=at,
            now=now,
            init=not sidecar,
            policy="Always" if sidecar else policy,
            pod_ref=pod_ref,
            scale=scale,
        )
        init_views.append(view)
        upcoming += [change] if change is not None else []
        last = view.runs[-1] if view.runs else None
        if sidecar:
            sidecars.add(name)
            at = at if view.runs else None  # the next init container starts once the sidecar started
        elif view.done and last is not None and last.exit_code == 0 and last.end is not None:
            at = last.end
        else:
            failed = view.done
            at = None
    main_views: list[ContainerView] = []
    for container in spec.get("containers") or []:
        name = str(container.get("name", ""))
        if at is None or failed:
            reason = (
                "PodInitializing" if spec.get("initContainers") and created <= now else "ContainerCreating"
            )
            main_views.append(ContainerView(name, (), reason, None, False))
            continue
        view, change = container_view(
            container,
            knobs_for(annotations, name),
            start=at,
            now=now,
            init=False,
            policy=policy,
            pod_ref=pod_ref,
            scale=scale,
        )
        main_views.append(view)
        upcoming += [change] if change is not None else []
    finished = _all_finished_at(main_views)
    if finished is not None and policy != "Always":
        init_views = [_stopped(view, finished) if view.name in sidecars else view for view in init_views]
    next_change = min(upcoming) if upcoming else None
    return PodView(tuple(init_views), tuple(main_views), at, failed, next_change, frozenset(sidecars))


def _all_finished_at(views: list[ContainerView]) -> float | None:
    """When the last of the regular containers finished, if all have for good."""
    if not views or not all(v.done and v.runs and v.runs[-1].end is not None for v in views):
        return None
    return max(float(v.runs[-1].end or 0.0) for v in views)


def _stopped(view: ContainerView, at: float) -> ContainerView:
    """A sidecar as the kubelet leaves it once the pod's regular containers are done: its run at that
    moment ends there (exit 0), and it is not restarted."""
    runs = [run for run in view.runs if run.start < at]
    if not runs:
        return ContainerView(view.name, (), None, None, True)
    last = runs[-1]
    if last.end is None or last.end > at:
        ready_at = last.ready_at if last.ready_at is not None and last.ready_at < at else None
        runs[-1] = Run(last.start, at, 0, "Completed", ready_at)
    return ContainerView(view.name, tuple(runs), None, None, True)
