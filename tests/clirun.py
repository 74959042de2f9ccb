"""Run planner's command line in a fork of the test process, as `python -m planner ARGS` would.

Each `planner` command an end-to-end test runs would otherwise start a fresh interpreter and import the
kubernetes client, jsonschema, networkx and rich again: about a second of CPU per command, hundreds of
commands per worker. Here the test process imports them once, and each command runs in a forked child
with its own arguments, working directory, environment, standard streams, signal dispositions and exit
status — a process of its own, as a subprocess is, started without the imports. Tests that signal or
kill planner, or run it in the background, start a real subprocess instead.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pkgutil
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

# The packages whose modules the commands import lazily: loaded in the parent before the first fork,
# so no child pays for them.
_PRELOAD = ("planner.cli", "planner.app", "planner.output")
_preloaded = False


def _preload() -> None:
    global _preloaded
    if _preloaded:
        return
    for name in _PRELOAD:
        package = importlib.import_module(name)
        for module in pkgutil.iter_modules(package.__path__, f"{name}."):
            importlib.import_module(module.name)
    _preloaded = True


def run(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """`planner ARGS` in a forked child: its output, error output and exit status, as subprocess.run
    with `capture_output=True, text=True` gives them (a child killed by a signal has `-signal`)."""
    _preload()
    sys.stdout.flush()
    sys.stderr.flush()
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(stdin_w)
        os.close(out_r)
        os.close(err_r)
        _child(list(args), cwd, dict(env), stdin_r, out_w, err_w)
    for fd in (stdin_r, out_w, err_w):
        os.close(fd)
    if input:
        os.write(stdin_w, input.encode())  # small inputs only: a pipe holds 64 KiB
    os.close(stdin_w)
    stdout, stderr = _read_until_closed(pid, out_r, err_r, timeout, args)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess(["planner", *args], code, stdout.decode(), stderr.decode())


def _read_until_closed(
    pid: int, out_r: int, err_r: int, timeout: float | None, args: Sequence[str]
) -> tuple[bytes, bytes]:
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    deadline = None if timeout is None else time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = selector.select(wait)
            if not ready and deadline is not None and time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(["planner", *args], timeout or 0.0)
            for key, _ in ready:
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _child(args: list[str], cwd: Path, env: dict[str, str], stdin: int, out: int, err: int) -> NoReturn:
    code: int = 1
    try:
        for target, fd in ((0, stdin), (1, out), (2, err)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        # The interpreter's own dispositions, not the ones pytest or the test process installed.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM, signal.SIGUSR1):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["planner", *args]
        from planner.cli import main

        main(args)
        code = 0
    except SystemExit as done:
        code = _exit_code(done.code)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what the interpreter does with `sys.exit("message")`
    return 1
