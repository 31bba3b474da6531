"""The Makefile's targets that decide what to run: ``make test-newest`` runs the suite on the newest
Python found only when that is not the one ``make test`` runs on (nothing is installed or run otherwise)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_test_newest_says_so_and_runs_nothing_when_the_newest_python_is_the_tested_one(tmp_path) -> None:
    venv = tmp_path / "newest"
    result = _make(
        "test-newest",
        f"NEWEST_PYTHON={sys.executable}",
        f"TESTED_PYTHON={sys.executable}",
        f"NEWEST_VENV={venv}",
    )
    version = f"{sys.version.split()[0]} {sys.implementation.name}"
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"test-newest: the newest Python found ({sys.executable}, {version}) is the one `make test` runs on: "
        "nothing more to run"
    )
    assert not venv.exists()


def test_test_newest_runs_the_suite_on_a_newer_python(tmp_path) -> None:
    """Another version: the venv is made and the suite run on it (here a stand-in records the calls)."""
    calls = tmp_path / "calls"
    newer = tmp_path / "python-newer"
    newer.write_text("#!/bin/sh\necho '9.99.0 cpython'\n")
    newer.chmod(0o755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stand_in = venv / "bin" / "python"
    stand_in.write_text(f'#!/bin/sh\necho "python $*" >> {calls}\n')
    stand_in.chmod(0o755)
    make = tmp_path / "make"
    make.write_text(f'#!/bin/sh\necho "make $*" >> {calls}\n')
    make.chmod(0o755)
    result = _make(
        "test-newest",
        f"NEWEST_PYTHON={newer}",
        f"TESTED_PYTHON={sys.executable}",
        f"NEWEST_VENV={venv}",
        f"MAKE={make}",
        "TEST_WORKERS=2",
    )
    assert result.returncode == 0, result.stderr
    assert calls.read_text().splitlines() == [
        f"make --no-print-directory system-deps {venv}/.installed",
        "python --version",
        "python -m pytest -q -n 2 --dist loadgroup -m not alone --ignore=tests/clients --ignore=tests/differential",
        "python -m pytest -q -m alone --ignore=tests/clients --ignore=tests/differential",
    ]
