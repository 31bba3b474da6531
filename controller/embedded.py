"""A server running on its own event loop in a background thread: for tests, notebooks and benchmarks.

Because it has its own loop, both blocking clients (kafka-python, confluent-kafka) and asyncio clients
on the caller's loop can talk to it.

>>> with ServerThread.start(placer="legacy", properties={"simulator.seed": "1"}) as server:
...     print(server.bootstrap)
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from controller.config import BROKERS, FENCED, LISTENERS, PLACER, SEED, ServerConfig
from controller.placement.api import UsableBroker
from controller.server import Server

__all__ = ["ServerThread", "server_properties"]


def server_properties(
    placer: str | None = None,
    brokers: Iterable[UsableBroker | tuple[int, str | None] | tuple[int, str | None, bool]] | None = None,
    properties: Mapping[str, str] | None = None,
    seed: int | None = 0,
    listen: str = "127.0.0.1:0",
) -> dict[str, str]:
    """Server properties from friendly arguments; ``properties`` override the rest."""
    props: dict[str, str] = {LISTENERS: listen}
    if placer is not None:
        props[PLACER] = placer
    if seed is not None:
        props[SEED] = str(seed)
    if brokers is not None:
        entries, fenced = [], []
        for b in brokers:
            broker = (
                b
                if isinstance(b, UsableBroker)
                else UsableBroker(b[0], b[1], bool(b[2]) if len(b) > 2 else False)
            )
            entries.append(f"{broker.id}:{broker.rack}" if broker.rack else str(broker.id))
            if broker.fenced:
                fenced.append(str(broker.id))
        props[BROKERS] = ",".join(entries)
        props[FENCED] = ",".join(fenced)
    props.update(properties or {})
    return props


class ServerThread:
    """A started server; ``stop()`` (or leaving the ``with`` block) shuts it down."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._server: Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="placement-sim-server", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    @classmethod
    def start(
        cls,
        placer: str | None = None,
        brokers: Iterable[Any] | None = None,
        properties: Mapping[str, str] | None = None,
        seed: int | None = 0,
        timeout: float = 60.0,
    ) -> ServerThread:
        config = ServerConfig.from_properties(server_properties(placer, brokers, properties, seed))
        return cls(config).run_in_background(timeout)

    def run_in_background(self, timeout: float = 60.0) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the server did not start within {timeout:g}s")
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            self._server = await Server.create(self.config)
            await self._server.start()
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.server.stop()

    @property
    def server(self) -> Server:
        """The running server (its controller, cluster and counters), for inspection."""
        if self._server is None:
            raise RuntimeError("the server has not started")
        return self._server

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    @property
    def host(self) -> str:
        assert self.server.address is not None
        return self.server.address[0]

    @property
    def port(self) -> int:
        assert self.server.address is not None
        return self.server.address[1]

    @property
    def brokers(self) -> dict[int, str]:
        """Each broker's own listener as ``host:port``, by broker id (what Metadata advertises)."""
        return {b: f"{h}:{p}" for b, (h, p) in sorted(self.server.endpoints.items())}

    @property
    def stats(self) -> Counter[str]:
        """A snapshot of the server's counters (connections, closes by reason, requests by apiKey)."""
        return Counter(self.server.stats)

    def call(self, fn: Any, *args: Any) -> Any:
        """Runs ``fn(*args)`` on the server's loop (e.g. to inspect or change the cluster) and returns its result."""

        async def _call() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(_call(), self._loop).result(30)

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
