"""The Java client programs of harness/java/placementsim/clients/, run from a test.

A program writes events as JSON lines on stdout (``{"event": "ack", ...}``) and reads the test's commands
from stdin. :class:`JavaProgram` reads its events in a thread of its own (so a chatty program never blocks
on a full pipe), keeps every one, and lets the test wait, with a timeout, for the next of a kind.
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from harness.jvm import harness_classes, java_command

__all__ = ["JavaProgram", "JavaProgramError"]

PACKAGE = "placementsim.clients"


class JavaProgramError(AssertionError):
    """The program failed, ended early, or an awaited event did not come in time; its stderr is in the message."""


class JavaProgram:
    """One run of a client program (``main``: a class of :data:`PACKAGE`); a context manager that kills it."""

    def __init__(self, main: str, args: Sequence[str], heap: str = "384m") -> None:
        self.main = main
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self._process = subprocess.Popen(
            java_command(f"{PACKAGE}.{main}", args, heap=heap, extra_classpath=[harness_classes()]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        #: Every event so far, in order.
        self.events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"java-{main}", daemon=True)
        self._reader.start()

    def __enter__(self) -> JavaProgram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            line = line.strip()
            if line.startswith("{"):
                event = json.loads(line)
                self.events.append(event)
                self._queue.put(event)
        self._queue.put(None)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()

    def _problem(self, what: str) -> JavaProgramError:
        failed = [e for e in self.events if e["event"] == "failed"]
        tail = "\n".join(self.stderr().splitlines()[-40:])
        return JavaProgramError(
            f"{self.main}: {what}; failures: {failed}\n--- stderr (last lines) ---\n{tail}"
        )

    def expect(self, event: str, timeout: float) -> dict[str, Any]:
        """The next event named ``event`` (the others are kept in :attr:`events`)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._problem(f"no {event!r} event within {timeout:g} s")
            try:
                got = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if got is None:
                raise self._problem(f"ended (exit status {self._process.wait(10)}) before a {event!r} event")
            if got["event"] == "failed":
                raise self._problem("failed")
            if got["event"] == event:
                return got

    def send(self, command: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()

    def finish(self, timeout: float) -> list[dict[str, Any]]:
        """Waits for the program's ``exit`` event and its end; every event."""
        self.expect("exit", timeout)
        status = self._process.wait(timeout)
        if status != 0:
            raise self._problem(f"exit status {status}")
        return self.events

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event]

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait(10)
        self._reader.join(10)
        self._stderr.close()
