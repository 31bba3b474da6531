"""A client of a whole cluster, for the commands that produce, consume and look after groups: metadata,
one connection per broker, requests sent to a partition's leader or a group's coordinator, and retries.

As Kafka's clients do, a retriable error (one the error table marks retriable: NOT_LEADER_OR_FOLLOWER,
LEADER_NOT_AVAILABLE, NOT_COORDINATOR, REQUEST_TIMED_OUT, ...) or a lost connection is retried after a
backoff (100 ms, doubling up to 1 s) with fresh metadata, until the caller's deadline; what is waited for
is logged at INFO (``-v``), once per distinct reason. Anything else fails at once with Kafka's error.

The simulator serves every request on its bootstrap listener too, but a session asks the brokers
themselves (their addresses come from Metadata), as Kafka's clients do: so it works against Kafka too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from protocol.client import ClientError, ErrorResponse, KafkaClient
from protocol.errors import error_by_code

log = logging.getLogger(__name__)

__all__ = [
    "Failed",
    "GaveUp",
    "PartitionInfo",
    "Retriable",
    "Session",
    "TopicInfo",
    "check",
    "error_text",
]

T = TypeVar("T")

METADATA_VERSION = 12
LIST_OFFSETS_VERSION = 7
FIND_COORDINATOR_VERSION = 3
#: Kafka's ``retry.backoff.ms`` and ``retry.backoff.max.ms``.
BACKOFF_S = 0.1
BACKOFF_MAX_S = 1.0


def error_text(code: int, message: str | None = None) -> str:
    """``NAME (code): message`` (the table's message when the answer has none)."""
    error = error_by_code(code)
    return f"{error.name} ({code}): {message or error.message}"


class Failed(Exception):
    """A request that cannot succeed (an error that is not retriable, or the deadline passed): its text."""


class GaveUp(Failed):
    """A retriable problem that outlasted the deadline."""


class Retriable(Exception):
    """An answer or a connection problem worth another try with fresh metadata: what is waited for."""


def check(code: int, message: str | None, what: str) -> None:
    """Nothing for code 0; :class:`Retriable` for a retriable error, :class:`Failed` for any other."""
    if code == 0:
        return
    text = f"{what}: {error_text(code, message)}"
    raise Retriable(text) if error_by_code(code).retriable else Failed(text)


@dataclass(frozen=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    error: int = 0


@dataclass(frozen=True)
class TopicInfo:
    name: str
    error: int
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)

    @property
    def available(self) -> list[int]:
        """The partitions that have a leader."""
        return sorted(p for p, info in self.partitions.items() if info.leader >= 0)


class Session:
    """Connections to one cluster. Use :meth:`connect`; :meth:`close` at the end."""

    def __init__(
        self, bootstrap: str, client: KafkaClient, timeout: float, client_id: str = "placement-sim-client"
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.client_id = client_id
        self._bootstrap_client: KafkaClient | None = client
        self._brokers: dict[int, tuple[str, int]] = {}
        self._clients: dict[int, KafkaClient] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._stale = True
        self._said: set[str] = set()

    @classmethod
    async def connect(
        cls, bootstrap: str, timeout: float, client_id: str = "placement-sim-client"
    ) -> Session:
        """Connects to ``bootstrap`` (ConnectError when it cannot: nothing to retry with)."""
        client = await KafkaClient.connect(
            bootstrap, client_id=client_id, connect_timeout=timeout, request_timeout=timeout
        )
        return cls(bootstrap, client, timeout, client_id)

    async def close(self) -> None:
        clients = [*self._clients.values()]
        if self._bootstrap_client is not None:
            clients.append(self._bootstrap_client)
        self._clients.clear()
        self._bootstrap_client = None
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()

    # ------------------------------------------------------------------------------------ connections

    async def any_client(self) -> KafkaClient:
        """The bootstrap connection (made again if it was lost), else a broker's."""
        if self._bootstrap_client is not None and not self._bootstrap_client.closed:
            return self._bootstrap_client
        try:
            self._bootstrap_client = await KafkaClient.connect(
                self.bootstrap,
                client_id=self.client_id,
                connect_timeout=self.timeout,
                request_timeout=self.timeout,
            )
            return self._bootstrap_client
        except ClientError as exc:
            for node in sorted(self._brokers):
                with contextlib.suppress(Retriable):
                    return await self.broker(node)
            raise Retriable(f"the cluster: {exc}") from None

    async def broker(self, node: int) -> KafkaClient:
        """A connection to broker ``node`` (Retriable when it cannot be made)."""
        client = self._clients.get(node)
        if client is not None and not client.closed:
            return client
        address = self._brokers.get(node)
        if address is None:
            self._stale = True
            raise Retriable(f"broker {node}: its address is not known yet")
        try:
            client = await KafkaClient.connect(
                f"{address[0]}:{address[1]}",
                client_id=self.client_id,
                connect_timeout=self.timeout,
                request_timeout=self.timeout,
            )
        except ClientError as exc:
            raise Retriable(f"broker {node}: {exc}") from None
        self._clients[node] = client
        return client

    def forget(self, node: int | None) -> None:
        """Drops the connection to ``node`` (None: the bootstrap one) after it failed; metadata is stale."""
        client = self._clients.pop(node, None) if node is not None else self._bootstrap_client
        if node is None:
            self._bootstrap_client = None
        if client is not None:
            asyncio.ensure_future(client.close())
        self._stale = True

    async def send(
        self, node: int | None, name: str, data: dict[str, Any], version: int, timeout: float | None = None
    ) -> dict[str, Any]:
        """A request to broker ``node`` (None: any); a lost connection or no answer is Retriable."""
        client = await (self.any_client() if node is None else self.broker(node))
        try:
            return await client.send(name, data, version=version, timeout=timeout)
        except ErrorResponse:
            raise
        except ClientError as exc:
            self.forget(node)
            where = "the cluster" if node is None else f"broker {node}"
            raise Retriable(f"{where}: {exc}") from None

    # ------------------------------------------------------------------------------------ metadata

    def invalidate(self) -> None:
        """The next :meth:`topic` asks the cluster again (after an error that says metadata moved on)."""
        self._stale = True

    async def refresh(self, topics: Iterable[str]) -> None:
        wanted = sorted(set(topics) | set(self._topics))
        response = await self.send(
            None,
            "MetadataRequest",
            {
                "Topics": [{"Name": name} for name in wanted],
                "AllowAutoTopicCreation": False,
                "IncludeTopicAuthorizedOperations": False,
            },
            METADATA_VERSION,
        )
        self._brokers = {b["NodeId"]: (b["Host"], b["Port"]) for b in response["Brokers"]}
        for topic in response["Topics"]:
            partitions = {
                p["PartitionIndex"]: PartitionInfo(p["LeaderId"], p["LeaderEpoch"], p["ErrorCode"])
                for p in topic["Partitions"]
            }
            self._topics[topic["Name"]] = TopicInfo(topic["Name"], topic["ErrorCode"], partitions)
        self._stale = False

    async def topic(self, name: str) -> TopicInfo:
        """A topic's partitions and leaders (fresh after :meth:`invalidate`); Failed for an unknown topic,
        Retriable while it has no metadata yet."""
        if self._stale or name not in self._topics:
            await self.refresh([name])
        info = self._topics[name]
        if info.error:
            self._topics.pop(name, None)
            check(info.error, None, f"topic {name}")
        if not info.partitions:
            raise Retriable(f"topic {name}: no partitions in the metadata yet")
        return info

    async def leader(self, topic: str, partition: int) -> int:
        """The leader of ``topic``-``partition`` (Retriable while it has none)."""
        info = await self.topic(topic)
        if partition not in info.partitions:
            raise Failed(
                f"{topic}-{partition}: no such partition (the topic has {len(info.partitions)}: "
                f"0-{len(info.partitions) - 1})"
            )
        leader = info.partitions[partition].leader
        if leader < 0:
            self._stale = True
            raise Retriable(f"{topic}-{partition}: {error_text(5)}")  # LEADER_NOT_AVAILABLE
        return leader

    def address(self, node: int) -> tuple[str, int]:
        """A broker's host and port as the metadata advertised it (``("?", 0)`` when not known)."""
        return self._brokers.get(node, ("?", 0))

    async def brokers(self) -> list[int]:
        """The ids of the brokers the cluster's metadata names (asked afresh)."""
        await self.refresh([])
        return sorted(self._brokers)

    async def offset(self, topic: str, partition: int, timestamp: int) -> int:
        """One attempt at ``topic``-``partition``'s offset for ``timestamp`` (-2 the log start, -1 the end:
        the high watermark), asked of its leader (ListOffsets); Retriable or Failed."""
        leader = await self.leader(topic, partition)
        request = {
            "ReplicaId": -1,
            "IsolationLevel": 0,
            "Topics": [
                {
                    "Name": topic,
                    "Partitions": [
                        {"PartitionIndex": partition, "CurrentLeaderEpoch": -1, "Timestamp": timestamp}
                    ],
                }
            ],
        }
        response = await self.send(leader, "ListOffsetsRequest", request, LIST_OFFSETS_VERSION)
        [answer] = response["Topics"][0]["Partitions"]
        check(answer["ErrorCode"], None, f"{topic}-{partition}")
        return int(answer["Offset"])

    async def offsets(
        self, topic: str, partitions: Iterable[int], timestamp: int, deadline: float | None
    ) -> dict[int, int]:
        """:meth:`offset` of each partition, retried until ``deadline``."""
        found: dict[int, int] = {}
        for partition in partitions:
            found[partition] = await self.retry(
                f"{topic}-{partition}",
                lambda p=partition: self.offset(topic, p, timestamp),  # type: ignore[misc]
                deadline,
            )
        return found

    async def coordinator(self, group: str, key_type: int = 0) -> int:
        """The broker coordinating ``group`` (``key_type`` 1: the transactional id ``group``)
        (FindCoordinator; Retriable while there is none)."""
        response = await self.send(
            None, "FindCoordinatorRequest", {"Key": group, "KeyType": key_type}, FIND_COORDINATOR_VERSION
        )
        what = "transactional id" if key_type == 1 else "group"
        check(response["ErrorCode"], response.get("ErrorMessage"), f"{what} {group}: FindCoordinator")
        node = int(response["NodeId"])
        self._brokers[node] = (response["Host"], response["Port"])
        return node

    # ------------------------------------------------------------------------------------ retries

    async def retry(self, what: str, attempt: Callable[[], Awaitable[T]], deadline: float | None) -> T:
        """``attempt()`` until it succeeds, retrying on Retriable (after a backoff, with fresh metadata)
        until ``deadline`` (``time.monotonic()``; None: for ever): its result, or Failed."""
        backoff = BACKOFF_S
        while True:
            try:
                return await attempt()
            except Retriable as problem:
                self._stale = True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise GaveUp(f"{problem} (still so after {self.timeout:g} s of retries)") from None
                self.waiting(f"{what}: waiting: {str(problem).removeprefix(what + ': ')}")
                await asyncio.sleep(backoff if left is None else min(backoff, left))
                backoff = min(backoff * 2, BACKOFF_MAX_S)

    def waiting(self, text: str) -> None:
        """Logs (INFO, ``-v``) what a retry waits for, once per distinct text."""
        if text not in self._said:
            self._said.add(text)
            log.info("%s", text)
