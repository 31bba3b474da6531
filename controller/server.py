"""The asyncio TCP server: listeners and the per-connection request loop.

Connection rules (as Kafka): a frame size <= 0 or above ``socket.request.max.bytes`` closes the
connection before the body is read; an unknown apiKey, an unsupported version (except ApiVersions,
answered in v0 with UNSUPPORTED_VERSION) or a body that does not decode closes the connection; so does
``connections.max.idle.ms`` without a complete request. Every close is logged with the peer and the
reason and counted in :attr:`Server.stats`. Requests on one connection are answered one at a time in
order (pipelined requests queue in the socket), connections are served concurrently.

Besides the configured (bootstrap) listener, every simulated broker gets a listener of its own on the
same host: port ``simulator.broker.port.base + broker id``, or an ephemeral port when the base is 0
(the default). Metadata and DescribeCluster advertise them; a wildcard host is advertised as
127.0.0.1. All listeners serve the one controller and cluster state; fenced brokers listen too, but
Metadata does not list them (as Kafka).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import Counter
from typing import Any

from controller.app import Controller
from controller.cluster import Process
from controller.config import ServerConfig
from controller.handlers import RequestContext
from controller.image import MetadataImage
from protocol import UNKNOWN_TAGGED_FIELDS, DecodeError
from protocol.framing import (
    FrameError,
    encode_response,
    parse_request_header,
    read_frame,
    response_header_version,
)

log = logging.getLogger(__name__)

__all__ = ["Server"]

_WRITE_HIGH_WATER = 1 << 20
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def _unknown_tags(value: Any, path: str = "") -> list[str]:
    """Where a decoded request holds tagged fields its spec does not know: ``path: tags``."""
    found: list[str] = []
    if isinstance(value, dict):
        tags = value.get(UNKNOWN_TAGGED_FIELDS)
        if tags:
            found.append(f"{path or 'body'}: tag(s) {sorted(tags)}")
        for key, item in value.items():
            if key != UNKNOWN_TAGGED_FIELDS and isinstance(item, (dict, list)):
                found.extend(_unknown_tags(item, f"{path}.{key}" if path else key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                found.extend(_unknown_tags(item, f"{path}[{index}]"))
    return found


class _IdleWatch:
    """``connections.max.idle.ms`` for one connection, without a timer per request.

    The connection sets ``waiting`` while it waits for a request and clears it while it answers one.
    One timer checks, at the earliest moment the limit could be reached, whether the connection has
    been waiting since before then; if so it cancels the connection's task with ``expired`` set,
    otherwise it looks again when the current wait could reach the limit.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        self.expired = False
        self._loop = loop
        self._idle = idle
        self._waiting_since: float | None = None
        self._handle = loop.call_at(loop.time() + idle, self._check)

    @property
    def waiting(self) -> bool:
        return self._waiting_since is not None

    @waiting.setter
    def waiting(self, value: bool) -> None:
        self._waiting_since = self._loop.time() if value else None

    def _check(self) -> None:
        now = self._loop.time()
        since = self._waiting_since
        if since is not None and now - since >= self._idle:
            self.expired = True
            self.task.cancel()
            return
        self._handle = self._loop.call_at((since if since is not None else now) + self._idle, self._check)

    def stop(self) -> None:
        self._handle.cancel()


