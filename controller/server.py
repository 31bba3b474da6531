"""The server: listeners, connections and their limits, and turning one request frame into its answer.

Connection rules (as Kafka): a frame size <= 0 or above ``socket.request.max.bytes`` closes the
connection before the body is read; an unknown apiKey, an unsupported version (except ApiVersions, whose
handler answers it in v0 with UNSUPPORTED_VERSION) or a body that does not decode closes the connection;
so does ``connections.max.idle.ms`` without a complete request. Every close is logged with the peer and
the reason and counted in :attr:`Server.stats`. Requests on one connection are answered in order,
connections are served concurrently, and none holds up another (:mod:`controller.connection`).

Limits, with Kafka's names and behaviour: ``max.connections.per.ip`` (a connection past it is closed at
once), ``max.connections`` (past it, new connections wait unread until one closes), ``queued.max.requests``
unanswered requests per connection and ``queued.max.request.bytes`` of frames held by the server (past
them, connections stop reading until there is room again).

A request whose handler says what its answer depends on (``ANSWER_DEPENDS_ON``: Metadata, ApiVersions)
is answered from the answers kept for it (:class:`KeptAnswers`) when the same bytes came before, with
the same image and listeners: a repeated request costs its header.

Every decodable request is answered: a response that cannot be encoded as the handler made it (a
message too long for its field, say) is encoded with its strings cut to what their fields carry, and a
handler that fails answers with its API's error response; the connection is never closed for either.

Besides the configured (bootstrap) listener, every broker has a listener of its own on the same host:
port ``simulator.broker.port.base + broker id``, or an ephemeral port when the base is 0. Metadata and
DescribeCluster advertise them; a wildcard host is advertised as 127.0.0.1. A broker's listener follows
its process (:mod:`controller.dynamics.lifecycle`): closed when it crashes or stops (on the same port
when it comes back), holding every answer while it hangs, answering from the metadata it had while it
is isolated from the controller.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from controller.app import Controller
from controller.cluster import Process
from controller.config import ServerConfig
from controller.connection import Close, Connection, Later
from controller.handlers import Handler, RequestContext
from controller.image import MetadataImage
from controller.logsafe import shown
from controller.offload import BIG, BIG_BODY, Sized, in_thread
from controller.security import Security
from protocol import UNKNOWN_TAGGED_FIELDS, DecodeError, EncodeError
from protocol.codec import Message
from protocol.errors import error_by_name
from protocol.framing import encode_response, parse_request_header, response_header_version

log = logging.getLogger(__name__)

__all__ = ["Server"]

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")
#: How long a listener waits before accepting again after an accept error (out of file descriptors, say).
ACCEPT_RETRY_SECONDS = 0.1
#: The longest string a non-compact string field carries (int16 length), in bytes.
_MAX_STRING = 0x7FFF


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


def _fit_strings(value: Any) -> Any:
    """A response with every string cut to what a string field carries (32,767 bytes of UTF-8)."""
    if isinstance(value, str):
        data = value.encode("utf-8")
        if len(data) <= _MAX_STRING:
            return value
        note = f"... (cut from {len(data):,} bytes)"
        return data[: _MAX_STRING - len(note)].decode("utf-8", "ignore") + note
    if isinstance(value, dict):
        return {k: _fit_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fit_strings(v) for v in value]
    return value


class _RateLimited:
    """At most one log line per second for a kind of error, with the count of those it held back."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._held: Counter[str] = Counter()

    def allow(self, kind: str) -> int | None:
        """None to stay quiet; otherwise how many were held back since the last line."""
        now = time.monotonic()
        if now - self._last.get(kind, 0.0) < 1.0:
            self._held[kind] += 1
            return None
        self._last[kind] = now
        held, self._held[kind] = self._held[kind], 0
        return held


