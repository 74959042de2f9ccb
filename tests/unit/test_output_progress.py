"""apply's progress output: the `[done/total elapsed]` lines, the reasons they print, and the live display
drawn by rich into a forced terminal, all from hand-written events and times."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console

from planner import events
from planner.output.event_lines import ApplyPrinter, LiveApplyPrinter, apply_printer
from planner.output.progress import ApplyProgress, ProgressView, clock

T0 = 1_800_000_000.0
WEB = "deployment/shop/web"
MIGRATE = "job/shop/migrate"
UNSCHEDULED = (
    "0/2 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"
)
SGR = re.compile(r"\x1b\[[0-9;]*m")


def planned(task: str, at: float = T0) -> events.Planned:
    return events.Planned(time=at, message=task, task=task, action=task.split()[0])


def applying(task: str, obj: str, at: float) -> events.Applying:
    return events.Applying(time=at, message="create", object=obj, task=task, action="create")


def applied(task: str, obj: str, at: float) -> events.Applied:
    return events.Applied(time=at, message="created", object=obj, task=task, action="create")


def waiting(obj: str, at: float, reason: str | None = None) -> events.Waiting:
    message = "waiting until ready" if reason is None else "still waiting until ready: ready 0/2"
    return events.Waiting(
        time=at,
        message=message,
        object=obj,
        task=f"wait-ready {obj}",
        until="ready",
        timeout=300.0,
        reason=reason,
    )


STORY: list[events.Event] = [
    planned(f"create {WEB}"),
    planned(f"wait-ready {WEB}"),
    planned(f"create {MIGRATE}"),
    planned(f"wait-ready {MIGRATE}"),
    applying(f"create {WEB}", WEB, T0),
    applying(f"create {MIGRATE}", MIGRATE, T0),
    applied(f"create {WEB}", WEB, T0 + 1),
    waiting(WEB, T0 + 1),
    applied(f"create {MIGRATE}", MIGRATE, T0 + 2),
    waiting(MIGRATE, T0 + 2),
    waiting(WEB, T0 + 1.5, UNSCHEDULED),
    events.Ready(time=T0 + 8, message="complete 1/1", object=MIGRATE, task=f"wait-ready {MIGRATE}"),
    events.Failed(
        time=T0 + 301,
        message=f"timed out after 5m waiting until ready: {UNSCHEDULED}",
        object=WEB,
        task=f"wait-ready {WEB}",
        reason=UNSCHEDULED,
    ),
]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0:00"), (5.9, "0:05"), (75, "1:15"), (754, "12:34"), (3723, "1:02:03")],
    ids=["nothing yet", "seconds", "minutes", "tens of minutes", "hours"],
)
def test_elapsed_time_reads_like_a_stopwatch(seconds: float, text: str) -> None:
    assert clock(seconds) == text


def test_the_count_is_tasks_finished_of_those_announced_and_a_summary_closes_the_plan() -> None:
    progress = ApplyProgress()
    for event in STORY[:8]:
        progress.observe(event)
    assert progress.prefix(T0 + 1) == "[1/4 0:01]"
    for event in STORY[8:]:
        progress.observe(event)
    assert progress.prefix(T0 + 301) == "[4/4 5:01]"
    progress.observe(planned("wait-ready configmap/shop/next", T0 + 302))
    # a --no-wait wait ends with no event of its own: its plan's Summary counts it
    progress.observe(events.Summary(time=T0 + 302, message="...", done=("wait-ready configmap/shop/next",)))
    assert progress.prefix(T0 + 302) == "[5/5 5:02]"
    progress.observe(events.Skipped(time=T0 + 303, message="not followed", task="watch x", because="y"))
    assert progress.prefix(T0 + 303) == "[5/5 5:03]"


def test_a_plans_summary_closes_only_its_own_tasks_while_another_plan_runs_on() -> None:
    progress = ApplyProgress()
    other = "deployment/cart/api"
    for event in [
        planned(f"create {WEB}"),
        planned(f"wait-ready {WEB}"),
        planned(f"create {other}"),
        planned(f"wait-ready {other}"),
        applied(f"create {WEB}", WEB, T0 + 1),
        applied(f"create {other}", other, T0 + 1),
        waiting(other, T0 + 1, UNSCHEDULED),
        events.Summary(time=T0 + 2, message="...", done=(f"create {WEB}", f"wait-ready {WEB}")),
    ]:
        progress.observe(event)
    shot = progress.snapshot()
    assert (shot.done, shot.total) == (3, 4)
    assert [(wait.object, wait.reason) for wait in shot.waits] == [(other, UNSCHEDULED)]


def test_text_lines_carry_the_count_the_elapsed_time_and_each_reason_a_wait_reports() -> None:
    stream = io.StringIO()
    printer = ApplyPrinter("text", stream)
    for event in STORY:
        printer.emit(event)
    assert stream.getvalue().splitlines() == [
        f"[1/4 0:01] {WEB}: created",
        f"[1/4 0:01] {WEB}: waiting until ready",
        f"[2/4 0:02] {MIGRATE}: created",
        f"[2/4 0:02] {MIGRATE}: waiting until ready",
        f"[2/4 0:01] {WEB}: not ready yet: {UNSCHEDULED}",
        f"[3/4 0:08] {MIGRATE}: ready (complete 1/1)",
        f"[4/4 5:01] {WEB}: failed wait-ready {WEB}: timed out after 5m waiting until ready: {UNSCHEDULED}",
    ]


def test_json_lines_are_the_events_themselves_with_the_reason_field() -> None:
    stream = io.StringIO()
    printer = ApplyPrinter("json", stream)
    printer.emit(waiting(WEB, T0, UNSCHEDULED))
    assert '"reason": "0/2 pods scheduled: ' in stream.getvalue()
    assert not stream.getvalue().startswith("[")


def rendered(progress: ApplyProgress, now: float, *, width: int = 120) -> list[str]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=width)
    console.print(ProgressView(progress, lambda: now))
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


def test_the_live_display_shows_counts_elapsed_writes_in_flight_and_why_each_wait_is_pending() -> None:
    progress = ApplyProgress()
    for event in STORY[:11]:
        progress.observe(event)
    progress.observe(applying("create service/shop/web-svc", "service/shop/web-svc", T0 + 3))
    assert rendered(progress, T0 + 42, width=200) == [
        "2/4 tasks done · 0:42 · 1 write in flight · 2 waits pending",
        f"  {WEB}  0:41  {UNSCHEDULED}",
        f"  {MIGRATE}     0:40  waiting until ready",
    ]


def test_the_live_display_cuts_long_reasons_at_the_terminal_edge_and_counts_the_waits_it_leaves_out() -> None:
    progress = ApplyProgress()
    for index in range(12):
        progress.observe(waiting(f"deployment/shop/w{index:02d}", T0 + index, UNSCHEDULED))
    lines = rendered(progress, T0 + 20, width=72)
    assert lines[0] == "0/0 tasks done · 0:20 · 0 writes in flight · 12 waits pending"
    assert lines[1] == "  deployment/shop/w00  0:20  0/2 pods scheduled: 0/1 nodes are availabl…"
    assert lines[10] == "  deployment/shop/w09  0:11  0/2 pods scheduled: 0/1 nodes are availabl…"
    assert len(lines) == 12  # the headline, ten waits, and the rest counted
    assert lines[-1] == "  … and 2 more waits"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_lines_scroll_above_a_live_display_that_is_gone_after_the_summary() -> None:
    stream = Terminal()
    console = Console(file=stream, force_terminal=True, color_system="standard", width=200)
    printer = LiveApplyPrinter("text", stream, console=console, now=lambda: T0 + 42)
    for event in STORY:
        printer.emit(event)
    printer.emit(events.Summary(time=T0 + 302, message="4 done"))
    printer.close()
    text = stream.getvalue()
    plain = SGR.sub("", text)
    assert f"{WEB}: not ready yet: {UNSCHEDULED}" in plain
    assert "tasks done" in plain  # the live display was drawn …
    assert "\x1b[2K" in text  # … and erased (transient), leaving the lines
    assert SGR.search(text) is not None  # coloured on a terminal


def test_the_live_display_stays_until_the_last_running_plan_is_summarized() -> None:
    stream = Terminal()
    console = Console(file=stream, force_terminal=True, color_system="standard", width=200)
    printer = LiveApplyPrinter("text", stream, console=console, now=lambda: T0 + 5)
    other = "deployment/cart/api"
    for event in [
        planned(f"create {WEB}"),
        planned(f"create {other}"),
        applied(f"create {WEB}", WEB, T0 + 1),
        events.Summary(time=T0 + 2, message="1 done", done=(f"create {WEB}",)),
    ]:
        printer.emit(event)
    shown_after_the_first = printer._live is not None
    printer.emit(applied(f"create {other}", other, T0 + 3))
    printer.emit(events.Summary(time=T0 + 4, message="1 done", done=(f"create {other}",)))
    assert shown_after_the_first
    assert printer._live is None
    printer.close()


def test_no_color_leaves_no_style_at_all_on_a_terminal() -> None:
    stream = Terminal()
    printer = apply_printer("text", no_color=True, stream=stream)
    assert isinstance(printer, LiveApplyPrinter)
    for event in STORY:
        printer.emit(event)
    printer.close()
    assert f"{WEB}: failed wait-ready {WEB}" in stream.getvalue()
    assert SGR.search(stream.getvalue()) is None


def test_pipes_and_json_get_no_live_display() -> None:
    for printer in (apply_printer("text", stream=io.StringIO()), apply_printer("json", stream=Terminal())):
        printer.close()
        assert type(printer) is ApplyPrinter


def test_a_silent_stretch_with_waits_pending_gets_a_reminder_of_how_far_the_apply_got() -> None:
    stream = io.StringIO()
    printer = ApplyPrinter("text", stream, now=lambda: T0 + 95)
    for event in STORY[:11]:
        printer.emit(event)
    for index in range(3):
        printer.emit(waiting(f"deployment/shop/w{index}", T0 + 3 + index))
    printed = len(stream.getvalue().splitlines())

    printer.tick()  # lines were printed since the last tick: nothing to remind of
    assert len(stream.getvalue().splitlines()) == printed
    printer.tick()  # a whole tick without a line
    printer.tick()  # and another: reminded again
    reminder = f"[2/4 1:35] still waiting for 5: {WEB}, {MIGRATE}, deployment/shop/w0, … and 2 more"
    assert stream.getvalue().splitlines()[printed:] == [reminder, reminder]


def test_no_reminder_when_no_wait_is_pending_or_for_json() -> None:
    stream = io.StringIO()
    printer = ApplyPrinter("text", stream)
    for event in STORY:
        printer.emit(event)
    printer.tick()
    printer.tick()
    assert printer.reminder(T0 + 400) is None
    assert "still waiting" not in stream.getvalue()
    assert ApplyPrinter("json", io.StringIO(), remind_every=0.01)._reminder is None


def test_a_plain_printer_reminds_by_itself_until_it_is_closed() -> None:
    stream = io.StringIO()
    printer = ApplyPrinter("text", stream, now=lambda: T0 + 42, remind_every=0.01)
    printer.emit(planned(f"wait-ready {WEB}"))
    printer.emit(waiting(WEB, T0 + 1))
    deadline = time.monotonic() + 30
    while "still waiting" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    printer.close()
    assert f"[0/1 0:42] still waiting for 1: {WEB}" in stream.getvalue().splitlines()
    assert printer._reminder is not None and not printer._reminder.is_alive()
