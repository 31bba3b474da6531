"""The wheel as a user's environment gets it: which top-level names it installs, the specs it carries
as package data, the command it declares, and that it builds without setuptools deprecation warnings.

The wheel is built (``pip wheel``, as a user or CI would) from a copy of the checkout without what
``.gitignore`` names, so that an earlier build's leftovers in ``build/`` cannot reach it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ignored() -> list[str]:
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [
        ".git",
        *(line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")),
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel's path and what pip printed while building it."""
    source = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT, source, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_ignored()))
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("placement_sim-*.whl")
    return wheel, result.stdout + result.stderr


def test_the_wheel_installs_no_generic_top_level_name_but_controller_and_protocol(built):
    wheel, _ = built
    names = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {n for n in names if not n.endswith(".dist-info")} == {"controller", "placement_sim", "protocol"}


def test_the_specs_are_package_data_of_protocol(built):
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            Path(name).name: archive.read(name)
            for name in archive.namelist()
            if name.startswith("protocol/schemas/")
        }
    assert shipped == {path.name: path.read_bytes() for path in (ROOT / "schemas").glob("*.json")}


def test_the_command_is_placement_sim_cli_main(built):
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(entry_points).decode()
    assert "placement-sim = placement_sim.cli.main:main" in text.splitlines()


def test_a_users_project_gets_the_pytest_plugin_and_what_it_needs_with_the_pytest_extra(built):
    """docs/integration-tests.md: ``pip install 'placement-sim[pytest]'`` in a user's own project."""
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:") and 'extra == "pytest"' in line
        ]
        plugins = archive.read(entry_points).decode().split("[pytest11]")[1].split("[")[0].split()
    assert plugins == ["placement_sim", "=", "controller.pytest_plugin"]
    assert sorted(re.match(r"[\w.-]+", r).group() for r in requires) == [
        "placement-sim",  # [security]: cryptography, for the TLS fixtures
        "pytest",
        "pytest-asyncio",
    ]


def test_the_build_prints_no_deprecation_warning(built):
    _, output = built
    assert [line for line in output.splitlines() if "Deprecat" in line or "BuildBackendWarning" in line] == []


def test_an_installed_wheel_reads_its_own_specs_and_loads_the_command(built, tmp_path):
    """The wheel unpacked (a pure-Python wheel installs as its files) ahead of the checkout on sys.path:
    protocol finds the specs inside itself, and the command's modules import."""
    wheel, _ = built
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import protocol, placement_sim.cli.main;"
        "from protocol.resources import project_schemas;"
        "print(protocol.__file__); print(project_schemas()); print(len(protocol.load_schemas()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    module, folder, count = result.stdout.splitlines()
    assert module == str(site / "protocol" / "__init__.py")
    assert folder == str(site / "protocol" / "schemas")
    assert int(count) == len(list((ROOT / "schemas").glob("*.json"))) - 1  # all but errors.json
