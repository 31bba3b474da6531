"""pytest plugin (registered under ``pytest11``): fixtures that start placement-sim servers.

- ``placement_sim``: an async fixture; a server on an ephemeral 127.0.0.1 port with the default cluster
  (6 brokers in 3 racks, ``striped``, seed 0) and a connected :class:`protocol.client.KafkaClient`.
  ``placement_sim.bootstrap`` is the address for any Kafka client. Needs pytest-asyncio.
- ``placement_sim_server``: the same server without a client, for blocking clients in sync tests.
- ``placement_sim_factory``: ``placement_sim_factory(placer=..., brokers=[(id, rack[, fenced]), ...],
  properties={...}, seed=0)`` starts more servers; all are stopped at the end of the test.

Each server runs on its own event loop in a background thread, so blocking and asyncio clients work alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from controller.embedded import ServerThread
    from protocol.client import KafkaClient

try:
    import pytest_asyncio

    _async_fixture: Callable[..., Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - depends on the user's environment
    pytest_asyncio = None
    _async_fixture = pytest.fixture


@dataclass
class PlacementSim:
    """A running server and a client connected to it."""

    server: ServerThread
    client: KafkaClient

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    @property
    def stats(self) -> Any:
        return self.server.stats


@pytest.fixture
def placement_sim_factory() -> Iterator[Callable[..., ServerThread]]:
    from controller.embedded import ServerThread

    started: list[ServerThread] = []

    def start(
        placer: str | None = None,
        brokers: Any = None,
        properties: dict[str, str] | None = None,
        seed: int | None = 0,
    ) -> ServerThread:
        server = ServerThread.start(placer=placer, brokers=brokers, properties=properties, seed=seed)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def placement_sim_server(placement_sim_factory: Callable[..., ServerThread]) -> ServerThread:
    return placement_sim_factory()


@_async_fixture
async def placement_sim(placement_sim_factory: Callable[..., ServerThread]) -> AsyncIterator[PlacementSim]:
    if pytest_asyncio is None:  # pragma: no cover
        pytest.fail("the placement_sim fixture needs pytest-asyncio (pip install pytest-asyncio)")
    from protocol.client import KafkaClient

    server = placement_sim_factory()
    client = await KafkaClient.connect(server.bootstrap)
    try:
        yield PlacementSim(server, client)
    finally:
        await client.close()
