"""Running a command: where exit codes are chosen (their values are `planner.errors.ExitCode`'s) and
signals handled.

Exit codes are a contract (docs/design.md): 0 success, 1 any error (usage errors too: click's 2 is
remapped), 2 changes present (`plan --detailed-exitcode`, `reconcile --check`), 3 lock held, 4 workload
not found. Errors are text on stderr, followed by a JSON `Error` line when the command was given
`-o json`. The commands that write for a plan turn SIGTERM into the Ctrl-C path, so a stopped CI job
or systemd unit releases the plan's run lock on its way out as an interrupted one does.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import NoReturn, Protocol

import click

from planner.cli.options import Invocation
from planner.errors import ExitCode, PlannerError

OK, FAILED, CHANGES, LOCKED, NOT_FOUND = (
    ExitCode.OK,
    ExitCode.FAILED,
    ExitCode.CHANGES,
    ExitCode.LOCKED,
    ExitCode.NOT_FOUND,
)

# The young generation is collected every this many net allocations of containers (Python's default is
# 700). A command's work is trees of dicts that no cycle holds (reference counts free them), so the
# default's thousands of young collections, and the full ones they trigger, found nothing: 15% of a
# 1,000-workload plan's CPU. The cycles there are are still collected.
COLLECTOR_THRESHOLDS = (50_000, 10, 10)


def exit_with(code: int) -> NoReturn:
    sys.exit(code)


def fail_unless(ok: bool) -> None:
    """Exit 1 when the command's result says it failed."""
    if not ok:
        sys.exit(FAILED)


def notice(message: str) -> None:
    """A sentence about the run lock (waiting for it, taking it over), for the person on stderr."""
    click.echo(message, err=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM takes Ctrl-C's path while a command writes: no task starts, locks are released."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Closable(Protocol):
    def close(self) -> None: ...


@contextlib.contextmanager
def writing(printer: _Closable) -> Iterator[None]:
    """While a command writes for plans: SIGTERM takes Ctrl-C's path, and its printer is closed at the
    end whatever happens."""
    with contextlib.closing(printer), terminate_as_interrupt():
        yield


def until_interrupted(follow: Callable[[], object]) -> None:
    """Run a command that follows the cluster until Ctrl-C, which ends it quietly with exit 0."""
    with contextlib.suppress(KeyboardInterrupt):
        follow()


def stop_on_signals(stop: Callable[[], None]) -> None:
    """SIGTERM and SIGINT ask a long-running command to stop cleanly (the controller)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop())


def _output_in(args: Sequence[str], invocation: Invocation) -> str:
    """The `-o` format of a command whose arguments click refused before it read that option (an
    unknown flag is refused while parsing, before any option's callback runs)."""
    for index, arg in enumerate(args):
        if arg in ("-o", "--output") and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(("--output=", "-o")) and arg not in ("-o", "--output"):
            return arg.removeprefix("--output=").removeprefix("-o").removeprefix("=")
    return invocation.output


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (`planner`, `python -m planner`): runs the command and maps every failure to its
    exit code."""
    from planner.cli.root import cli

    # Everything imported so far lives as long as the process: out of the collector's full passes, which
    # otherwise walk it again each time a large plan's objects pile up (0.3 s of a 1,000-workload apply).
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    args = list(argv) if argv is not None else sys.argv[1:]
    invocation = Invocation()
    try:
        code = cli.main(args=args, standalone_mode=False, obj=invocation)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.exceptions.Abort:
        _report_failure(["aborted"], "aborted", invocation.output)
        sys.exit(FAILED)
    except click.ClickException as usage:
        usage.show()
        _report_failure([], usage.format_message(), _output_in(args, invocation))
        sys.exit(FAILED)
    except PlannerError as error:
        from planner import output

        sys.exit(output.report_error(error, invocation.output))
    sys.exit(code if isinstance(code, int) else OK)


def _report_failure(lines: list[str], message: str, output_format: str) -> None:
    from planner import output

    output.report_failure(lines, message, FAILED, output_format)
