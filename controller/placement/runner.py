"""Runs the configured placer, in the server's process or isolated in a worker process.

Built-in placers are trusted and fast: they run inline on the event loop. A plugin runs by default in
its own worker process (``simulator.placer.isolation=auto``), so that one that blocks, spins, sleeps
past ``timeoutMs`` or crashes never stalls the server: at the timeout the worker is killed and a fresh
one is started (loaded and configured again) for later placements. Calls reach the placer one at a
time and in arrival order, so stateful placers see them in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import pickle
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.placement import worker
from controller.placement.api import ClusterView, PlacementSpec, ReplicaPlacer
from controller.placement.loader import BUILTIN_PLACERS, PlacerLoadError, load_placer, placer_label

log = logging.getLogger(__name__)

__all__ = ["InlineRunner", "PlacerOutcome", "PlacerTimedOut", "ProcessRunner", "start_runner"]

_LEN = struct.Struct(">I")


@dataclass(frozen=True)
class PlacerOutcome:
    """What one call of the placer gave.

    kind: ``ok`` (replicas set, contents not yet validated), ``none`` (deferred), ``raised`` (exc_kind is
    ``invalid_rf``, ``placement`` or ``unexpected``; exc_type the exception's class name) or ``bad``
    (not replica lists; message says why).
    """

    kind: str
    replicas: list[list[Any]] | None = None
    exc_kind: str | None = None
    label: str = ""
    message: str = ""
    exc_type: str = ""

    @classmethod
    def from_reply(cls, reply: tuple[Any, ...], label: str) -> PlacerOutcome:
        if reply[0] == "ok":
            return cls("ok", replicas=reply[1], label=label)
        if reply[0] == "none":
            return cls("none", label=label)
        if reply[0] == "raised":
            return cls("raised", exc_kind=reply[1], label=reply[2], message=reply[3], exc_type=reply[4])
        return cls("bad", label=label, message=reply[1])


class PlacerTimedOut(Exception):
    """The placer was still running when the request's timeout expired."""


class InlineRunner:
    """Calls the placer directly (built-ins): no isolation, no overhead."""

    isolation = "inline"

    def __init__(self, placer: ReplicaPlacer) -> None:
        self.placer = placer
        self.label = placer_label(placer)

    async def place(self, spec: PlacementSpec, cluster: ClusterView, timeout: float) -> PlacerOutcome:
        try:
            result = self.placer.place(spec, cluster)
            if inspect.isawaitable(result):
                try:
                    async with asyncio.timeout(timeout):
                        result = await result
                except TimeoutError:
                    raise PlacerTimedOut() from None
        except PlacerTimedOut:
            raise
        except Exception as exc:  # noqa: BLE001 - a placer's failure becomes an error response
            return PlacerOutcome.from_reply(worker.classify_exception(exc, self.label), self.label)
        return PlacerOutcome.from_reply(worker.classify_result(result, describe_opaque=False), self.label)

    async def close(self) -> None:
        close = getattr(self.placer, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.exception("placer %s: close() failed", self.label)


class ProcessRunner:
    """Hosts the placer in a worker process; kills and restarts it when a call overruns its timeout."""

    isolation = "process"

    def __init__(self, name: str, configs: Mapping[str, str], start_timeout: float = 30.0) -> None:
        self.name = name
        self.configs = dict(configs)
        self.start_timeout = start_timeout
        self.label = name
        self.restarts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        # Killed workers still being reaped (their pipes and exit status), awaited by close().
        self._reaping: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        """Starts the worker and loads the placer; PlacerLoadError if it cannot be loaded."""
        path = [p for p in sys.path if p]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "controller.placement.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        )
        assert proc.stdin is not None
        proc.stdin.write(_frame(("load", self.name, self.configs, path)))
        try:
            async with asyncio.timeout(self.start_timeout):
                reply = await _read(proc)
        except TimeoutError:
            await _kill_and_reap(proc)
            raise PlacerLoadError(
                f"placer {self.name!r}: worker did not start within {self.start_timeout:g}s"
            ) from None
        if reply is None:
            code = await proc.wait()
            raise PlacerLoadError(f"placer {self.name!r}: worker exited with code {code} while loading")
        if reply[0] != "ready":
            await _kill_and_reap(proc)
            raise PlacerLoadError(reply[3])
        self.label = reply[1]
        self._proc = proc
        log.info("placer %s runs in worker process %d", self.label, proc.pid)

    async def _ensure_started(self) -> asyncio.subprocess.Process:
        if self._proc is not None and self._proc.returncode is None:
            return self._proc
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self.start())
        await asyncio.shield(self._starting)
        assert self._proc is not None
        return self._proc

    def _discard(self, proc: asyncio.subprocess.Process) -> None:
        """Kills a worker that cannot be trusted any more and starts a fresh one in the background."""
        reaping = asyncio.ensure_future(_kill_and_reap(proc))
        self._reaping.add(reaping)
        reaping.add_done_callback(self._reaping.discard)
        self.restarts += 1
        self._proc = None
        self._starting = asyncio.ensure_future(self.start())
        self._starting.add_done_callback(_log_start_failure)

    async def place(self, spec: PlacementSpec, cluster: ClusterView, timeout: float) -> PlacerOutcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                await self._lock.acquire()
        except TimeoutError:
            raise PlacerTimedOut() from None
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    proc = await self._ensure_started()
            except TimeoutError:
                raise PlacerTimedOut() from None
            assert proc.stdin is not None
            # The view's read-only mapping does not pickle; the worker gets its own plain copy.
            sendable = ClusterView(cluster.brokers, dict(cluster.assignments))
            proc.stdin.write(_frame(("place", spec, sendable)))
            try:
                async with asyncio.timeout_at(deadline):
                    reply = await _read(proc)
            except TimeoutError:
                log.warning("placer %s overran its timeout; restarting its worker process", self.label)
                self._discard(proc)
                raise PlacerTimedOut() from None
            except BaseException:
                # The caller went away mid-call (its client disconnected): the reply would be read by the
                # next call, so this worker cannot be reused.
                self._discard(proc)
                raise
            if reply is None:
                code = await proc.wait()
                log.warning("placer %s: worker process exited with code %s; restarting it", self.label, code)
                self._discard(proc)
                return PlacerOutcome(
                    "raised",
                    exc_kind="unexpected",
                    label=self.label,
                    message=f"worker process exited with code {code}",
                    exc_type="WorkerExited",
                )
            return PlacerOutcome.from_reply(reply, self.label)
        finally:
            self._lock.release()

    async def close(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(BaseException):
                await self._starting
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        assert proc.stdin is not None
        try:
            proc.stdin.write(_frame(("close",)))
            proc.stdin.close()
            async with asyncio.timeout(5):
                await proc.wait()
        except (TimeoutError, ConnectionError):
            await _kill_and_reap(proc)


async def _read(proc: asyncio.subprocess.Process) -> tuple[Any, ...] | None:
    assert proc.stdout is not None
    try:
        header = await proc.stdout.readexactly(_LEN.size)
        payload = await proc.stdout.readexactly(_LEN.unpack(header)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return pickle.loads(payload)


def _frame(message: Any) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(payload)) + payload


async def _kill_and_reap(proc: asyncio.subprocess.Process) -> None:
    """Kills a worker and waits for its exit, so that its pipes are closed while the loop runs."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


def _log_start_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("placer worker failed to restart: %s", task.exception())


async def start_runner(
    name: str, configs: Mapping[str, str], isolation: str = "auto", start_timeout: float = 30.0
) -> InlineRunner | ProcessRunner:
    """Loads the placer once, isolated or inline as ``isolation`` says (auto: built-ins inline)."""
    if isolation == "process" or (isolation == "auto" and name not in BUILTIN_PLACERS):
        runner = ProcessRunner(name, configs, start_timeout)
        await runner.start()
        return runner
    return InlineRunner(load_placer(name, configs))
