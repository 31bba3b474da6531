"""docs/placers.md's complete plugin, exactly as printed there, passes check-placer and serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from tests.support.docs import find_block

ROOT = Path(__file__).parents[2]


def readme_plugin() -> str:
    return find_block("# my_placer.py")


def test_the_readme_plugin_passes_check_placer_as_written(tmp_path: Path) -> None:
    (tmp_path / "my_placer.py").write_text(readme_plugin())
    result = subprocess.run(
        [sys.executable, "-m", "placement_sim.cli.main", "check-placer", "my_placer.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("my_placer.py (my_placer.py:RoundRobinPlacer): passed")


def test_the_readme_plugin_places_what_its_docstring_says(tmp_path: Path) -> None:
    path = tmp_path / "my_placer.py"
    path.write_text(readme_plugin())
    brokers = [(0, "a"), (1, "b"), (2, "c"), (3, "a", True)]
    with ServerThread.start(placer=f"{path}:RoundRobinPlacer", brokers=brokers) as server:
        with BlockingClient.connect(server.bootstrap) as client:
            # Leaders 0, 1, 2 in turn; followers the next brokers, the fenced 3 among them.
            assert client.create_replica_placement(4, 3) == [[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 1, 2]]
