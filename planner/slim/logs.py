"""`pods/log`: deterministic synthetic container output, replayed from the pod's simulated timeline.

A container's log for one run is: a start line naming its image and command, one heartbeat a
(scaled) second while it runs, a line when it becomes ready, and a line when it exits. The same pod
at the same moment always yields the same lines, so `--tail`, `--previous` and `-c` are testable;
`follow` streams new lines until the run ends or the client leaves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from planner.slim import podsim, status_errors

Obj = dict[str, Any]
MAX_HEARTBEATS = 2000
FOLLOW_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class LogRequest:
    container: str
    previous: bool
    tail_lines: int | None
    timestamps: bool
    follow: bool

    @classmethod
    def from_query(cls, query: Any, container: str) -> LogRequest:
        tail = query.get("tailLines")
        return cls(
            container=container,
            previous=query.get("previous") in ("true", "1", "True"),
            tail_lines=int(tail) if tail not in (None, "") else None,
            timestamps=query.get("timestamps") in ("true", "1", "True"),
            follow=query.get("follow") in ("true", "1", "True"),
        )


def _stamp(epoch: float) -> str:
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


def run_lines(
    container: Obj, run: podsim.Run, *, index: int, now: float, scale: float
) -> list[tuple[float, str]]:
    name = str(container.get("name", ""))
    command = " ".join(str(p) for p in [*(container.get("command") or []), *(container.get("args") or [])])
    lines = [(run.start, f"[{name}] starting image={container.get('image', '')} run={index}")]
    if command:
        lines.append((run.start, f"[{name}] command: {command}"))
    until = min(now, run.end) if run.end is not None else now
    step = max(scale, 0.001)
    beat = 1
    while run.start + beat * step <= until and beat <= MAX_HEARTBEATS:
        lines.append((run.start + beat * step, f"[{name}] heartbeat {beat}"))
        beat += 1
    if run.ready_at is not None and run.ready_at <= until:
        lines.append((run.ready_at, f"[{name}] ready"))
    if run.end is not None and run.end <= now:
        lines.append((run.end, f"[{name}] exiting with code {run.exit_code}"))
    return sorted(lines, key=lambda line: line[0])


def container_view_for(
    pod: Obj, name: str, t0: float, now: float, scale: float
) -> podsim.ContainerView | None:
    view = podsim.pod_view(pod, t0=t0, now=now, scale=scale)
    return next((c for c in (*view.init, *view.main) if c.name == name), None)


def lines_for(
    pod: Obj, container: Obj, request: LogRequest, *, t0: float | None, now: float, scale: float
) -> tuple[list[tuple[float, str]], bool]:
    """The requested run's lines, and whether that run is over (nothing more will come)."""
    pod_name, name = pod["metadata"]["name"], request.container
    view = container_view_for(pod, name, t0, now, scale) if t0 is not None else None
    if view is None or not view.runs:
        reason = view.waiting_reason if view is not None else "ContainerCreating"
        raise status_errors.bad_request(
            f'container "{name}" in pod "{pod_name}" is waiting to start: {reason}'
        )
    finished = [r for r in view.runs if r.end is not None and r.end <= now]
    if request.previous:
        earlier = finished if view.current is None else [r for r in finished if r is not view.current]
        if not earlier:
            raise status_errors.bad_request(
                f'previous terminated container "{name}" in pod "{pod_name}" not found'
            )
        run = earlier[-1]
    else:
        run = view.runs[-1]
    lines = run_lines(container, run, index=view.runs.index(run), now=now, scale=scale)
    over = request.previous or (run.end is not None and run.end <= now) or view.done
    return lines, over


def render(lines: list[tuple[float, str]], request: LogRequest) -> str:
    if request.tail_lines is not None:
        lines = lines[-request.tail_lines :] if request.tail_lines > 0 else []
    return "".join(f"{_stamp(t)} {text}\n" if request.timestamps else f"{text}\n" for t, text in lines)


async def serve_log(
    request: web.Request,
    pod_source: Callable[[], Obj],
    started_at: Callable[[str], float | None],
    container_name: str,
    scale: float,
    clock: Callable[[], float],
) -> web.StreamResponse:
    wanted = LogRequest.from_query(request.query, container_name)
    pod = pod_source()
    container = _container(pod, container_name)
    uid = str(pod["metadata"].get("uid", ""))
    lines, over = lines_for(pod, container, wanted, t0=started_at(uid), now=clock(), scale=scale)
    if not wanted.follow:
        return web.Response(text=render(lines, wanted), content_type="text/plain")
    response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(render(lines, wanted).encode())
    sent = len(lines)
    unlimited = LogRequest(wanted.container, wanted.previous, None, wanted.timestamps, False)
    while not over:
        await asyncio.sleep(FOLLOW_POLL_SECONDS)
        try:
            pod = pod_source()
        except status_errors.StatusError:
            break
        lines, over = lines_for(pod, container, unlimited, t0=started_at(uid), now=clock(), scale=scale)
        await response.write(render(lines[sent:], unlimited).encode())
        sent = len(lines)
    await response.write_eof()
    return response


def _container(pod: Obj, name: str) -> Obj:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if container.get("name") == name:
            return dict(container)
    raise status_errors.bad_request(f"container {name} is not valid for pod {pod['metadata']['name']}")
