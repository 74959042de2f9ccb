"""The lists the embedded cluster must print exactly (`tests/golden/apigroups/`, compared by
tests/conformance/test_kubectl_api_resources.py) are what kubectl prints against a real v1.28.7
server: `api-versions` and `api-resources` against the real control plane, less the groups that
other tests of the shared plane add with CustomResourceDefinitions (whose longer names may widen the
columns: rows are compared cell by cell)."""

from __future__ import annotations

import re

from tests.e2e.conftest import Runner
from tests.paths import REPO

GOLDEN = REPO / "tests" / "golden" / "apigroups"
API_VERSION = re.compile(r"^(?:([a-z0-9.-]+)/)?v\d+\w*$")


def _recorded(name: str) -> list[str]:
    return (GOLDEN / name).read_text().splitlines()


def _group(line: str) -> str | None:
    """The group of an `api-resources` row (its APIVERSION column), None for the header."""
    for token in line.split():
        found = API_VERSION.match(token)
        if found:
            return found.group(1) or ""
    return None


def test_kubectl_lists_the_recorded_versions_and_resources(kubectl: Runner) -> None:
    recorded_versions = _recorded("api-versions.txt")
    versions = kubectl("api-versions")
    assert versions.returncode == 0, versions.stderr
    groups = {v.rpartition("/")[0] for v in recorded_versions}
    built_in = [v for v in versions.stdout.splitlines() if v.rpartition("/")[0] in groups]
    assert built_in == recorded_versions
    for name, args in (("api-resources.txt", ()), ("api-resources-wide.txt", ("-o", "wide"))):
        listed = kubectl("api-resources", *args)
        assert listed.returncode == 0, listed.stderr
        rows = [line.split() for line in listed.stdout.splitlines() if _group(line) in groups | {None}]
        assert rows == [line.split() for line in _recorded(name)]