#: Kept answers (:class:`KeptAnswers`): for request bodies up to this size (bytes), ...
KEPT_REQUEST_BYTES = 16 * 1024
#: ... answers up to this size, ...
KEPT_ANSWER_BYTES = 1 << 20
#: ... at most this many answers and this many bytes in all, per image (or for the server).
KEPT_ANSWERS = 1024
KEPT_BYTES = 16 << 20


class KeptAnswers:
    """Encoded answers to requests seen before, for handlers whose answers depend on the request (and the
    image: one store per metadata image, kept with it) alone: (apiKey, version, request body) -> response
    body, made for the advertised listeners of :attr:`endpoints` (a version of them). Bounded in count and
    bytes: a client sending ever new requests fills it, then its answers are made each time."""

    __slots__ = ("answers", "endpoints", "size")

    def __init__(self, endpoints: int) -> None:
        self.endpoints = endpoints
        self.answers: dict[tuple[int, int, bytes], bytes] = {}
        self.size = 0

    def keep(self, key: tuple[int, int, bytes], body: bytes) -> None:
        size = len(body) + len(key[2])
        if (
            len(self.answers) < KEPT_ANSWERS
            and len(body) <= KEPT_ANSWER_BYTES
            and self.size + size <= KEPT_BYTES
        ):
            self.answers[key] = body
            self.size += size


@dataclass(frozen=True, slots=True)
class _Route:
    """How the requests of one API version are served: worked out at its first request."""

    handler: Handler
    #: The request's codec; None for a version the handler does not support (answered as it says).
    request: Message | None
    flexible: bool
    #: The stats key counting these requests.
    counter: str
    version: int
    #: The handler's ``answer_depends_on`` for a supported version (None: answers are never kept).
    kept: str | None = None
    response_header_version: int = 0


