"""An asyncio Kafka protocol client: version negotiation, pipelining, timeouts, clear errors.

>>> client = await KafkaClient.connect("127.0.0.1:9092")
>>> await client.send("MetadataRequest", {"Topics": None})
>>> await client.create_replica_placement(12, 3)
>>> await client.stop_broker(0, "crash")   # the simulator's control APIs (docs/control.md)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol import DecodeError, Schemas, load_schemas
from protocol.codes import ApiKey
from protocol.errors import error_by_code
from protocol.framing import encode_request, parse_response_header, response_header_version

if TYPE_CHECKING:
    from protocol.codec import Message

log = logging.getLogger(__name__)

__all__ = [
    "BlockingClient",
    "ClientError",
    "ConnectionClosedError",
    "ConnectError",
    "ErrorResponse",
    "KafkaClient",
    "RequestTimedOutError",
    "UnsupportedVersionError",
    "parse_bootstrap",
]

_SIZE = struct.Struct(">i")


class ClientError(Exception):
    """Base class of the client's errors."""


class ConnectError(ClientError):
    """The connection could not be made (refused, unreachable, timed out)."""


class ConnectionClosedError(ClientError):
    """The server closed the connection before answering."""


class RequestTimedOutError(ClientError):
    """No answer within the request timeout."""


class UnsupportedVersionError(ClientError):
    """The server answers no version of this API that the client knows."""


