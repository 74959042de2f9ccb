"""Shared pytest setup. Add fixtures and profiles here; never remove another part's."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import realplane

TESTS = Path(__file__).parent
# The folder says the speed: unit/ is pure and fast, e2e/ starts embedded clusters, conformance/ runs
# real kubectl against one, real/ runs the CLI against a real control plane. Each test gets its folder's marker, so `-m unit` and `tests/unit` agree.
SPEED_MARKERS = {
    "unit": pytest.mark.unit,
    "e2e": pytest.mark.e2e,
    "conformance": pytest.mark.conformance,
    "real": pytest.mark.real,
}

# Hypothesis profiles: `dev` (the default, for `make unit` while editing) runs few random examples so the
# unit folder stays well under a minute; `ci` (CI sets HYPOTHESIS_PROFILE=ci) is deterministic and runs
# more. Neither times examples: on a loaded 2-core machine generation is slow, which says nothing of the
# code.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, max_examples=100, **_UNTIMED)
settings.register_profile("dev", max_examples=25, **_UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

HEADER = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata:\n  name: shop\n"


@pytest.fixture
def write_plan(tmp_path: Path) -> Callable[..., Path]:
    """Write a plan file under `<tmp>/plans/` and return its path.

    With `header=True` (the default) the text follows a four-line header (apiVersion, kind, metadata,
    name: shop), so the body's first line is line 5 of the file.
    """
    directory = tmp_path / "plans"
    directory.mkdir(exist_ok=True)

    def write(text: str, *, name: str = "plan.yaml", header: bool = True) -> Path:
        path = directory / name
        path.write_text((HEADER if header else "") + text, encoding="utf-8")
        return path

    return write


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        item.add_marker(SPEED_MARKERS[folder])


def pytest_configure(config: pytest.Config) -> None:
    realplane.configure(config)  # the real tier's control plane starts while the other tiers run


def pytest_unconfigure(config: pytest.Config) -> None:
    realplane.unconfigure()
