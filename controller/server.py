"""The server: listeners, and admission of connections with their limits.

Connection rules (as Kafka): a frame size <= 0 or above ``socket.request.max.bytes`` closes the
connection before the body is read, and ``connections.max.idle.ms`` without a complete request closes
it; what a frame gets is the dispatch's (:mod:`controller.dispatch`). Every close is logged with the peer
and the reason and counted in :attr:`Server.stats`. Requests on one connection are answered in order,
connections are served concurrently, and none holds up another (:mod:`controller.connection`).

Limits, with Kafka's names and behaviour: ``max.connections.per.ip`` (a connection past it is closed at
once), ``max.connections`` (past it, new connections wait unread until one closes), ``queued.max.requests``
unanswered requests per connection and ``queued.max.request.bytes`` of frames held by the server (past
them, connections stop reading until there is room again).

Besides the configured (bootstrap) listener, every broker has a listener of its own on the same host:
port ``simulator.broker.port.base + simulator.broker.port.step * broker id``, or an ephemeral port when the base is 0. Metadata and
DescribeCluster advertise them; a wildcard host is advertised as 127.0.0.1. A broker's listener follows
its process (:mod:`controller.dynamics.lifecycle`): closed when it crashes or stops (on the same port
when it comes back), holding every answer while it hangs, answering from the metadata it had while it
is isolated from the controller.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from controller.answers import Close
from controller.app import Controller
from controller.cluster import Process
from controller.config import ServerConfig
from controller.connection import Connection, ConnectionLimits
from controller.dispatch import Dispatcher, Origin
from controller.logsafe import shown
from controller.security import Security

if TYPE_CHECKING:
    from controller.data_path import LostRecords
    from controller.faults import Faults
    from controller.groups.durable import LostCommit
    from controller.topic_admin import TopicResult
    from controller.transactions.state_log import LostTxnRecord

log = logging.getLogger(__name__)

__all__ = ["Server"]

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")
#: How long a listener waits before accepting again after an accept error (out of file descriptors, say).
ACCEPT_RETRY_SECONDS = 0.1


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
        # An ASCII host goes as bytes: a str host is encoded with the "idna" codec, whose import (with
        # stringprep and unicodedata) is a good part of a server's start, and gives the same bytes.
        name: str | bytes | None = (host.encode("ascii") if host.isascii() else host) if host else None
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
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
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say: logged at most once a second
                self.server.accept_failed(exc)
                # The pending connection keeps the socket readable: retrying at once would spin the loop.
                self.pause()
                loop.call_later(ACCEPT_RETRY_SECONDS, self._retry)
                return
            ip = str(address[0]) if isinstance(address, tuple) else str(address)
            if not self.server.admit_address(ip):
                conn.close()
                continue
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self.server.security.accept(loop, self._connection, conn))  # TLS, if any
            self._pending.add(task)
            self.server.setting_up += 1
            task.add_done_callback(functools.partial(self._set_up, ip))
            if self.server.full():
                self.pause()
                return

    def _retry(self) -> None:
        if self.server.has_room():
            self.resume()

    def _connection(self) -> Connection:
        return Connection(self.server, self.server.limits, self.broker)

    def _set_up(self, ip: str, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        self.server.set_up()
        failed = task.cancelled() or task.exception() is not None or task.result() is None
        if not task.cancelled() and task.exception() is not None:
            log.debug("a connection could not be set up: %s", task.exception())
        if failed:  # no connection was made (a failed TLS handshake): its address's slot is free again
            self.server.forget_address(ip)

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
        config = self.config
        self.limits = ConnectionLimits(
            config.max_request_bytes,
            config.queued_max_requests,
            config.queued_max_request_bytes,
            config.idle_ms,
        )
        self._bootstrap: Listener | None = None
        #: Each broker's listener while it listens (a crashed or stopped broker's is closed).
        self._broker_servers: dict[int, Listener] = {}
        self._connections: set[Connection] = set()
        self._per_ip: Counter[str] = Counter()
        self.address: tuple[str, int] | None = None
        self._host = ""
        self._ports: dict[int, int] = {}
        #: Connections, closes by reason and requests by apiKey.
        self.stats: Counter[str] = Counter()
        #: Turns request frames into answers.
        self.dispatcher = Dispatcher(controller, self.stats)
        #: Brokers that hang: their connections read but hold every answer.
        self._hung: set[int] = set()
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

    @property
    def connections(self) -> tuple[Connection, ...]:
        """The connections served now (read on the server's loop)."""
        return tuple(self._connections)

    @property
    def faults(self) -> Faults:
        """The request faults the server acts on (:mod:`controller.faults`)."""
        return self.controller.faults

    @property
    def endpoints(self) -> dict[int, tuple[str, int]]:
        """The broker listeners as advertised: broker id -> (host, port); kept across a stop and start."""
        return self.dispatcher.endpoints

    @property
    def bootstrap(self) -> str:
        assert self.address is not None
        host, port = self.address
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def group_state(self, group_id: str) -> dict[str, Any] | None:
        """A consumer group now (None: no such group): ``state``, ``generation``, ``protocol``, ``leader``,
        ``members`` (member id -> instance id, client id, host, assignment) and ``coordinator`` (broker id);
        read on the server's loop."""
        groups = self.controller.built("groups")
        return groups.group_state(group_id) if groups is not None else None

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """A group's committed offsets, as OffsetFetch answers them: (topic, partition) -> offset; read on
        the server's loop."""
        groups = self.controller.built("groups")
        return groups.committed_offsets(group_id) if groups is not None else {}

    def lost_commits(self) -> list[LostCommit]:
        """Answered commits lost when a group coordinator moved to a replica that lacked their records."""
        groups = self.controller.built("groups")
        if groups is None:
            return []
        groups.follow_all()
        return list(groups.lost_commits)

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
            "listening on %s (%s) with placer %s and election policy %s",
            self.bootstrap,
            listener.security_protocol,
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
        base, step = self.config.broker_port_base, self.config.broker_port_step
        port = self._ports.get(broker_id, base + step * broker_id if base else 0)
        if port > 65535:
            raise OSError(
                f"broker {broker_id}: port {port} (simulator.broker.port.base {base} + "
                f"{'' if step == 1 else f'{step} * '}id) is above 65535"
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
        self.dispatcher.advertise(broker_id, (advertised, bound))

    async def broker_changed(self, broker_id: int, process: Process | None) -> None:
        """The broker's listener follows its process (:class:`controller.dynamics.lifecycle.Network`)."""
        if process is Process.UP:
            self.dispatcher.freeze(broker_id, None)
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
            self.dispatcher.freeze(broker_id, self.controller.image())
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
            self.dispatcher.advertise(broker_id, None)
            self._ports.pop(broker_id, None)

    def transactions(self) -> dict[str, dict[str, Any]]:
        """Every transactional id its coordinator holds (:meth:`TransactionService.transactions`): state,
        producer id and epoch, partitions, pending markers, coordinator; read on the server's loop."""
        transactions = self.controller.built("transactions")
        return transactions.transactions() if transactions is not None else {}

    def lost_transaction_records(self) -> list[LostTxnRecord]:
        """Replicated records of ``__transaction_state`` an unclean election took away."""
        transactions = self.controller.built("transactions")
        return transactions.lost_records() if transactions is not None else []

    def lost_records(self) -> list[LostRecords]:
        """Acknowledged records a change of leader took away (:meth:`DataPath.lost_records`)."""
        data_path = self.controller.built("data_path")
        return data_path.lost_records() if data_path is not None else []

    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        assignments: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
    ) -> TopicResult:
        """Creates a topic as CreateTopics does (:meth:`TopicAdmin.create_topic`): its result (``topic_id``,
        ``replicas``), or :class:`protocol.errors.Refusal` with the code and message a client would get."""
        return await self.controller.topic_admin.create_topic(
            name, partitions, replication_factor, configs, assignments
        )

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
        self._connections.add(conn)
        dispatcher = self.dispatcher
        sasl = self.security.session(conn.peer)
        answer = functools.partial(dispatcher.answer, origin=Origin(conn.peer, broker, sasl))
        if sasl is None:
            conn.answer = answer
        else:
            conn.answer = sasl.guard(answer, dispatcher.handlers.supports)
            conn.frame_limit = sasl.frame_limit(conn.frame_limit)
        conn.admit()

    def admit_address(self, ip: str) -> bool:
        """Counts a socket just accepted against its address (``max.connections.per.ip``), from before any
        TLS handshake; False (and logged, counted) when the address has its share already."""
        held = self._per_ip[ip]
        if held >= self.config.max_connections_per_ip:
            self.stats["connections"] += 1
            self.stats["closed:too many connections from one address"] += 1
            log.warning(
                "closing connection from %s: too many connections from one address (%s)",
                shown(ip),
                f"{held} held, max.connections.per.ip={self.config.max_connections_per_ip}",
            )
            return False
        self._per_ip[ip] = held + 1
        return True

    def forget_address(self, ip: str) -> None:
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]

    def connection_lost(self, conn: Connection, reason: str) -> None:
        self.forget_address(conn.ip)
        if conn not in self._connections:
            return  # refused in connection_made, already counted
        self._connections.discard(conn)
        self._blocked.discard(conn)
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
                conn.flow()

    def blocked(self, conn: Connection) -> None:
        self._blocked.add(conn)

    def unsent(self, size: int) -> None:
        self.controller.data_path.unsent_answer_bytes += size