class ErrorResponse(ClientError):
    """The server answered with an error code."""

    def __init__(self, code: int, message: str | None) -> None:
        self.code = code
        self.name = error_by_code(code).name
        self.message = message
        super().__init__(f"{self.name} ({code}): {message}" if message else f"{self.name} ({code})")


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` (the first of a comma-separated list)."""
    first = bootstrap.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not port.isdigit() or any(c.isspace() for c in host):
        raise ValueError(f"bootstrap address {bootstrap!r} is not HOST:PORT")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"bootstrap address {bootstrap!r}: port {int(port)} is out of range (1-65535)")
    if host.startswith("[") != host.endswith("]"):
        raise ValueError(f"bootstrap address {bootstrap!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


@dataclass
class _Pending:
    future: asyncio.Future[tuple[bytes, int]]
    header_version: int


class KafkaClient:
    """One connection to a Kafka-protocol server. Use :meth:`connect`; close with :meth:`close`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        schemas: Schemas,
        client_id: str | None,
        request_timeout: float,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.schemas = schemas
        self.client_id = client_id
        self.request_timeout = request_timeout
        self._correlation = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        #: Requests given up on (timed out, or their caller cancelled) whose answers may still come.
        self._abandoned: set[int] = set()
        self._closed: BaseException | None = None
        self._reader_task = asyncio.ensure_future(self._read_responses())
        #: The server's ranges by apiKey, after negotiation.
        self.api_versions: dict[int, tuple[int, int]] = {}
        #: The client software's name and version given in ApiVersions (v3+).
        self.software: tuple[str, str] = ("placement-sim", "0.1.0")

    @classmethod
    async def connect(
        cls,
        bootstrap: str,
        *,
        client_id: str | None = "placement-sim-client",
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        schemas: Schemas | None = None,
        negotiate: bool = True,
        software: tuple[str, str] = ("placement-sim", "0.1.0"),
    ) -> KafkaClient:
        """``software``: the ClientSoftwareName and ClientSoftwareVersion the client gives in ApiVersions
        (v3+). A server may take them to tell which API a key that is two APIs is (apiKey 68: a client that
        names itself a KIP-848 library such as ``librdkafka`` gets ConsumerGroupHeartbeat there): send the
        requests of that API by message name (``send("ConsumerGroupHeartbeatRequest", ...)``)."""
        host, port = parse_bootstrap(bootstrap)
        try:
            async with asyncio.timeout(connect_timeout):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            raise ConnectError(f"connecting to {host}:{port} timed out after {connect_timeout:g}s") from None
        except ConnectionRefusedError:
            raise ConnectError(f"connection to {host}:{port} refused: is the server running?") from None
        except OSError as exc:
            raise ConnectError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        client = cls(reader, writer, schemas or load_schemas(), client_id, request_timeout)
        client.software = software
        if negotiate:
            try:
                await client.negotiate()
            except BaseException:
                await client.close()
                raise
        return client

    @property
    def closed(self) -> bool:
        """Whether the connection ended (closed by either side, or lost)."""
        return self._closed is not None

    async def __aenter__(self) -> KafkaClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def negotiate(self) -> dict[int, tuple[int, int]]:
        """ApiVersions at the newest version we know; on UNSUPPORTED_VERSION, again at the server's newest."""
        ours = self.schemas.request(ApiKey.API_VERSIONS).valid_versions[1]
        response = await self._api_versions(ours)
        if response["ErrorCode"] == 35:
            theirs = {k["ApiKey"]: k["MaxVersion"] for k in response["ApiKeys"]}.get(ApiKey.API_VERSIONS, 0)
            response = await self._api_versions(min(ours, theirs))
        if response["ErrorCode"] != 0:
            raise ErrorResponse(response["ErrorCode"], "ApiVersions failed")
        self.api_versions = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in response["ApiKeys"]}
        return self.api_versions

    async def _api_versions(self, version: int) -> dict[str, Any]:
        name, software_version = self.software
        data = {"ClientSoftwareName": name, "ClientSoftwareVersion": software_version} if version >= 3 else {}
        body = await self._roundtrip(ApiKey.API_VERSIONS, version, data)
        message = self.schemas.response(ApiKey.API_VERSIONS)
        # A server that does not know our version answers in v0 (Kafka's rule): the error code comes first.
        if len(body) >= 2 and struct.unpack_from(">h", body)[0] == 35:
            return message.decode(body, 0)
        return message.decode(body, version)

    def choose_version(self, api_key: int, message: Message | None = None) -> int:
        low, high = (message or self.schemas.request(api_key)).valid_versions
        if not self.api_versions:
            return high
        if api_key not in self.api_versions:
            raise UnsupportedVersionError(f"the server does not answer apiKey {api_key}")
        server_low, server_high = self.api_versions[api_key]
        best = min(high, server_high)
        if best < max(low, server_low):
            raise UnsupportedVersionError(
                f"apiKey {api_key}: the server answers {server_low}-{server_high}, the client knows {low}-{high}"
            )
        return best

    async def send(
        self,
        name_or_key: str | int,
        data: dict[str, Any],
        version: int | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Sends any request (by message name or apiKey) and returns the decoded response."""
        message = (
            self.schemas.request(name_or_key)
            if isinstance(name_or_key, int)
            else self.schemas.message(name_or_key)
        )
        if message.api_key is None or message.type != "request":
            raise ValueError(f"{name_or_key!r} is not a request message")
        api_key = message.api_key
        if version is None:
            version = self.choose_version(api_key, message)
        # A request of another key space (protocol.registry) is encoded and answered in that space.
        body = await self._roundtrip(api_key, version, data, timeout, message)
        try:
            return self.schemas.response(api_key, message.key_space).decode(body, version)
        except DecodeError as exc:
            raise ClientError(f"cannot decode the response: {exc}") from exc

    async def send_unanswered(
        self, name_or_key: str | int, data: dict[str, Any], version: int | None = None
    ) -> None:
        """Sends a request the server never answers (a Produce with ``Acks`` 0), without waiting."""
        if self._closed is not None:
            raise ConnectionClosedError(f"connection is closed: {self._closed}")
        message = (
            self.schemas.request(name_or_key)
            if isinstance(name_or_key, int)
            else self.schemas.message(name_or_key)
        )
        if message.api_key is None or message.type != "request":
            raise ValueError(f"{name_or_key!r} is not a request message")
        if version is None:
            version = self.choose_version(message.api_key)
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        body = self.schemas.request(message.api_key).encode(data, version)
        self._writer.write(
            encode_request(self.schemas, message.api_key, version, correlation_id, self.client_id, body)
        )
        try:
            await self._writer.drain()
        except ConnectionError as exc:
            raise ConnectionClosedError(f"connection lost: {exc}") from None

    async def send_many(
        self, requests: Iterable[tuple[str | int, dict[str, Any]]], timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Pipelines several requests on this connection and returns the responses in order."""
        return list(
            await asyncio.gather(*(self.send(name, data, timeout=timeout) for name, data in requests))
        )

    async def _roundtrip(
        self,
        api_key: int,
        version: int,
        data: dict[str, Any],
        timeout: float | None = None,
        message: Message | None = None,
    ) -> bytes:
        if self._closed is not None:
            raise ConnectionClosedError(f"connection is closed: {self._closed}")
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        body = (message or self.schemas.request(api_key)).encode(data, version)
        frame = encode_request(self.schemas, api_key, version, correlation_id, self.client_id, body)
        future: asyncio.Future[tuple[bytes, int]] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = _Pending(
            future, response_header_version(self.schemas, api_key, version)
        )
        self._writer.write(frame)
        limit = self.request_timeout if timeout is None else timeout
        answered = False
        try:
            async with asyncio.timeout(limit):
                await self._writer.drain()
                payload, offset = await future
                answered = True
        except TimeoutError:
            raise RequestTimedOutError(
                f"apiKey {api_key} v{version}: no response within {limit:g}s"
            ) from None
        except ConnectionError as exc:
            raise ConnectionClosedError(f"connection lost: {exc}") from None
        finally:
            self._pending.pop(correlation_id, None)
            if not answered:
                self._abandoned.add(correlation_id)
        return payload[offset:]

    async def _read_responses(self) -> None:
        reason: BaseException
        try:
            while True:
                size = _SIZE.unpack(await self._reader.readexactly(4))[0]
                if size < 4:
                    raise ClientError(f"server sent a frame of size {size}")
                frame = await self._reader.readexactly(size)
                correlation_id = _SIZE.unpack_from(frame)[0]
                pending = self._pending.get(correlation_id)
                if pending is None:
                    if correlation_id in self._abandoned:  # a late answer to a request given up on
                        self._abandoned.discard(correlation_id)
                        log.debug("late response with correlation id %d dropped", correlation_id)
                    else:
                        log.warning("response with unknown correlation id %d dropped", correlation_id)
                    continue
                _, offset = parse_response_header(frame, pending.header_version)
                if not pending.future.done():
                    pending.future.set_result((frame, offset))
        except asyncio.IncompleteReadError:
            reason = ConnectionClosedError("the server closed the connection")
        except (ConnectionError, OSError) as exc:
            reason = ConnectionClosedError(f"connection lost: {exc}")
        except asyncio.CancelledError:
            reason = ConnectionClosedError("the client was closed")
        except Exception as exc:  # noqa: BLE001 - any read failure ends the connection for all waiters
            reason = ConnectionClosedError(f"bad response stream: {exc}")
        self._closed = reason
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(reason)

    async def close(self) -> None:
        self._reader_task.cancel()
        with contextlib.suppress(BaseException):
            await self._reader_task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def create_replica_placement(
        self,
        num_partitions: int,
        replication_factor: int,
        node_ids: Iterable[int] = (),
        force_simple: bool = False,
        topic: str | None = None,
        start_partition: int = 0,
        timeout_ms: int = 60000,
    ) -> list[list[int]]:
        """CreateReplicaPlacement (apiKey 68): the replica lists, leader first, or ErrorResponse."""
        response = await self.send(
            ApiKey.CREATE_REPLICA_PLACEMENT,
            {
                "NumPartitions": num_partitions,
                "ReplicationFactor": replication_factor,
                "ForceSimplePlacement": force_simple,
                "NodeId": list(node_ids),
                "timeoutMs": timeout_ms,
                "TopicName": topic,
                "StartPartition": start_partition,
            },
            timeout=max(self.request_timeout, timeout_ms / 1000 + 5),
        )
        if response["ErrorCode"] != 0:
            raise ErrorResponse(response["ErrorCode"], response.get("ErrorMessage"))
        return [list(p["Replicas"]) for p in response["ReplicaPlacement"]]

    # ------------------------------------------------------------------------------------- controls

    async def _control(self, api_key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
        """A control API (keys 1000 and up; served when ``simulator.control.enable`` is true): the
        response, or ErrorResponse."""
        response = await self.send(api_key, data)
        if response["ErrorCode"] != 0:
            raise ErrorResponse(response["ErrorCode"], response.get("ErrorMessage"))
        return response

    async def stop_broker(self, broker_id: int, mode: str = "crash") -> None:
        """SimulatorBrokerStop (1000): ``crash``, ``hang``, ``isolate`` or ``controlled``."""
        await self._control(ApiKey.SIMULATOR_BROKER_STOP, {"BrokerId": broker_id, "Mode": mode})

    async def start_broker(self, broker_id: int) -> None:
        """SimulatorBrokerStart (1001)."""
        await self._control(ApiKey.SIMULATOR_BROKER_START, {"BrokerId": broker_id})

    async def add_broker(self, broker_id: int, rack: str | None = None) -> None:
        """SimulatorBrokerAdd (1002)."""
        await self._control(ApiKey.SIMULATOR_BROKER_ADD, {"BrokerId": broker_id, "Rack": rack})

    async def remove_broker(self, broker_id: int) -> None:
        """SimulatorBrokerRemove (1003)."""
        await self._control(ApiKey.SIMULATOR_BROKER_REMOVE, {"BrokerId": broker_id})

    async def set_replication(
        self, broker_id: int, delay_ms: int | None = None, records_per_s: float | None = -1
    ) -> None:
        """SimulatorReplication (1004): ``delay_ms`` None and ``records_per_s`` -1 leave them as they are;
        ``records_per_s`` None: no limit."""
        await self._control(
            ApiKey.SIMULATOR_REPLICATION,
            {
                "BrokerId": broker_id,
                "DelayMs": -1 if delay_ms is None else delay_ms,
                "RecordsPerSecond": -1.0 if records_per_s is None else float(records_per_s),
                "Unlimited": records_per_s is None,
            },
        )

    async def produce_load(self, topic: str, records_per_s: float) -> None:
        """SimulatorProduceLoad (1005): records per second per partition of ``topic`` (0 stops it)."""
        await self._control(
            ApiKey.SIMULATOR_PRODUCE_LOAD, {"Topic": topic, "RecordsPerSecond": float(records_per_s)}
        )

    async def advance_clock(self, ms: int) -> int:
        """SimulatorClockAdvance (1006): the virtual clock's new time, in ms."""
        response = await self._control(ApiKey.SIMULATOR_CLOCK_ADVANCE, {"Ms": ms})
        return int(response["NowMs"])

    async def partition_state(
        self, topics: Iterable[str | tuple[str, Iterable[int]]] | None = None
    ) -> list[dict[str, Any]]:
        """SimulatorPartitionState (1007): the response's topics (every topic when ``topics`` is None; a
        name alone: every partition of it)."""
        wanted = None
        if topics is not None:
            wanted = [
                {"Name": t, "Partitions": []}
                if isinstance(t, str)
                else {"Name": t[0], "Partitions": list(t[1])}
                for t in topics
            ]
        response = await self._control(ApiKey.SIMULATOR_PARTITION_STATE, {"Topics": wanted})
        topics_state: list[dict[str, Any]] = response["Topics"]
        return topics_state

    async def events(self, since: int = 0, max_events: int = 10000) -> tuple[int, list[dict[str, Any]]]:
        """SimulatorEvents (1008): the newest sequence number and the events after ``since``."""
        response = await self._control(ApiKey.SIMULATOR_EVENTS, {"SinceSeq": since, "MaxEvents": max_events})
        return int(response["LastSeq"]), list(response["Events"])

    async def load_scenario(self, text: str, source: str | None = None) -> dict[str, Any]:
        """SimulatorScenarioLoad (1012): a scenario file's steps scheduled from now; the answer's ``Steps``,
        ``StartMs`` and ``Ignored`` (the parts of the file a running server does not apply)."""
        request = {"Scenario": text.encode("utf-8"), "Source": source}
        return await self._control(ApiKey.SIMULATOR_SCENARIO_LOAD, request)

    async def add_faults(self, faults: Iterable[dict[str, Any]]) -> list[int]:
        """SimulatorFaultsAdd (1009): faults as the request's entries (``FaultSpec.to_wire()``); their ids."""
        response = await self._control(ApiKey.SIMULATOR_FAULTS_ADD, {"Faults": list(faults)})
        return list(response["Ids"])

    async def list_faults(self) -> list[dict[str, Any]]:
        """SimulatorFaultsList (1010): each fault's Id, Spec (compact text), Calls and Fired."""
        response = await self._control(ApiKey.SIMULATOR_FAULTS_LIST, {})
        return list(response["Faults"])

    async def clear_faults(self, ids: Iterable[int] | None = None) -> int:
        """SimulatorFaultsClear (1011): removes those faults (None: all); how many were removed."""
        response = await self._control(
            ApiKey.SIMULATOR_FAULTS_CLEAR, {"Ids": None if ids is None else list(ids)}
        )
        return int(response["Cleared"])


class BlockingClient:
    """A :class:`KafkaClient` for code without an event loop: every call blocks until its answer.

    The client runs on an event loop of its own in a background thread.

    >>> with BlockingClient.connect("127.0.0.1:9092") as client:
    ...     client.create_replica_placement(6, 3)
    """

    def __init__(
        self, client: KafkaClient, loop: asyncio.AbstractEventLoop, thread: threading.Thread
    ) -> None:
        self._client = client
        self._loop = loop
        self._thread = thread

    @classmethod
    def connect(cls, bootstrap: str, **options: Any) -> BlockingClient:
        """Connects like :meth:`KafkaClient.connect` (same options) and negotiates versions."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="placement-sim-client", daemon=True)
        thread.start()
        try:
            client = asyncio.run_coroutine_threadsafe(
                KafkaClient.connect(bootstrap, **options), loop
            ).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(client, loop, thread)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:
        return self._client.api_versions

    def choose_version(self, api_key: int) -> int:
        return self._client.choose_version(api_key)

    def send(
        self,
        name_or_key: str | int,
        data: dict[str, Any],
        version: int | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Sends any request (by message name or apiKey) and returns the decoded response."""
        result: dict[str, Any] = self._run(self._client.send(name_or_key, data, version, timeout))
        return result

    def create_replica_placement(
        self, num_partitions: int, replication_factor: int, **options: Any
    ) -> list[list[int]]:
        """CreateReplicaPlacement (apiKey 68), as :meth:`KafkaClient.create_replica_placement`."""
        result: list[list[int]] = self._run(
            self._client.create_replica_placement(num_partitions, replication_factor, **options)
        )
        return result

    # ------------------------------------------------------------------------------------- controls

    def stop_broker(self, broker_id: int, mode: str = "crash") -> None:
        self._run(self._client.stop_broker(broker_id, mode))

    def start_broker(self, broker_id: int) -> None:
        self._run(self._client.start_broker(broker_id))

    def add_broker(self, broker_id: int, rack: str | None = None) -> None:
        self._run(self._client.add_broker(broker_id, rack))

    def remove_broker(self, broker_id: int) -> None:
        self._run(self._client.remove_broker(broker_id))

    def set_replication(
        self, broker_id: int, delay_ms: int | None = None, records_per_s: float | None = -1
    ) -> None:
        self._run(self._client.set_replication(broker_id, delay_ms, records_per_s))

    def produce_load(self, topic: str, records_per_s: float) -> None:
        self._run(self._client.produce_load(topic, records_per_s))

    def advance_clock(self, ms: int) -> int:
        now: int = self._run(self._client.advance_clock(ms))
        return now

    def partition_state(
        self, topics: Iterable[str | tuple[str, Iterable[int]]] | None = None
    ) -> list[dict[str, Any]]:
        state: list[dict[str, Any]] = self._run(self._client.partition_state(topics))
        return state

    def events(self, since: int = 0, max_events: int = 10000) -> tuple[int, list[dict[str, Any]]]:
        result: tuple[int, list[dict[str, Any]]] = self._run(self._client.events(since, max_events))
        return result

    def load_scenario(self, text: str, source: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._run(self._client.load_scenario(text, source))
        return result

    def add_faults(self, faults: Iterable[dict[str, Any]]) -> list[int]:
        ids: list[int] = self._run(self._client.add_faults(list(faults)))
        return ids

    def list_faults(self) -> list[dict[str, Any]]:
        faults: list[dict[str, Any]] = self._run(self._client.list_faults())
        return faults

    def clear_faults(self, ids: Iterable[int] | None = None) -> int:
        cleared: int = self._run(self._client.clear_faults(None if ids is None else list(ids)))
        return cleared

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
