"""Temporary GnuPG keyrings for tests: a GNUPGHOME of its own (never the user's), removed afterwards
with the daemons gpg started in it."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def gpg(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    """gpg's output, run in batch mode with `env`; the test fails when gpg does."""
    done = subprocess.run(
        ["gpg", "--batch", *args], env=env, input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def temporary_keyring(*keys: Path, at: Path | None = None) -> Iterator[dict[str, str]]:
    """A new keyring holding the armored keys `keys` (in the new directory `at`, else a temporary
    one): the environment that selects it."""
    home = at or Path(tempfile.mkdtemp(prefix="gpg-"))  # short: gpg-agent's socket path has a length limit
    env = {"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"}
    try:
        home.mkdir(mode=0o700, exist_ok=True)
        home.chmod(0o700)
        for key in keys:
            gpg(env, "--import", str(key))
        yield env
    finally:
        subprocess.run(["gpgconf", "--kill", "all"], env=env, capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)
