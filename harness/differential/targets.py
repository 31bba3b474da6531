"""The two clusters a differential test talks to, behind one interface: a connection per broker (the
project's own client, raw requests at chosen versions), the names each cluster's values stand for, and the
failure each can suffer (a real node's SIGKILL / SIGSTOP / SIGTERM, the simulator's matching
``stop_broker`` mode).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from harness.differential.normalize import Names
from protocol.client import ClientError, ConnectionClosedError, KafkaClient, RequestTimedOutError

if TYPE_CHECKING:
    from controller.embedded import ServerThread
    from harness.kafka_cluster import KafkaCluster

__all__ = ["FAILURE_MODES", "KafkaSide", "LoopThread", "Outcome", "Side", "SimSide"]

T = TypeVar("T")

#: A failure as each side suffers it: the simulator's ``stop_broker`` mode -> the real node's signal.
FAILURE_MODES = {"crash": "SIGKILL", "hang": "SIGSTOP", "controlled": "SIGTERM"}


class LoopThread:
    """One asyncio loop in a daemon thread: every connection of a differential session lives on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="differential", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 300.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@dataclass
class Outcome:
    """What one cluster did with one request: ``answer`` (``body`` decoded), ``closed`` (the connection
    ended instead), ``timeout`` (no answer in time) or ``sent`` (a request that is never answered)."""

    kind: str
    body: dict[str, Any] | None = None
    detail: str = ""

    def comparable(self) -> dict[str, Any]:
        if self.kind == "answer" and self.body is not None:
            return self.body
        return {"<outcome>": self.kind}


def fit(api: str, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the fields ``version`` of the request does not have (generators fill every
    field of every version; each version takes its own)."""
    from protocol import load_schemas

    spec = load_schemas().message(f"{api}Request").spec

    def fields_of(field: Any) -> tuple[Any, ...]:
        if field.fields:
            return tuple(field.fields)
        name = field.type.struct_name or (field.type.element.struct_name if field.type.element else None)
        return tuple(spec.common_structs[name].fields) if name in spec.common_structs else ()

    def trim(value: Any, fields: tuple[Any, ...]) -> Any:
        if not isinstance(value, dict):
            return value
        by_name = {f.name: f for f in fields}
        out = {}
        for key, item in value.items():
            field = by_name.get(key)
            if field is None or version not in field.versions:
                continue
            if field.type.is_struct_like and item is not None:
                inner = fields_of(field)
                item = [trim(i, inner) for i in item] if isinstance(item, list) else trim(item, inner)
            out[key] = item
        return out

    return trim(data, tuple(spec.fields))


class Side(ABC):
    """One cluster as the harness sees it."""

    name: str

    def __init__(self) -> None:
        self.names = Names()
        self._clients: dict[int, KafkaClient] = {}
        #: Request timeout for each send, seconds (a hung broker's requests end here).
        self.request_timeout = 15.0
        #: Seconds spent waiting for this cluster's answers, by API (which side a slow run waits on).
        self.spent: Counter[str] = Counter()

    @property
    @abstractmethod
    def addresses(self) -> Mapping[int, str]:
        """Each broker's listener by id."""

    def broker_ids(self) -> list[int]:
        return sorted(self.addresses)

    def refresh_names(self) -> None:
        self.names.ports = {int(a.rsplit(":", 1)[1]): b for b, a in self.addresses.items()}
        self.names.brokers = frozenset(self.addresses)

    async def client(self, broker: int) -> KafkaClient:
        client = self._clients.get(broker)
        if client is None or client._closed is not None:  # noqa: SLF001 - the client says it is closed
            if client is not None:
                await client.close()
            client = await KafkaClient.connect(
                self.addresses[broker],
                client_id="differential",
                connect_timeout=5.0,
                request_timeout=self.request_timeout,
                negotiate=False,
            )
            self._clients[broker] = client
        return client

    async def drop(self, broker: int) -> None:
        client = self._clients.pop(broker, None)
        if client is not None:
            await client.close()

    async def send(
        self,
        broker: int,
        api: str,
        version: int,
        data: dict[str, Any],
        *,
        expect_response: bool = True,
        timeout: float | None = None,
    ) -> Outcome:
        """One request on ``broker``'s connection (made again if the last one ended)."""
        began = time.perf_counter()
        try:
            return await self._send(broker, api, version, data, expect_response, timeout)
        finally:
            self.spent[api] += time.perf_counter() - began

    async def _send(
        self,
        broker: int,
        api: str,
        version: int,
        data: dict[str, Any],
        expect_response: bool,
        timeout: float | None,
    ) -> Outcome:
        data = fit(api, version, data)
        try:
            client = await self.client(broker)
        except ClientError as exc:
            return Outcome("closed", detail=f"connect: {exc}")
        try:
            if not expect_response:
                await client.send_unanswered(f"{api}Request", data, version)
                # The next request on the connection shows whether the server kept it (acks=0 refused:
                # Kafka closes the connection).
                await client.send("ApiVersionsRequest", {}, version=0, timeout=timeout)
                return Outcome("sent")
            body = await client.send(f"{api}Request", data, version=version, timeout=timeout)
            return Outcome("answer", body)
        except RequestTimedOutError as exc:
            await self.drop(broker)
            return Outcome("timeout", detail=str(exc))
        except ConnectionClosedError as exc:
            await self.drop(broker)
            return Outcome("closed", detail=str(exc))
        except ClientError as exc:  # an answer that does not decode
            await self.drop(broker)
            return Outcome("undecodable", detail=str(exc))

    async def close(self) -> None:
        for broker in list(self._clients):
            await self.drop(broker)

    @abstractmethod
    async def fail(self, broker: int, mode: str) -> None:
        """``crash``, ``hang`` or ``controlled`` (see :data:`FAILURE_MODES`)."""

    @abstractmethod
    async def recover(self, broker: int) -> None:
        """Back from :meth:`fail`: started again (same address) or resumed."""


class KafkaSide(Side):
    """The real cluster (:class:`harness.kafka_cluster.KafkaCluster`)."""

    name = "kafka"

    def __init__(self, cluster: KafkaCluster) -> None:
        super().__init__()
        self.cluster = cluster
        self.names.cluster_id = cluster.cluster_id
        self.refresh_names()

    @property
    def addresses(self) -> Mapping[int, str]:
        return self.cluster.brokers

    async def fail(self, broker: int, mode: str) -> None:
        await self.drop(broker)
        action = {
            "crash": self.cluster.kill,
            "hang": self.cluster.pause,
            "controlled": self.cluster.terminate,
        }
        await asyncio.to_thread(action[mode], broker)

    async def recover(self, broker: int) -> None:
        await self.drop(broker)
        node = self.cluster.node(broker)
        if node.paused:
            self.cluster.resume(broker)
        elif not node.running:
            await asyncio.to_thread(self.cluster.restart, broker)


class SimSide(Side):
    """The simulator (:class:`controller.embedded.ServerThread`), addressed broker by broker."""

    name = "sim"

    def __init__(self, server: ServerThread) -> None:
        super().__init__()
        self.server = server
        self.names.cluster_id = server.config.cluster_id
        self.refresh_names()

    @property
    def addresses(self) -> Mapping[int, str]:
        return self.server.brokers

    async def fail(self, broker: int, mode: str) -> None:
        await self.drop(broker)
        await asyncio.to_thread(self.server.stop_broker, broker, mode)

    async def recover(self, broker: int) -> None:
        await self.drop(broker)
        await asyncio.to_thread(self.server.start_broker, broker)


#: A topic id no cluster has: the same on both sides.
UNKNOWN_TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-00000000dead")
