"""``placement-sim serve`` in a process of its own, as a user runs it: for measuring the server alone
(a server thread in the test's process would share the interpreter with the test's clients)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).parents[2]


@contextmanager
def served(properties: Mapping[str, str] | None = None, *args: str) -> Iterator[str]:
    """Starts the server on an ephemeral 127.0.0.1 port; yields its bootstrap address; stops it."""
    with served_process(properties, *args) as (bootstrap, _):
        yield bootstrap


@contextmanager
def served_process(
    properties: Mapping[str, str] | None = None, *args: str
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """:func:`served`, yielding the server's process too (to read its memory, say)."""
    sets = [f"--set={k}={v}" for k, v in (properties or {}).items()]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement_sim.cli.main",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "1",
            *sets,
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        bootstrap = None
        for line in proc.stdout:
            if line.startswith("listening on "):
                bootstrap = line.split()[2]  # listening on HOST:PORT (PROTOCOL)
                break
        if bootstrap is None:
            raise AssertionError(f"the server did not start: {proc.stderr.read() if proc.stderr else ''}")
        yield bootstrap, proc
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def peak_rss(proc: subprocess.Popen[str]) -> int:
    """The process's peak resident set size so far, in bytes (Linux: VmHWM)."""
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")
