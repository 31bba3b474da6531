"""pytest plugin (registered under ``pytest11``): fixtures that start placement-sim servers.

- ``placement_sim``: an async fixture; a server on an ephemeral 127.0.0.1 port with the default cluster
  (6 brokers in 3 racks, ``striped``, seed 0) and a connected :class:`protocol.client.KafkaClient`.
  ``placement_sim.bootstrap`` is the address for any Kafka client. It needs pytest-asyncio, and nothing
  more: an ``async def`` test that asks for it runs under pytest-asyncio's ``asyncio`` marker even in
  pytest-asyncio's default strict mode, without ``asyncio_mode`` or the marker in the user's suite.
- ``placement_sim_sync``: the same for tests without an event loop, with a blocking client
  (:class:`protocol.client.BlockingClient`).
- ``placement_sim_server``: the same server without a client, for other clients (kafka-python, ...).
- ``placement_sim_factory``: ``placement_sim_factory(placer=..., brokers=[(id, rack[, fenced]), ...],
  properties={...}, seed=0, clock="virtual", policy="fluvio")`` starts more servers (property values may be
  numbers and booleans: ``{"broker.session.timeout.ms": 1500}``); all are stopped at
  the end of the test. ``security="SSL"``, ``"SASL_PLAINTEXT"`` or ``"SASL_SSL"`` secures every listener
  (``users={...}``, default alice/alice-secret; ``client_auth="required"`` for client certificates), and
  ``server.client_settings`` says how each client connects (``mechanism=`` picks its SASL mechanism).
- ``placement_sim_certificates``: a throw-away CA, server keystore and client certificate, made once
  per test session (:class:`controller.security_testing.Certificates`; needs ``cryptography``).

Each server runs on its own event loop in a background thread, so blocking and asyncio clients work alike.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pytest

if TYPE_CHECKING:
    from controller.embedded import ServerThread
    from controller.security_testing import Certificates

try:
    import pytest_asyncio

    _async_fixture: Callable[..., Any] = pytest_asyncio.fixture
except ImportError:  # depends on the user's environment
    pytest_asyncio = None
    _async_fixture = pytest.fixture

ASYNC_FIXTURE = "placement_sim"
MISSING_ASYNC_PLUGIN = (
    "the placement_sim fixture is async and needs pytest-asyncio: pip install pytest-asyncio "
    "(or use placement_sim_sync, which needs nothing)"
)


ClientT = TypeVar("ClientT")


@dataclass
class RunningSim(Generic[ClientT]):
    """A running server and a client connected to it."""

    server: ServerThread
    client: ClientT

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    @property
    def stats(self) -> Any:
        return self.server.stats


#: What ``placement_sim`` gives: the server and an asyncio client.
PlacementSim = RunningSim["KafkaClient"]
#: What ``placement_sim_sync`` gives: the server and a blocking client.
PlacementSimSync = RunningSim["BlockingClient"]


def _async_plugin_active(config: pytest.Config) -> bool:
    return pytest_asyncio is not None and config.pluginmanager.hasplugin("asyncio")


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> None:
    """Marks ``async def`` tests that ask for ``placement_sim`` with ``asyncio`` before pytest-asyncio
    looks at them, so that they run in its strict mode too."""
    if not _async_plugin_active(collector.config) or not inspect.iscoroutinefunction(obj):
        return
    try:
        parameters = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return
    if ASYNC_FIXTURE in parameters and not any(m.name == "asyncio" for m in getattr(obj, "pytestmark", [])):
        pytest.mark.asyncio(obj)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _async_plugin_active(config):
        return
    if any(ASYNC_FIXTURE in getattr(item, "fixturenames", ()) for item in items):
        warnings.warn(pytest.PytestWarning(MISSING_ASYNC_PLUGIN), stacklevel=1)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if ASYNC_FIXTURE in getattr(item, "fixturenames", ()) and not _async_plugin_active(item.config):
        pytest.fail(MISSING_ASYNC_PLUGIN, pytrace=False)


@pytest.fixture(scope="session")
def placement_sim_certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    try:
        from controller.security_testing import make_certificates
    except ImportError:  # pragma: no cover - depends on the user's environment
        pytest.fail("TLS fixtures need the cryptography package: pip install 'placement-sim[security]'")
    return make_certificates(tmp_path_factory.mktemp("placement-sim-tls"))


@pytest.fixture
def placement_sim_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., ServerThread]]:
    from controller.embedded import ServerThread
    from controller.security_testing import DEFAULT_USERS, ClientSettings, secured_properties

    started: list[ServerThread] = []

    def start(
        placer: str | None = None,
        brokers: Any = None,
        properties: Mapping[str, str | int | float | bool] | None = None,
        seed: int | None = 0,
        clock: str | None = None,
        policy: str | None = None,
        security: str | None = None,
        mechanism: str = "PLAIN",
        users: dict[str, str] | None = None,
        client_auth: str = "none",
    ) -> ServerThread:
        client = None
        if security is not None and security != "PLAINTEXT":
            certs = (
                request.getfixturevalue("placement_sim_certificates") if security.endswith("SSL") else None
            )
            chosen = dict(DEFAULT_USERS if users is None else users)
            properties = {**secured_properties(security, certs, chosen, client_auth), **(properties or {})}
            user, password = next(iter(chosen.items()), (None, None))
            client = ClientSettings(
                security,
                ca_file=str(certs.ca_file) if certs else None,
                mechanism=mechanism if security.startswith("SASL_") else None,
                username=user if security.startswith("SASL_") else None,
                password=password if security.startswith("SASL_") else None,
                cert_file=str(certs.client_cert) if certs and client_auth != "none" else None,
                key_file=str(certs.client_key) if certs and client_auth != "none" else None,
            )
        server = ServerThread.start(
            placer=placer, brokers=brokers, properties=properties, seed=seed, clock=clock, policy=policy
        )
        if client is not None:
            server.client_settings = client
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def placement_sim_server(placement_sim_factory: Callable[..., ServerThread]) -> ServerThread:
    return placement_sim_factory()


@pytest.fixture
def placement_sim_sync(placement_sim_factory: Callable[..., ServerThread]) -> Iterator[PlacementSimSync]:
    from protocol.client import BlockingClient

    server = placement_sim_factory()
    with BlockingClient.connect(server.bootstrap) as client:
        yield RunningSim(server, client)


@_async_fixture
async def placement_sim(placement_sim_factory: Callable[..., ServerThread]) -> AsyncIterator[PlacementSim]:
    from protocol.client import KafkaClient

    server = placement_sim_factory()
    client = await KafkaClient.connect(server.bootstrap)
    try:
        yield RunningSim(server, client)
    finally:
        await client.close()
