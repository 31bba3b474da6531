"""The reference harness's Go side: franz-go programs (``harness/go/``, one Go module) that the Makefile
builds into ``.cache/reference/go/bin`` (``make reference``), and running one driven by a test.

A driven program speaks JSON lines on its standard output: ``{"wait": NAME, ...}`` asks the driver to act
on the cluster (crash a broker) and waits for one line on its standard input; ``{"result": {...}}`` is
its last line; ``{"fatal": MESSAGE}`` means it gave up (it then exits 1).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.jvm import CACHE, ROOT, HarnessMissing

#: The Go module of the harness.
MODULE = ROOT / "harness" / "go"
#: Its build: binaries in bin/, the module cache in mod/ and the build cache in build/.
GO_CACHE = CACHE / "go"
GO_BIN = GO_CACHE / "bin"

__all__ = ["GO_BIN", "GO_CACHE", "MODULE", "DrivenRunError", "binary", "run_driven"]


class DrivenRunError(RuntimeError):
    """A driven program gave up, died, or outlived its bound; ``output`` holds what it printed."""

    def __init__(self, message: str, output: Sequence[str]) -> None:
        tail = "\n".join(output[-20:])
        super().__init__(f"{message}\n--- its last output ---\n{tail}")
        self.output = list(output)


def binary(name: str) -> Path:
    """The built program ``name`` (a folder of ``harness/go/cmd``)."""
    path = GO_BIN / name
    if not path.exists():
        raise HarnessMissing(f"{path} is not built: run `make reference` (it builds harness/go)")
    return path


Handler = Callable[[dict[str, Any]], object]


def run_driven(
    name: str,
    args: Sequence[str],
    on_wait: Mapping[str, Handler],
    *,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Runs program ``name`` with ``args`` to its end; each ``wait`` line it prints is handed to
    ``on_wait[its name]`` (the line's fields as a dict), after which the program is told to go on.
    Returns the ``result`` object. Raises :class:`DrivenRunError` on ``fatal``, an exit without a result,
    or when ``timeout`` seconds pass (the program is then killed)."""
    command = [str(binary(name)), *args]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, name=f"{name}-stdout", daemon=True)
    reader.start()
    output: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DrivenRunError(f"{name} {' '.join(args)}: still running after {timeout:g} s", output)
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                code = proc.wait(10)
                raise DrivenRunError(f"{name} {' '.join(args)}: exited {code} without a result", output)
            output.append(line.rstrip("\n"))
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue  # a log line of the program's own (stderr is merged)
            if not isinstance(message, dict):
                continue
            if "fatal" in message:
                raise DrivenRunError(f"{name} {' '.join(args)}: {message['fatal']}", output)
            if "result" in message:
                proc.wait(10)
                result: dict[str, Any] = message["result"]
                return result
            if "wait" in message:
                handler = on_wait.get(message["wait"])
                if handler is None:
                    raise DrivenRunError(f"{name}: no handler for wait {message['wait']!r}", output)
                handler(message)
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        reader.join(5)
