"""Age identities, from where sops looks for them (age/keysource.go), or from a Kubernetes Secret.

The command line reads them as sops does: every identity in `SOPS_AGE_KEY` (several per line allowed),
in the file `SOPS_AGE_KEY_FILE` names, and in `sops/age/keys.txt` under the user configuration
directory (`$XDG_CONFIG_HOME`, else `~/.config`; `~/Library/Application Support` on macOS unless
`XDG_CONFIG_HOME` is set; `%AppData%` on Windows), all of them together. Lines starting with `#` and
blank lines are skipped. `SOPS_AGE_KEY_CMD`, SSH keys and age plugins are not read. Identities are read
only when a file needs them (`planner.sops.keys.lazily`), so a plan without encrypted values never touches
a key file.
A line that is no identity is reported by its number, never quoted: it may be a key.
`planner.sops.keys` joins them with the PGP keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pyrage

KEY_ENV = "SOPS_AGE_KEY"
KEY_FILE_ENV = "SOPS_AGE_KEY_FILE"
USER_CONFIG_PATH = Path("sops", "age", "keys.txt")
IDENTITY_PREFIX = "AGE-SECRET-KEY-1"


Identities = list[pyrage.x25519.Identity]


def identities_in(text: str, source: str, *, several_per_line: bool) -> tuple[Identities, list[str]]:
    """The identities in `text` (an age key file), and a problem per line that is none."""
    found, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for word in line.split() if several_per_line else [line]:
            identity = _identity(word)
            if identity is None:
                problems.append(
                    f"line {number} of {source} is not an age identity ({IDENTITY_PREFIX}…; SSH keys "
                    "and plugins are not read)"
                )
            else:
                found.append(identity)
    return found, problems


def _identity(word: str) -> pyrage.x25519.Identity | None:
    if not word.startswith(IDENTITY_PREFIX):
        return None
    try:
        return pyrage.x25519.Identity.from_str(word)
    except Exception:  # pyrage raises its own IdentityError or a ValueError, by version
        return None


def age_in_environment(environ: Mapping[str, str], platform: str) -> tuple[Identities, list[str], list[str]]:
    """Every identity of every place sops reads, all together (sops reads them all, too), where they
    were looked for, and what could not be read."""
    identities: Identities = []
    problems: list[str] = []
    looked_in: list[str] = []
    if KEY_ENV in environ:
        found, wrong = identities_in(environ[KEY_ENV], KEY_ENV, several_per_line=True)
        identities += found
        problems += wrong
    looked_in.append(KEY_ENV if KEY_ENV in environ else f"{KEY_ENV} (unset)")
    files = []
    if KEY_FILE_ENV in environ:
        files.append((f"{KEY_FILE_ENV} ({environ[KEY_FILE_ENV]})", Path(environ[KEY_FILE_ENV]), True))
    else:
        looked_in.append(f"{KEY_FILE_ENV} (unset)")
    default = user_config_dir(environ, platform)
    if default is not None:
        files.append((str(default / USER_CONFIG_PATH), default / USER_CONFIG_PATH, False))
    for name, path, required in files:
        found, wrong = _from_file(name, path, required=required)
        looked_in.append(name if required or path.exists() else f"{name} (no such file)")
        identities += found
        problems += wrong
    return identities, looked_in, problems


def _from_file(name: str, path: Path, *, required: bool) -> tuple[Identities, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], [f"{name}: no such file"] if required else []
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        return [], [f"{name}: cannot read it: {reason}"]
    return identities_in(text, name, several_per_line=False)


def user_config_dir(environ: Mapping[str, str], platform: str) -> Path | None:
    """Go's `os.UserConfigDir()` as sops calls it (XDG_CONFIG_HOME first on macOS too)."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    home = environ.get("HOME", "")
    if platform == "win32":
        appdata = environ.get("AppData") or environ.get("APPDATA")
        return Path(appdata) if appdata else None
    if xdg:
        return Path(xdg)
    if not home:
        return None
    return Path(home, "Library", "Application Support") if platform == "darwin" else Path(home, ".config")


def age_in_texts(values: Iterable[tuple[str, str]], source: str) -> tuple[Identities, list[str]]:
    """Identities from named texts (`("sops.agekey", text)`, a Secret's keys), as `source` names them,
    and a problem per line that is none."""
    identities: Identities = []
    problems: list[str] = []
    for name, text in values:
        found, wrong = identities_in(text, f"{source} key {name}", several_per_line=False)
        identities += found
        problems += wrong
    return identities, problems
