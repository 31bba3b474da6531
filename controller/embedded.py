"""A server running on its own event loop in a background thread: for tests, notebooks and benchmarks.

Because it has its own loop, both blocking clients (kafka-python, confluent-kafka) and asyncio clients
on the caller's loop can talk to it.

>>> with ServerThread.start(placer="legacy", properties={"simulator.seed": "1"}) as server:
...     print(server.bootstrap)
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from controller.assembly import create_server
from controller.config import BROKERS, CLOCK, ELECTION_POLICY, FENCED, LISTENERS, PLACER, SEED, ServerConfig
from controller.dynamics import Dynamics, ElectionOutcome, PartitionSnapshot
from controller.eventloop import new_event_loop
from controller.events import Event
from controller.placement.api import UsableBroker
from controller.plugins.properties import PropertyValue, property_texts

if TYPE_CHECKING:
    from controller.data_path import LostRecords
    from controller.faults import Faults
    from controller.groups.durable import LostCommit
    from controller.reassignment import ReassignOutcome
    from controller.scenario import Scenario
    from controller.security_testing import ClientSettings
    from controller.server import Server
    from controller.topic_admin import TopicResult
    from controller.transactions.state_log import LostTxnRecord

__all__ = ["ServerThread", "server_properties"]


def server_properties(
    placer: str | None = None,
    brokers: Iterable[UsableBroker | tuple[int, str | None] | tuple[int, str | None, bool]] | None = None,
    properties: Mapping[str, PropertyValue] | None = None,
    seed: int | None = 0,
    listen: str = "127.0.0.1:0",
    clock: str | None = None,
    policy: str | None = None,
) -> dict[str, str]:
    """Server properties from friendly arguments; ``properties`` override the rest (their values may be
    numbers and booleans, written as a properties file would: ``1500``, ``true``)."""
    props: dict[str, str] = {LISTENERS: listen}
    if clock is not None:
        props[CLOCK] = clock
    if policy is not None:
        props[ELECTION_POLICY] = policy
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
    props.update(property_texts(properties or {}))
    return props


class ServerThread:
    """A started server; ``stop()`` (or leaving the ``with`` block) shuts it down."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._server: Server | None = None
        self._loop = new_event_loop(config.event_loop)
        self._thread = threading.Thread(target=self._run, name="placement-sim-server", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._client_settings: ClientSettings | None = None

    @property
    def client_settings(self) -> ClientSettings:
        """How clients connect (security protocol, CA file, SASL user); set by whoever made the
        certificates. Made on first read: the module of client settings is a test's, not a server's."""
        if self._client_settings is None:
            from controller.security_testing import ClientSettings

            self._client_settings = ClientSettings(self.config.listener.security_protocol)
        return self._client_settings

    @client_settings.setter
    def client_settings(self, settings: ClientSettings) -> None:
        self._client_settings = settings

    @classmethod
    def start(
        cls,
        placer: str | None = None,
        brokers: Iterable[Any] | None = None,
        properties: Mapping[str, PropertyValue] | None = None,
        seed: int | None = 0,
        timeout: float = 60.0,
        clock: str | None = None,
        policy: str | None = None,
    ) -> ServerThread:
        """A started server. ``clock="virtual"`` makes time move only by :meth:`advance`; ``policy`` is the
        election policy (``kafka``, ``fluvio`` or a plugin name); ``properties`` override the rest."""
        props = server_properties(placer, brokers, properties, seed, clock=clock, policy=policy)
        return cls(ServerConfig.from_properties(props)).run_in_background(timeout)

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
            self._server = await create_server(self.config)
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
    def faults(self) -> Faults:
        """The server's request faults (``faults.inject_error(ApiKey.CREATE_TOPICS, "NOT_CONTROLLER").once()``;
        see :mod:`controller.faults`); safe to use from this thread."""
        faults: Faults = self._on_loop(_value(lambda: self.server.faults))
        return faults

    @property
    def stats(self) -> Counter[str]:
        """A snapshot of the server's counters (connections, closes by reason, requests by apiKey)."""
        return Counter(self.server.stats)

    # ------------------------------------------------------------------------------ cluster dynamics

    def _on_loop(self, coroutine: Any, timeout: float = 120.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    @property
    def dynamics(self) -> Dynamics:
        return self.server.controller.dynamics

    def stop_broker(self, broker_id: int, mode: str = "crash") -> None:
        """Stops a broker: ``crash`` (connections closed, new ones refused), ``controlled`` (leaders move
        first), ``hang`` (accepts and reads, never answers) or ``isolate`` (answers clients; the controller
        no longer hears it)."""
        self._on_loop(self.dynamics.stop_broker(broker_id, mode))

    def start_broker(self, broker_id: int) -> None:
        """Starts a stopped broker again (same address), resumes a hung or isolated one, restarts one in
        controlled shutdown (Kafka's style: its new process registers at once, the shutdown is over), or
        unfences one configured fenced."""
        self._on_loop(self.dynamics.start_broker(broker_id))

    def add_broker(self, broker_id: int, rack: str | None = None) -> None:
        """Registers a new broker with its own listener; it is unfenced at its first heartbeat."""
        self._on_loop(self.dynamics.add_broker(broker_id, rack))

    def remove_broker(self, broker_id: int) -> None:
        """Unregisters a broker: it leaves every in-sync set, its leaders move, its listener closes."""
        self._on_loop(self.dynamics.remove_broker(broker_id))

    def set_replication(
        self, broker: int, delay_ms: int | None = None, records_per_s: float | None = -1
    ) -> None:
        """How that broker's followers copy: ``delay_ms`` behind their leader, at most ``records_per_s``
        records per second per partition (None: no limit; 0: they copy nothing)."""
        self._on_loop(self.dynamics.set_replication(broker, delay_ms, records_per_s))

    def produce_load(self, topic: str, records_per_s: float) -> None:
        """Records arriving at every partition leader of ``topic`` (per partition, per second)."""
        self._on_loop(self.dynamics.produce_load(topic, records_per_s))

    def set_log_end_offset(self, topic: str, partition: int, broker: int, offset: int) -> None:
        """Puts one replica's log end offset where a test needs it (the leader's is never below a follower's)."""
        self._on_loop(self.dynamics.set_log_end_offset(topic, partition, broker, offset))

    def fail_promotion(self, broker: int, fails: bool = True) -> None:
        """Fluvio's style: ``broker`` never confirms a promotion (until called again with ``fails=False``)."""
        self._on_loop(self.dynamics.fail_promotion(broker, fails))

    def elect(self, topic: str, partition: int, kind: str = "preferred") -> ElectionOutcome:
        """ElectLeaders for one partition (``preferred`` or ``unclean``): the outcome, with its ``ErrorCode``."""
        outcome: ElectionOutcome = self._on_loop(self.dynamics.elect(topic, partition, kind))
        return outcome

    def reassign(
        self,
        moves: Mapping[tuple[str, int], Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> list[ReassignOutcome]:
        """Moves partitions to new replicas (AlterPartitionReassignments; None cancels one's reassignment):
        ``{("orders", 0): [3, 1, 2]}``. One outcome per partition (``.error`` None, or its ``ErrorCode``
        and ``.message``); the new replicas then copy as the clock moves (:meth:`advance`)."""
        outcomes: list[ReassignOutcome] = self._on_loop(
            self.dynamics.reassign(moves, allow_replication_factor_change)
        )
        return outcomes

    def advance(self, ms: int) -> int:
        """Moves the virtual clock ``ms`` ahead, firing every timer on the way; the new time (ms)."""
        now: int = self._on_loop(self.dynamics.advance(ms))
        return now

    def now(self) -> int:
        """The cluster clock's time in ms."""
        return int(self._on_loop(_value(self.server.controller.clock.now)))

    def wait_until(
        self, predicate: Callable[[], bool], timeout: float = 30.0, interval: float = 0.01
    ) -> None:
        """Waits (real clock) until ``predicate()`` is true; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {timeout:g}s")
            time.sleep(interval)

    def events(self, since: int = 0) -> list[Event]:
        """The event log (after sequence number ``since``): every change of broker or partition state."""
        events: list[Event] = self._on_loop(_value(lambda: self.dynamics.events(since)))
        return events

    def partition_state(self, topic: str, partition: int) -> PartitionSnapshot:
        """One partition now: ``.leader``, ``.leader_epoch``, ``.partition_epoch``, ``.replicas``, ``.isr``,
        ``.high_watermark``, ``.last_stable_offset``, ``.log_end_offsets``, ``.status``."""
        state: PartitionSnapshot = self._on_loop(
            _value(lambda: self.dynamics.partition_state(topic, partition))
        )
        return state

    def group_state(self, group_id: str) -> dict[str, Any] | None:
        """A consumer group now (None: no such group): ``state``, ``generation``, ``protocol``, ``leader``,
        ``members`` (member id -> ``instance_id``, ``client_id``, ``client_host``, ``assignment``) and
        ``coordinator`` (the broker leading its ``__consumer_offsets`` partition)."""
        state: dict[str, Any] | None = self._on_loop(_value(lambda: self.server.group_state(group_id)))
        return state

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """A group's committed offsets: (topic, partition) -> offset, as OffsetFetch answers them (commits
        whose records ``__consumer_offsets`` has replicated)."""
        offsets: dict[tuple[str, int], int] = self._on_loop(
            _value(lambda: self.server.committed_offsets(group_id))
        )
        return offsets

    def lost_commits(self) -> list[LostCommit]:
        """Answered commits lost when a group's coordinator moved to a replica without their records (an
        unclean election; a commit not answered yet is answered NOT_COORDINATOR instead): ``group_id``,
        ``topic``, ``partition``, ``offset``, where the record was (``log_partition``, ``log_offset``) and
        ``lost_at`` (clock ms)."""
        lost: list[LostCommit] = self._on_loop(_value(self.server.lost_commits))
        return lost

    def lost_records(self) -> list[LostRecords]:
        """Every batch (part) of acknowledged records a change of leader took away: committed records
        an unclean election lost, ``acks=1`` records an election lost before the followers copied them
        (:meth:`controller.data_path.DataPath.lost_records`): topic, partition, first and last offset,
        leader epoch, acks, producer id and cause."""
        lost: list[LostRecords] = self._on_loop(_value(self.server.lost_records))
        return lost

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        assignments: Sequence[Sequence[int]] | Mapping[int, Sequence[int]] | None = None,
    ) -> TopicResult:
        """Creates a topic as CreateTopics does: placed by the configured placer (-1: the server's
        ``num.partitions`` / ``default.replication.factor``), or ``assignments`` (partition 0's replicas,
        partition 1's, ..., or a map partition -> replicas; then leave ``partitions`` and
        ``replication_factor`` out). Its result (``.topic_id``, ``.replicas``), or
        :class:`protocol.errors.Refusal` (``.code``, ``.message``) as a client would be refused."""
        result: TopicResult = self._on_loop(
            self.server.create_topic(name, partitions, replication_factor, configs, assignments)
        )
        return result

    def transactions(self) -> dict[str, dict[str, Any]]:
        """Every transactional id its coordinator holds now, by id: ``state`` (Kafka's names: ``Ongoing``,
        ``CompleteCommit``, ...), ``producer_id``, ``producer_epoch``, ``partitions`` ((topic, partition)
        pairs of the open or ending transaction), ``pending_markers`` (partitions whose marker is not yet
        written), ``timeout_ms``, ``start_ms`` (wall-clock ms, -1: none), ``coordinator`` (broker id) and
        ``coordinator_partition``
        (of ``__transaction_state``); empty before any transactional request."""
        found: dict[str, dict[str, Any]] = self._on_loop(_value(self.server.transactions))
        return found

    def lost_transaction_records(self) -> list[LostTxnRecord]:
        """Records of ``__transaction_state`` a move of its leader took away, replicated (an unclean election)
        or loaded as a coordinator's state from above the high watermark: ``transactional_id``, the
        ``state`` the record held, ``producer_id``, ``producer_epoch``, where it was (``log_partition``,
        ``log_offset``), ``lost_at`` (clock ms), its transaction's ``partitions`` and ``cause``."""
        lost: list[LostTxnRecord] = self._on_loop(_value(self.server.lost_transaction_records))
        return lost

    def load_scenario(self, scenario: str | Scenario, source: str = "<scenario>") -> int:
        """Plays a scenario's steps (its TOML text, or a :class:`~controller.scenario.Scenario`) on the
        server's clock, each ``t`` after now, as SimulatorScenarioLoad does (the file's cluster and
        settings are not applied); the clock time the steps count from. ScenarioError for a bad file."""
        start: int = self._on_loop(
            _value(lambda: self.server.controller.scenarios.play(scenario, source).start_ms)
        )
        return start

    def broker_state(self, broker_id: int) -> str:
        """``running``, ``fenced``, ``controlled shutdown`` or ``offline``."""

        def state() -> str:
            b = self.server.controller.cluster.broker_state(broker_id)
            if b is None:
                raise KeyError(f"no broker {broker_id}")
            return b.state.value

        return str(self._on_loop(_value(state)))

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


async def _value(fn: Callable[[], Any]) -> Any:
    """Calls ``fn`` on the server's loop (state is read between controller events, never mid-way)."""
    return fn()
