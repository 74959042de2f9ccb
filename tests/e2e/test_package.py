"""The distribution as a user gets it: a wheel built from the checkout carries the licence and the
package index's description, and installed into a fresh virtual environment its `planner version`
prints the version from the package metadata.

The fresh environment takes the wheel's dependencies from the development environment (a `.pth` line),
not from an index: installing them is what `pip install` does and takes minutes, not what is under test.
The full check, dependencies installed by pip into an empty venv, is README.md's "Releasing"; it was
run by hand for this version.
"""

from __future__ import annotations

import email
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.paths import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    (built,) = out.glob("kube_planner-*.whl")
    return built


def test_the_wheel_carries_the_licence_and_a_description_that_starts_with_what_planner_is(
    wheel: Path,
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = email.message_from_string(archive.read(metadata_name).decode())
        licence = next(name for name in names if name.endswith(".dist-info/licenses/LICENSE"))
        text = archive.read(licence).decode()

    assert text == (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Name"] == "kube-planner"
    assert "Topic :: System :: Clustering" in metadata.get_all("Classifier")
    description = metadata.get_payload()
    assert description.startswith("# kube-planner\n\n**planner** is a Nix-style declarative reconciler")
    assert "pip install kube-planner" in description
    assert "make demo" not in description


def test_the_installed_wheel_reports_its_version_from_the_package_metadata(
    wheel: Path, tmp_path: Path
) -> None:
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=False)
    python = environment / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)  # what pip does with a pure-Python wheel, less the RECORD bookkeeping
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    done = subprocess.run(
        [python, "-m", "planner", "version", "-o", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    located = subprocess.run(
        [python, "-c", "import planner; print(planner.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stderr
    version = email.message_from_string(
        zipfile.ZipFile(wheel)
        .read(f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info/METADATA")
        .decode()
    )["Version"]
    assert done.stdout == f'{{"version": "{version}"}}\n'
    assert located.stdout.startswith(str(site))