class Listener:
    """A listening socket and its own accept loop.

    Accepted sockets are handed to the event loop as connections of their own, so that closing the
    listener (a broker that crashes) never races with connections being set up: what was accepted is
    served or closed by its broker's rules, what was not is refused by the system. Pausing stops
    accepting and leaves new connections waiting in the backlog (``max.connections``).
    """

    def __init__(self, server: Server, broker: int | None) -> None:
        self.server = server
        self.broker = broker
        self.sock: socket.socket | None = None
        self._accepting = False
        self._pending: set[asyncio.Task[Any]] = set()

    def open(self, host: str, port: int) -> tuple[str, int]:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(1024)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self.resume()
        name = sock.getsockname()
        return str(name[0]), int(name[1])

    def resume(self) -> None:
        if self.sock is not None and not self._accepting:
            asyncio.get_running_loop().add_reader(self.sock.fileno(), self._accept)
            self._accepting = True

    def pause(self) -> None:
        if self.sock is not None and self._accepting:
            asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self._accepting = False

    def _accept(self) -> None:
        assert self.sock is not None
        loop = asyncio.get_running_loop()
        for _ in range(64):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say: logged at most once a second
                self.server.accept_failed(exc)
                # The pending connection keeps the socket readable: retrying at once would spin the loop.
                self.pause()
                loop.call_later(ACCEPT_RETRY_SECONDS, self._retry)
                return
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self.server.security.accept(loop, self._connection, conn))  # TLS, if any
            self._pending.add(task)
            self.server.setting_up += 1
            task.add_done_callback(self._set_up)
            if self.server.full():
                self.pause()
                return

    def _retry(self) -> None:
        if self.server.has_room():
            self.resume()

    def _connection(self) -> Connection:
        conn = Connection(self.server, self.broker)
        conn.auth = self.server.security.session()  # SASL listeners: the exchange's state
        return conn

    def _set_up(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        self.server.set_up()
        if not task.cancelled() and task.exception() is not None:
            log.debug("a connection could not be set up: %s", task.exception())

    def close(self) -> None:
        self.pause()
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class Server:
    """Serves one controller on the configured listener and on one listener per broker.

    The server owns the network side: the listeners, the endpoints it advertises for each broker
    (:attr:`endpoints`), the connections and the connection and request counters (:attr:`stats`).
    """

    def __init__(self, controller: Controller, security: Security | None = None) -> None:
        self.controller = controller
        self.config: ServerConfig = controller.config
        self._bootstrap: Listener | None = None
        #: Each broker's listener while it listens (a crashed or stopped broker's is closed).
        self._broker_servers: dict[int, Listener] = {}
        self._connections: set[Connection] = set()
        self._per_ip: Counter[str] = Counter()
        self.address: tuple[str, int] | None = None
        self._host = ""
        #: The broker listeners as advertised: broker id -> (host, port); kept across a stop and start.
        self.endpoints: dict[int, tuple[str, int]] = {}
        #: Changes with :attr:`endpoints` (answers kept for other listeners are not given).
        self._endpoints_version = 0
        #: Answers that depend on the request alone (answers that depend on the image are kept with it).
        self._kept = KeptAnswers(0)
        self._ports: dict[int, int] = {}
        #: Connections, closes by reason and requests by apiKey.
        self.stats: Counter[str] = Counter()
        #: Brokers that hang: their connections read but hold every answer.
        self._hung: set[int] = set()
        #: The metadata images of brokers cut off from the controller.
        self._frozen: dict[int, MetadataImage] = {}
        self._routes: dict[tuple[int, int], _Route] = {}
        #: Bytes of frames held by all connections (``queued.max.request.bytes``), and who waits for room.
        self.held_bytes = 0
        self._blocked: set[Connection] = set()
        #: Accepted connections whose set-up (TLS handshake, if any) is not finished: they count against
        #: ``max.connections`` too.
        self.setting_up = 0
        self._rate = _RateLimited()
        self._previous_handler: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: TLS and SASL on every listener (controller.security).
        self.security = (security or Security(self.config)).attach(self.stats)
        controller.dynamics.attach(self)

    @classmethod
    async def create(cls, config: ServerConfig) -> Server:
        """The controller for ``config``, then a server for it (not yet listening: call :meth:`start`)."""
        security = Security(config)  # a ConfigError for unusable key material comes before anything starts
        return cls(await Controller.start(config), security)

    @property
    def bootstrap(self) -> str:
        assert self.address is not None
        host, port = self.address
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    # ------------------------------------------------------------------------------------- listeners

    async def start(self) -> None:
        """Binds the listeners; raises OSError when an address cannot be used (the controller is closed)."""
        listener = self.config.listener
        self._host = listener.host
        loop = self._loop = asyncio.get_running_loop()
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        try:
            self._bootstrap = Listener(self, None)
            self.address = self._bootstrap.open(listener.host, listener.port)
            for broker in self.config.brokers:
                await self._listen(broker.id)
        except OSError:
            for started in self._servers:
                started.close()
            self._bootstrap = None
            self._broker_servers.clear()
            loop.set_exception_handler(self._previous_handler)
            await self.controller.close()
            raise
        log.info(
            "listening on %s with placer %s and election policy %s",
            self.bootstrap,
            self.controller.placements.placer_label,
            self.controller.dynamics.elections.policy_label,
        )
        log.info(
            "broker listeners: %s", ", ".join(f"{b}={h}:{p}" for b, (h, p) in sorted(self.endpoints.items()))
        )

    @property
    def _servers(self) -> list[Listener]:
        servers = [self._bootstrap] if self._bootstrap is not None else []
        return servers + list(self._broker_servers.values())

    async def _listen(self, broker_id: int) -> None:
        """Opens the broker's listener: on its own port again when it had one (addresses stay the same)."""
        host = self._host
        base = self.config.broker_port_base
        port = self._ports.get(broker_id, base + broker_id if base else 0)
        if port > 65535:
            raise OSError(
                f"broker {broker_id}: port {port} (simulator.broker.port.base {base} + id) is above 65535"
            )
        server = Listener(self, broker_id)
        try:
            _, bound = server.open(host, port)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot listen for broker {broker_id} on {host}:{port}: {exc.strerror or exc}"
            ) from exc
        self._broker_servers[broker_id] = server
        self._ports[broker_id] = bound
        advertised = "127.0.0.1" if host in _WILDCARD_HOSTS else host
        if self.endpoints.get(broker_id) != (advertised, self._ports[broker_id]):
            self.endpoints[broker_id] = (advertised, self._ports[broker_id])
            self._endpoints_version += 1

    async def broker_changed(self, broker_id: int, process: Process | None) -> None:
        """The broker's listener follows its process (:class:`controller.dynamics.lifecycle.Network`)."""
        if process is Process.UP:
            self._frozen.pop(broker_id, None)
            if broker_id in self._hung:
                self._hung.discard(broker_id)
                for conn in list(self._connections):
                    if conn.broker == broker_id:
                        conn.resume()
            if broker_id not in self._broker_servers:
                await self._listen(broker_id)
            return
        if process is Process.HUNG:
            self._hung.add(broker_id)
            return
        if process is Process.ISOLATED:
            self._frozen[broker_id] = self.controller.image()
            return
        # Crashed, stopped or removed: the listener closes with every connection it took.
        self._hung.discard(broker_id)
        server = self._broker_servers.pop(broker_id, None)
        if server is not None:
            server.close()
        reason = f"broker {broker_id} {process.value if process else 'removed'}"
        for conn in [c for c in self._connections if c.broker == broker_id]:
            conn.abort(reason)
        if process is None:
            if self.endpoints.pop(broker_id, None) is not None:
                self._endpoints_version += 1
            self._ports.pop(broker_id, None)

    async def serve_forever(self) -> None:
        """Serves until cancelled (listeners come and go with the brokers' processes)."""
        await asyncio.Event().wait()

    async def stop(self) -> None:
        """Closes the listeners and every connection (without a traceback), then the controller."""
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            conn.abort("shutdown")
        await asyncio.sleep(0)  # let the transports finish closing
        self._bootstrap = None
        self._broker_servers.clear()
        await self.controller.close()
        if self._loop is not None:
            self._loop.set_exception_handler(self._previous_handler)

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def accept_failed(self, exc: OSError) -> None:
        """Repeated accept errors (out of file descriptors, say) make one log line a second, with a count."""
        held = self._rate.allow("accept")
        if held is not None:
            log.error(
                "cannot accept a connection: %s%s", exc, f" ({held} more since the last line)" if held else ""
            )

    def has_room(self) -> bool:
        """Whether fewer than ``max.connections`` are served or being set up."""
        return len(self._connections) + self.setting_up < self.config.max_connections

    def set_up(self) -> None:
        """An accepted connection is set up (served, refused, or failed its TLS handshake)."""
        self.setting_up -= 1
        if self.has_room():
            for listener in self._servers:
                listener.resume()

    def full(self) -> bool:
        """Whether ``max.connections`` are served: the listeners stop accepting until one closes."""
        full = not self.has_room()
        if full:
            self.stats["listeners paused: max.connections"] += 1
        return full

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if "accept" in message:
            exc = context.get("exception")
            self.accept_failed(exc if isinstance(exc, OSError) else OSError(message))
            return
        if self._previous_handler is not None:
            self._previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    # ------------------------------------------------------------------------------------- connections

    def connection_made(self, conn: Connection) -> None:
        self.stats["connections"] += 1
        broker = conn.broker
        if broker is not None and broker not in self._broker_servers:
            # Accepted just before its broker's listener closed (a crash): closed at once, as the rest.
            state = self.controller.cluster.broker_state(broker)
            why = state.process.value if state is not None and state.registered else "removed"
            conn.abort(f"broker {broker} {why}")
            self.stats[f"closed:broker {broker} {why}"] += 1
            return
        if self._per_ip[conn.ip] >= self.config.max_connections_per_ip:
            conn.close(
                Close(
                    "too many connections from one address",
                    f"{conn.ip} has {self._per_ip[conn.ip]} (max.connections.per.ip={self.config.max_connections_per_ip})",
                )
            )
            self.stats["closed:too many connections from one address"] += 1
            return
        self._per_ip[conn.ip] += 1
        self._connections.add(conn)
        conn.admit()

    def connection_lost(self, conn: Connection, reason: str) -> None:
        if conn not in self._connections:
            return  # refused in connection_made, already counted
        self._connections.discard(conn)
        self._blocked.discard(conn)
        self._per_ip[conn.ip] -= 1
        if self._per_ip[conn.ip] <= 0:
            del self._per_ip[conn.ip]
        self.stats[f"closed:{reason}"] += 1
        if self.has_room():
            for listener in self._servers:
                listener.resume()

    def log_close(self, conn: Connection, close: Close) -> None:
        log.warning(
            "closing connection from %s: %s%s",
            conn.peer,
            close.reason,
            f" ({shown(close.detail)})" if close.detail else "",
        )

    def answering(self, conn: Connection) -> bool:
        return conn.broker is None or conn.broker not in self._hung

    def hold(self, size: int) -> None:
        self.held_bytes += size

    def release(self, size: int) -> None:
        self.held_bytes -= size
        if self._blocked and self.held_bytes < self.config.queued_max_request_bytes:
            blocked, self._blocked = self._blocked, set()
            for conn in blocked:
                conn._flow()

    def blocked(self, conn: Connection) -> None:
        self._blocked.add(conn)

    # ------------------------------------------------------------------------------------- answering

    def answer(self, conn: Connection, frame: bytes) -> bytes | Later:
        """The response frame for one request frame (or the work that makes it); raises Close."""
        if conn.auth is not None and not conn.auth.authenticated:
            return conn.auth.answer(self, conn, frame)  # the SASL exchange (controller.security)
        return self.serve(conn, frame)

    def serve(self, conn: Connection, frame: bytes) -> bytes | Later:
        """The response frame for one request frame, whatever the connection's security state."""
        try:
            header, offset = parse_request_header(frame, self.controller.schemas)
        except DecodeError as exc:
            raise Close("malformed request header", str(exc)) from None
        route = self._routes.get((header.api_key, header.api_version))
        if route is None:
            route = self._route(header.api_key, header.api_version)
        broker = conn.broker
        key: tuple[int, int, bytes] | None = None
        if route.kept is not None and len(frame) - offset <= KEPT_REQUEST_BYTES:
            key = (header.api_key, header.api_version, frame[offset:])
            kept = self._kept_answers(route, broker)
            body = kept.answers.get(key) if kept is not None else None
            if body is not None:
                self.stats[route.counter] += 1
                if log.isEnabledFor(logging.DEBUG):
                    self._log_request(conn, header)
                return encode_response(header.correlation_id, route.response_header_version, body)
        ctx = RequestContext(
            self.controller,
            header,
            conn.peer,
            broker,
            self.endpoints,
            self._frozen.get(broker) if broker is not None else None,
            conn,
        )
        if route.request is None:
            return self._unsupported(route.handler, ctx)
        if len(frame) - offset > BIG_BODY:  # a big body is decoded off the event loop

            async def decoded() -> tuple[dict[str, Any], list[str], bool]:
                return await in_thread(self._decode, route, frame, offset)

            def handled(result: tuple[dict[str, Any], list[str], bool]) -> bytes | Later:
                return self._handle(conn, ctx, route, *result)

            def undecodable(exc: Exception) -> bytes:
                raise Close("malformed request body", f"{type(exc).__name__}: {exc}")

            return Later(decoded(), handled, undecodable)
        return self._handle(conn, ctx, route, *self._decode(route, frame, offset), key)

    def _kept_answers(self, route: _Route, broker: int | None) -> KeptAnswers | None:
        """Where the route's answers are kept now: the server's, or the image's the broker answers from
        (None while the current image is out of date: it is made by the next request that needs it)."""
        if route.kept == "request":
            return self._kept
        image = self._frozen.get(broker) if broker is not None else None
        if image is None:
            image = self.controller.current_image()
            if image is None:
                return None
        kept = image.derived.get(KeptAnswers)
        if not isinstance(kept, KeptAnswers) or kept.endpoints != self._endpoints_version:
            kept = image.derived[KeptAnswers] = KeptAnswers(self._endpoints_version)
        return kept

    def _log_request(self, conn: Connection, header: Any) -> None:
        log.debug(
            "%s: apiKey %d v%d correlation %d from %s",
            conn.peer,
            header.api_key,
            header.api_version,
            header.correlation_id,
            shown(header.client_id, 100),
        )

    def _route(self, api_key: int, version: int) -> _Route:
        """How requests of one API version are served (kept for the supported versions); raises Close for
        an API the server does not serve and for an unsupported version its handler has no answer for."""
        handler = self.controller.handlers.get(api_key)
        if handler is None:
            raise Close("unknown apiKey", f"apiKey {api_key}")
        if not handler.supports(version):
            if handler.unsupported is None:
                raise Close("unsupported version", f"apiKey {api_key} version {version}")
            return _Route(handler, None, False, f"requests:{api_key}:unsupported", version)
        request = self.controller.schemas.request(api_key)
        route = _Route(
            handler,
            request,
            request.is_flexible(version),
            f"requests:{api_key}",
            version,
            handler.answer_depends_on,
            response_header_version(self.controller.schemas, api_key, version),
        )
        self._routes[(api_key, version)] = route
        return route

    def _unsupported(self, handler: Handler, ctx: RequestContext) -> bytes:
        """Kafka's answer to a version it does not support (ApiVersions: UNSUPPORTED_VERSION in v0)."""
        assert handler.unsupported is not None
        schemas = self.controller.schemas
        api_key, version = handler.api_key, ctx.header.api_version
        self.stats[f"requests:{api_key}:unsupported"] += 1
        answer, answer_version = handler.unsupported(ctx, version)
        body = schemas.response(api_key).encode(answer, answer_version)
        return encode_response(
            ctx.header.correlation_id, response_header_version(schemas, api_key, answer_version), body
        )

    @staticmethod
    def _decode(route: _Route, frame: bytes, offset: int) -> tuple[dict[str, Any], list[str], bool]:
        """The request body, where it holds tagged fields its spec does not know, and whether bytes
        follow it. Touches no shared state: big bodies are decoded in a worker thread."""
        assert route.request is not None
        try:
            request, end = route.request.decode_from(frame, offset, route.version)
        except DecodeError as exc:
            raise Close("malformed request body", str(exc)) from None
        return request, _unknown_tags(request) if route.flexible else [], end != len(frame)

    def _handle(
        self,
        conn: Connection,
        ctx: RequestContext,
        route: _Route,
        request: dict[str, Any],
        unknown: list[str],
        trailing: bool,
        key: tuple[int, int, bytes] | None = None,
    ) -> bytes | Later:
        """Calls the handler and encodes its answer (keeping it, under ``key``, when its route says so)."""
        header, handler = ctx.header, route.handler
        version = header.api_version
        if trailing:
            # Kafka ignores bytes after a request body (some clients send them), and so do we.
            self.stats["requests:trailing bytes"] += 1
        if unknown:
            self.stats["requests:unknown tagged fields"] += 1
            log.warning(
                "%s: apiKey %d v%d: unknown tagged field(s) ignored: %s",
                conn.peer,
                handler.api_key,
                version,
                shown(", ".join(unknown)),
            )
        if log.isEnabledFor(logging.DEBUG):
            self._log_request(conn, header)
        self.stats[route.counter] += 1
        try:
            result = handler.handle(ctx, request, version)
        except Exception as exc:  # a bug in a handler: the request is still answered
            return self._failed(handler, request, version, header.correlation_id, exc)
        if key is not None and not trailing and not unknown:
            if isinstance(result, Sized) and result.size <= BIG:
                result = result.made()
            body = self._kept_body(route, result)
            if body is not None:
                kept = self._kept_answers(route, ctx.listener_broker)
                if kept is not None:
                    kept.keep(key, body)
                return encode_response(header.correlation_id, route.response_header_version, body)
        if isinstance(result, (dict, bytes)):
            return self._encode(handler, request, version, header.correlation_id, result)
        if isinstance(result, Sized):
            return self._encode_later(handler, request, version, header.correlation_id, result)
        if inspect.isawaitable(result):
            return self._answer_later(handler, request, version, header.correlation_id, result)
        return self._encode(handler, request, version, header.correlation_id, result)

    def _kept_body(self, route: _Route, result: Any) -> bytes | None:
        """The encoded body of an answer given at once (None for one that is not, or does not encode as it
        is: the usual path answers it)."""
        if isinstance(result, bytes):
            return result
        if isinstance(result, dict):
            try:
                return self.controller.schemas.response(route.handler.api_key).encode(result, route.version)
            except EncodeError:
                return None
        return None

    def _encode_later(
        self, handler: Handler, request: dict[str, Any], version: int, correlation: int, answer: Sized
    ) -> bytes | Later:
        if answer.size <= BIG:
            return self._encode(handler, request, version, correlation, answer.made())

        def made_and_encoded() -> bytes:
            return self._encode(handler, request, version, correlation, answer.made())

        async def encode() -> Any:
            return await in_thread(made_and_encoded)

        return Later(
            encode(),
            lambda frame: frame,
            lambda exc: self._failed(handler, request, version, correlation, exc),
        )

    def _answer_later(
        self,
        handler: Handler,
        request: dict[str, Any],
        version: int,
        correlation: int,
        pending: Awaitable[Any],
    ) -> Later:
        def finish(result: Any) -> bytes | Later:
            if isinstance(result, Sized):
                return self._encode_later(handler, request, version, correlation, result)
            return self._encode(handler, request, version, correlation, result)

        def fail(exc: Exception) -> bytes:
            return self._failed(handler, request, version, correlation, exc)

        return Later(pending, finish, fail)

    def _encode(
        self, handler: Handler, request: dict[str, Any], version: int, correlation: int, result: Any
    ) -> bytes:
        schemas = self.controller.schemas
        api_key = handler.api_key
        header_version = response_header_version(schemas, api_key, version)
        if isinstance(result, (bytes, bytearray)):  # a handler that keeps its answers encoded
            return encode_response(correlation, header_version, bytes(result))
        response = schemas.response(api_key)
        try:
            return encode_response(correlation, header_version, response.encode(result, version))
        except EncodeError as first:
            try:
                body = response.encode(_fit_strings(result), version)
            except EncodeError:
                return self._failed(handler, request, version, correlation, first)
            self.stats["responses:strings cut to fit"] += 1
            log.warning("apiKey %d v%d: strings cut to fit their fields (%s)", api_key, version, shown(first))
            return encode_response(correlation, header_version, body)

    def _failed(
        self, handler: Handler, request: dict[str, Any], version: int, correlation: int, exc: BaseException
    ) -> bytes:
        """A handler that failed, or an answer that does not encode: a bug, logged, and the request is
        answered with its API's error response when the handler module provides one."""
        self.stats["requests:internal error"] += 1
        log.error("apiKey %d v%d failed: %s", handler.api_key, version, shown(exc), exc_info=exc)
        if handler.error_response is None:
            raise Close("internal error", f"{type(exc).__name__}: {exc}")
        code = error_by_name("UNKNOWN_SERVER_ERROR").code
        data = handler.error_response(request, version, code, f"{type(exc).__name__}: {exc}")
        schemas = self.controller.schemas
        body = schemas.response(handler.api_key).encode(_fit_strings(data), version)
        return encode_response(correlation, response_header_version(schemas, handler.api_key, version), body)