class _Close(Exception):
    """Ends a connection; the message is the reason that is logged and counted."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class Server:
    """Serves one controller on the configured listener and on one listener per broker.

    The server owns the network side: the listeners, the endpoints it advertises for each broker
    (:attr:`endpoints`) and the connection and request counters (:attr:`stats`).
    """

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.config: ServerConfig = controller.config
        self._bootstrap: asyncio.base_events.Server | None = None
        #: Each broker's listener while it listens (a crashed or stopped broker's is closed).
        self._broker_servers: dict[int, asyncio.base_events.Server] = {}
        #: Open connections, with the broker whose listener took them (None: the bootstrap listener).
        self._connections: dict[asyncio.Task[Any], int | None] = {}
        self.address: tuple[str, int] | None = None
        self._host = ""
        #: The broker listeners as advertised: broker id -> (host, port); kept across a stop and start.
        self.endpoints: dict[int, tuple[str, int]] = {}
        #: Connections, closes by reason and requests by apiKey.
        self.stats: Counter[str] = Counter()
        #: Set while a broker answers; cleared while it hangs (its connections hold their answers).
        self._answering: dict[int, asyncio.Event] = {}
        #: The metadata images of brokers cut off from the controller.
        self._frozen: dict[int, MetadataImage] = {}
        self._ports: dict[int, int] = {}
        controller.dynamics.attach(self)

    @classmethod
    async def create(cls, config: ServerConfig) -> Server:
        """The controller for ``config``, then a server for it (not yet listening: call :meth:`start`)."""
        return cls(await Controller.start(config))

    @property
    def bootstrap(self) -> str:
        assert self.address is not None
        host, port = self.address
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    async def start(self) -> None:
        """Binds the listeners; raises OSError when an address cannot be used (the controller is closed)."""
        listener = self.config.listener
        self._host = listener.host
        try:
            server = await asyncio.start_server(self._on_connection, listener.host, listener.port)
            self._bootstrap = server
            sockname = server.sockets[0].getsockname()
            self.address = (sockname[0], sockname[1])
            await self._start_broker_listeners(listener.host)
        except OSError:
            for started in self._servers:
                started.close()
            self._bootstrap = None
            self._broker_servers.clear()
            await self.controller.close()
            raise
        log.info("listening on %s with placer %s", self.bootstrap, self.controller.placements.placer_label)

    @property
    def _servers(self) -> list[asyncio.base_events.Server]:
        servers = [self._bootstrap] if self._bootstrap is not None else []
        return servers + list(self._broker_servers.values())

    async def _start_broker_listeners(self, host: str) -> None:
        """One listener per broker, recorded in :attr:`endpoints` as the address to advertise."""
        for broker in self.config.brokers:
            await self._listen(broker.id)
        log.info(
            "broker listeners: %s",
            ", ".join(f"{b}={h}:{p}" for b, (h, p) in sorted(self.endpoints.items())),
        )

    async def _listen(self, broker_id: int) -> None:
        """Opens the broker's listener: on its own port again when it had one (addresses stay the same)."""
        host = self._host
        base = self.config.broker_port_base
        port = self._ports.get(broker_id, base + broker_id if base else 0)
        if port > 65535:
            raise OSError(
                f"broker {broker_id}: port {port} (simulator.broker.port.base {base} + id) is above 65535"
            )
        try:
            server = await asyncio.start_server(
                functools.partial(self._on_connection, broker=broker_id), host, port
            )
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot listen for broker {broker_id} on {host}:{port}: {exc.strerror or exc}"
            ) from exc
        self._broker_servers[broker_id] = server
        self._ports[broker_id] = server.sockets[0].getsockname()[1]
        advertised = "127.0.0.1" if host in _WILDCARD_HOSTS else host
        self.endpoints[broker_id] = (advertised, self._ports[broker_id])
        self._answering.setdefault(broker_id, asyncio.Event()).set()

    async def broker_changed(self, broker_id: int, process: Process | None) -> None:
        """The broker's listener follows its process (:class:`controller.dynamics.lifecycle.Network`)."""
        answering = self._answering.setdefault(broker_id, asyncio.Event())
        if process is Process.UP:
            self._frozen.pop(broker_id, None)
            answering.set()
            if broker_id not in self._broker_servers:
                await self._listen(broker_id)
            return
        if process is Process.HUNG:
            answering.clear()
            return
        if process is Process.ISOLATED:
            self._frozen[broker_id] = self.controller.image()
            return
        # Crashed, stopped or removed: the listener closes with every connection it took.
        answering.set()
        server = self._broker_servers.pop(broker_id, None)
        if server is not None:
            server.close()
        doomed = [task for task, owner in self._connections.items() if owner == broker_id]
        for task in doomed:
            task.cancel(f"broker {broker_id} {process.value if process else 'removed'}")
        if doomed:
            await asyncio.gather(*doomed, return_exceptions=True)
        if process is None:
            self.endpoints.pop(broker_id, None)
            self._ports.pop(broker_id, None)

    async def serve_forever(self) -> None:
        """Serves until cancelled (listeners come and go with the brokers' processes)."""
        await asyncio.Event().wait()

    async def stop(self) -> None:
        servers = self._servers
        for server in servers:
            server.close()
        for event in self._answering.values():
            event.set()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._bootstrap = None
        self._broker_servers.clear()
        await self.controller.close()

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: int | None = None
    ) -> None:
        if broker is not None and broker not in self._broker_servers:
            # Accepted just before its broker's listener closed (a crash): closed at once, as the rest.
            state = self.controller.cluster.broker_state(broker)
            why = state.process.value if state is not None and state.registered else "removed"
            self.stats[f"closed:broker {broker} {why}"] += 1
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = broker
        try:
            await self._serve_connection(reader, writer, broker)
        except asyncio.CancelledError:
            # The connection was closed on purpose (shutdown, a crashed broker): the task ends quietly,
            # not cancelled, so that the stream protocol's callback finds no exception to report.
            return
        finally:
            self._connections.pop(task, None)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: int | None
    ) -> None:
        controller = self.controller
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if isinstance(peername, tuple) else str(peername)
        stats = self.stats
        stats["connections"] += 1
        idle = controller.config.idle_ms / 1000
        max_bytes = controller.config.max_request_bytes
        loop = asyncio.get_running_loop()
        pending = bytearray()

        def flush() -> None:
            if pending and not writer.is_closing():
                writer.write(bytes(pending))
            pending.clear()

        watch = _IdleWatch(loop, idle)
        try:
            while True:
                if writer.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                    await writer.drain()  # a client that does not read its responses waits here
                watch.waiting = True
                try:
                    frame = await read_frame(reader, max_bytes)
                except asyncio.CancelledError:
                    if not watch.expired:
                        raise
                    watch.task.uncancel()
                    raise _Close(
                        "idle",
                        f"no complete request within connections.max.idle.ms={controller.config.idle_ms}",
                    ) from None
                except FrameError as exc:
                    raise _Close("bad frame size", str(exc)) from None
                except asyncio.IncompleteReadError:
                    raise _Close("disconnected mid-request") from None
                watch.waiting = False
                if frame is None:
                    stats["closed:client"] += 1
                    log.debug("%s closed the connection", peer)
                    return
                if broker is not None and not self._answering[broker].is_set():
                    await self._answering[broker].wait()  # a hung broker holds its answers
                response = await self._answer(controller, frame, peer, broker)
                # Responses are gathered and written once the requests already received are answered
                # (a flush scheduled for the loop's next turn): pipelined requests cost one send.
                if not pending:
                    loop.call_soon(flush)
                pending += response
                if len(pending) > _WRITE_HIGH_WATER:
                    flush()
                    await writer.drain()
        except _Close as close:
            stats[f"closed:{close.reason}"] += 1
            log.warning(
                "closing connection from %s: %s%s",
                peer,
                close.reason,
                f" ({close.detail})" if close.detail else "",
            )
        except (ConnectionError, OSError) as exc:
            stats["closed:connection error"] += 1
            log.warning("closing connection from %s: connection error (%s)", peer, exc)
        except asyncio.CancelledError as exc:
            reason = exc.args[0] if exc.args else "shutdown"
            stats[f"closed:{reason}"] += 1
            raise
        except Exception:
            stats["closed:internal error"] += 1
            log.exception("closing connection from %s: internal error", peer)
        finally:
            watch.stop()
            flush()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, controller: Controller, frame: bytes, peer: str, broker: int | None) -> bytes:
        """The response frame for one request frame, or _Close."""
        schemas = controller.schemas
        try:
            header, offset = parse_request_header(frame, schemas)
        except DecodeError as exc:
            raise _Close("malformed request header", str(exc)) from None
        api_key, version = header.api_key, header.api_version
        handler = controller.handlers.get(api_key)
        if handler is None:
            raise _Close("unknown apiKey", f"apiKey {api_key}")
        ctx = RequestContext(
            controller,
            header,
            peer,
            broker,
            self.endpoints,
            self._frozen.get(broker) if broker is not None else None,
        )
        if not handler.supports(version):
            if handler.unsupported is None:
                raise _Close("unsupported version", f"apiKey {api_key} version {version}")
            self.stats[f"requests:{api_key}:unsupported"] += 1
            answer, answer_version = handler.unsupported(ctx, version)
            body = schemas.response(api_key).encode(answer, answer_version)
            return encode_response(
                header.correlation_id, response_header_version(schemas, api_key, answer_version), body
            )
        message = schemas.request(api_key)
        try:
            request, end = message.decode_from(frame, offset, version)
        except DecodeError as exc:
            raise _Close("malformed request body", str(exc)) from None
        if end != len(frame):
            # Kafka ignores bytes after a request body (some clients send them), and so do we.
            self.stats["requests:trailing bytes"] += 1
            log.debug(
                "%s: apiKey %d v%d: %d byte(s) after the body ignored",
                peer,
                api_key,
                version,
                len(frame) - end,
            )
        if message.is_flexible(version):
            unknown = _unknown_tags(request)
            if unknown:
                self.stats["requests:unknown tagged fields"] += 1
                log.warning(
                    "%s: apiKey %d v%d: unknown tagged field(s) ignored: %s",
                    peer,
                    api_key,
                    version,
                    ", ".join(unknown),
                )
        log.debug(
            "%s: apiKey %d v%d correlation %d from %s",
            peer,
            api_key,
            version,
            header.correlation_id,
            header.client_id,
        )
        self.stats[f"requests:{api_key}"] += 1
        response = await handler.handle(ctx, request, version)
        body = schemas.response(api_key).encode(response, version)
        return encode_response(
            header.correlation_id, response_header_version(schemas, api_key, version), body
        )
