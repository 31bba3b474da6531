"""Runs a plugin in the server's process or isolated in a worker process.

Built-ins are trusted and fast: they run inline on the event loop. Any other plugin runs by default in
its own worker process (``isolation=auto``), so one that blocks, spins, sleeps past its deadline, eats
memory or crashes never stalls the server: at the deadline the worker is killed and a fresh one is
started (loaded and configured again) for later calls. Calls reach the plugin one at a time and in
arrival order, so stateful plugins see them in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from controller.offload import BIG, gc_paused, in_plugin_thread, in_thread, off_loop

# The rules both runners share come from outcome; the worker's messages and framing are imported only by a
# runner that starts a worker (ProcessRunner), not by every server.
from controller.plugins.isolation.outcome import PluginError, Reason, attributes_of, failure, normalized
from controller.plugins.loader import PluginKind, PluginLoadError, load_plugin, plugin_label
from controller.plugins.properties import WORKER_MAX_MEMORY_MB

if TYPE_CHECKING:
    from controller.plugins.isolation.worker import Call

log = logging.getLogger(__name__)

__all__ = ["InlineRunner", "ProcessRunner", "Runner", "start_runner"]

#: Replies larger than this are unpickled off the event loop.
_BIG_REPLY = 1 << 20


class Runner(Protocol):
    isolation: str
    label: str
    #: The plugin's attributes its kind names (``style`` of an election policy, ...).
    attributes: Mapping[str, Any]

    async def call(self, args: tuple[Any, ...], deadline: float, size: int = 0) -> Any: ...

    def can_call_now(self, size: int) -> bool:
        """Whether :meth:`call_now` may be used for a call of this size."""
        ...

    def call_now(self, args: tuple[Any, ...]) -> Any:
        """What :meth:`call` gives, without waiting: for calls :meth:`can_call_now` allows."""
        ...

    async def close(self) -> None: ...


def _timed_out(label: str) -> PluginError:
    return PluginError(Reason.TIMED_OUT, label, "the plugin did not answer in time")


def _checked(kind: PluginKind, label: str, args: tuple[Any, ...], value: Any) -> Any:
    """``value`` once the kind's check (:attr:`PluginKind.check`) finds nothing wrong with it; else
    PluginError (MALFORMED) saying what is wrong."""
    if value is not None and kind.check is not None:
        problem = kind.check(args, value)
        if problem is not None:
            raise PluginError(Reason.MALFORMED, label, problem)
    return value


class InlineRunner:
    """Calls the plugin directly (built-ins): no isolation, no overhead."""

    isolation = "inline"

    def __init__(self, kind: PluginKind, plugin: Any) -> None:
        self.kind = kind
        self.plugin = plugin
        self.label = plugin_label(plugin)
        self.attributes = attributes_of(kind, plugin)
        self._method = getattr(plugin, kind.method)
        self._lock = asyncio.Lock()
        #: A built-in's plain method answers at once: small calls skip the event loop's round trip.
        builtin = f"{type(plugin).__module__}:{type(plugin).__qualname__}" in kind.builtins.values()
        self._immediate = builtin and not inspect.iscoroutinefunction(self._method)

    async def call(self, args: tuple[Any, ...], deadline: float, size: int = 0) -> Any:
        """The plugin's normalized and checked result for ``args``, or PluginError; ``deadline`` is loop time.

        Calls reach the plugin one at a time. A call bigger than :data:`controller.offload.BIG` (``size``)
        runs in a worker thread, so that the event loop serves others meanwhile."""
        async with self._lock:
            if size > BIG and not inspect.iscoroutinefunction(self._method):
                try:
                    async with asyncio.timeout_at(deadline):
                        return await in_plugin_thread(self._call_and_normalize, args)
                except TimeoutError:
                    raise _timed_out(self.label) from None
            try:
                result = self._method(*args)
                if inspect.isawaitable(result):
                    try:
                        async with asyncio.timeout_at(deadline):
                            result = await result
                    except TimeoutError:
                        raise _timed_out(self.label) from None
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001 - a plugin's failure becomes an error response
                raise failure(self.kind, self.label, exc) from None
            value = normalized(self.kind, self.label, result, portable=False)
            return await off_loop(size, _checked, self.kind, self.label, args, value)

    def can_call_now(self, size: int) -> bool:
        return self._immediate and size <= BIG and not self._lock.locked()

    def call_now(self, args: tuple[Any, ...]) -> Any:
        return self._call_and_normalize(args)

    def _call_and_normalize(self, args: tuple[Any, ...]) -> Any:
        try:
            result = self._method(*args)
        except Exception as exc:  # noqa: BLE001
            raise failure(self.kind, self.label, exc) from None
        return _checked(
            self.kind, self.label, args, normalized(self.kind, self.label, result, portable=False)
        )

    async def close(self) -> None:
        close = getattr(self.plugin, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.exception("%s %s: close() failed", self.kind.noun, self.label)


class ProcessRunner:
    """Hosts the plugin in a worker process; kills and restarts it when a call overruns its deadline."""

    isolation = "process"

    def can_call_now(self, size: int) -> bool:
        return False

    def call_now(self, args: tuple[Any, ...]) -> Any:
        raise RuntimeError("a worker process's answer has to be waited for")

    def __init__(
        self,
        kind: PluginKind,
        name: str,
        configs: Mapping[str, str],
        start_timeout: float = 30.0,
        max_memory_mb: int = 0,
    ) -> None:
        self.kind = kind
        self.name = name
        self.configs = dict(configs)
        self.start_timeout = start_timeout
        self.max_memory_mb = max_memory_mb
        self.label = name
        self.attributes: Mapping[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        self._sent: Any = None
        # Killed workers still being reaped (their pipes and exit status), awaited by close().
        self._reaping: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        """Starts the worker and loads the plugin; PluginLoadError if it cannot be loaded."""
        path = [p for p in sys.path if p]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "controller.plugins.isolation",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        )
        assert proc.stdin is not None
        from controller.plugins.isolation.worker import Load, Ready

        load = Load(self.kind.ref, self.name, self.configs, path, self.max_memory_mb)
        proc.stdin.write(_frame(load))
        try:
            async with asyncio.timeout(self.start_timeout):
                reply = await _read(proc)
        except TimeoutError:
            await _kill_and_reap(proc)
            raise PluginLoadError(
                f"{self.kind.noun} {self.name!r}: worker did not start within {self.start_timeout:g}s"
            ) from None
        if reply is None:
            code = await proc.wait()
            raise PluginLoadError(
                f"{self.kind.noun} {self.name!r}: worker exited with code {code} while loading"
            )
        if not isinstance(reply, Ready):
            await _kill_and_reap(proc)
            raise PluginLoadError(reply.message if isinstance(reply, PluginError) else repr(reply))
        self.label = reply.label
        self.attributes = reply.attributes
        self._proc = proc
        self._sent = None
        log.info("%s %s runs in worker process %d", self.kind.noun, self.label, proc.pid)

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
        self._proc = None
        self._sent = None  # a fresh worker has nothing: the next call sends everything
        self._starting = asyncio.ensure_future(self.start())
        self._starting.add_done_callback(_log_start_failure)

    async def call(self, args: tuple[Any, ...], deadline: float, size: int = 0) -> Any:
        """The plugin's normalized and checked result for ``args``, or PluginError; ``deadline`` is loop time."""
        try:
            async with asyncio.timeout_at(deadline):
                await self._lock.acquire()
        except TimeoutError:
            raise _timed_out(self.label) from None
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    proc = await self._ensure_started()
            except TimeoutError:
                raise _timed_out(self.label) from None
            assert proc.stdin is not None
            sent = args
            if self.kind.outbound is not None:
                sent, self._sent = self.kind.outbound(args, self._sent)
            from controller.plugins.isolation.worker import Call, Returned

            proc.stdin.write(await _frame_off_loop(Call(sent)))
            try:
                async with asyncio.timeout_at(deadline):
                    reply = await _read(proc)
            except TimeoutError:
                log.warning(
                    "%s %s overran its deadline; restarting its worker process", self.kind.noun, self.label
                )
                self._discard(proc)
                raise _timed_out(self.label) from None
            except BaseException:
                # The caller went away mid-call (its client disconnected): the reply would be read by the
                # next call, so this worker cannot be reused.
                self._discard(proc)
                raise
            if reply is None:
                code = await proc.wait()
                log.warning(
                    "%s %s: worker process exited with code %s; restarting it",
                    self.kind.noun,
                    self.label,
                    code,
                )
                self._discard(proc)
                how = (
                    f"was killed by signal {-code}"
                    if code is not None and code < 0
                    else f"exited with code {code}"
                )
                raise PluginError(Reason.WORKER_EXITED, self.label, f"worker process {how}", "WorkerExited")
            if isinstance(reply, PluginError):
                if reply.reason is Reason.OUT_OF_MEMORY:
                    self._discard(proc)
                    raise PluginError(
                        Reason.OUT_OF_MEMORY,
                        self.label,
                        f"{reply.message}: the worker process went past its memory limit of "
                        f"{self.max_memory_mb} MB ({WORKER_MAX_MEMORY_MB})",
                        reply.exc_type,
                    )
                raise reply
            assert isinstance(reply, Returned)
            value = reply.value
            if self.kind.unpack is not None:
                with gc_paused():
                    value = await self.kind.unpack(value)
            return await off_loop(size, _checked, self.kind, self.label, args, value)
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
        from controller.plugins.isolation.worker import Close

        try:
            proc.stdin.write(_frame(Close()))
            proc.stdin.close()
            async with asyncio.timeout(5):
                await proc.wait()
        except (TimeoutError, ConnectionError):
            await _kill_and_reap(proc)


