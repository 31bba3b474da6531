"""Scripts run in fresh interpreters, for what a new process does (the caches the project keeps on disk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def second_process(script: str) -> Any:
    """The JSON ``script`` prints last, in the second of two fresh interpreters run one after the other with
    the project on the path: the first fills the project's caches, the second shows what they spare."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        printed.append(json.loads(done.stdout.splitlines()[-1]))
    return printed[1]