async def _read(proc: asyncio.subprocess.Process) -> Any:
    from controller.plugins.isolation.worker import LENGTH

    assert proc.stdout is not None
    try:
        header = await proc.stdout.readexactly(LENGTH.size)
        payload = await proc.stdout.readexactly(LENGTH.unpack(header)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    import pickle  # once a plugin runs in a worker process, not at every server's start

    if len(payload) > _BIG_REPLY:
        return await in_thread(pickle.loads, payload)
    return pickle.loads(payload)


def _frame(message: Any) -> bytes:
    import pickle

    from controller.plugins.isolation.worker import LENGTH

    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return LENGTH.pack(len(payload)) + payload


async def _frame_off_loop(message: Call) -> bytes:
    """A call's frame; pickled in a thread when its arguments are large, so the loop keeps serving."""
    if _looks_small(message.args):
        return _frame(message)
    return await in_thread(_frame, message)


def _looks_small(args: tuple[Any, ...]) -> bool:
    for arg in args:
        sized = getattr(arg, "size_hint", None)
        if callable(sized) and sized() > 10_000:
            return False
    return True


async def _kill_and_reap(proc: asyncio.subprocess.Process) -> None:
    """Kills a worker and waits for its exit, so that its pipes are closed while the loop runs."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


def _log_start_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("plugin worker failed to restart: %s", task.exception())


async def start_runner(
    kind: PluginKind,
    name: str,
    configs: Mapping[str, str],
    isolation: str = "auto",
    start_timeout: float = 30.0,
    max_memory_mb: int = 0,
) -> InlineRunner | ProcessRunner:
    """Loads the plugin once, isolated or inline as ``isolation`` says (auto: built-ins inline)."""
    if isolation == "process" or (isolation == "auto" and name.strip() not in kind.builtins):
        runner = ProcessRunner(kind, name, configs, start_timeout, max_memory_mb)
        await runner.start()
        return runner
    return InlineRunner(kind, load_plugin(kind, name, configs))
