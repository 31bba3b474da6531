"""The simulated cluster's state: brokers (registration and process), topics, partitions and their replication.

Every change goes through the methods here, so that the placer's view, the change counter
(:attr:`Cluster.generation`, which readers key their caches on) and the event log stay current. The
rules that decide a change (who leads, when a broker is fenced) live in :mod:`controller.election` and
:mod:`controller.dynamics`; this module only keeps the state and records each change as an event.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum, StrEnum
from typing import Any, Generic, NamedTuple, TypeVar

from controller.config.topic_configs import (
    TOPIC_CONFIGS,
    ConfigEntry,
    TopicConfigDef,
    resolve,
    topic_config_def,
)
from controller.events import EventLog
from controller.placement.api import ClusterView, UsableBroker
from controller.placement.assignments import Assignments
from controller.topic_names import collision_key

__all__ = [
    "NO_LEADER",
    "NEVER_CAUGHT_UP",
    "CHANGE_FIELDS",
    "Broker",
    "BrokerState",
    "Cluster",
    "ConfigDerived",
    "LeaderRecoveryState",
    "PartitionChange",
    "PartitionState",
    "PartitionStatus",
    "Prepared",
    "Process",
    "Topic",
]

NO_LEADER = -1
#: A replica's ``caught_up`` time before it ever fetched everything (a replica a reassignment adds): as
#: Kafka's ``Replica`` starts with ``lastCaughtUpTimeMs`` 0, far in the past.
NEVER_CAUGHT_UP = -(2**62)


class Process(Enum):
    """What a broker's process does, as its listener and the controller see it."""

    UP = "up"  # answers clients, heartbeats to the controller
    CRASHED = "crashed"  # its listener is closed: connections closed, new ones refused
    HUNG = "hung"  # its listener accepts and reads but never answers; no heartbeats
    ISOLATED = "isolated"  # answers clients, but the controller does not hear from it
    STOPPED = "stopped"  # shut down cleanly (after a controlled shutdown)


class BrokerState(Enum):
    """A broker's state as the controller shows it."""

    RUNNING = "running"
    FENCED = "fenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    OFFLINE = "offline"


class PartitionStatus(StrEnum):
    """A partition's status: ``Online`` (it has a leader) or ``Offline`` (none), and while Fluvio's SC
    elects a leader its ``Election`` then ``CandidateFound`` (Fluvio's partition statuses). Compares equal to its
    name as a string."""

    ONLINE = "Online"
    OFFLINE = "Offline"
    ELECTION = "Election"
    CANDIDATE_FOUND = "CandidateFound"


class LeaderRecoveryState(IntEnum):
    """Kafka's ``LeaderRecoveryState`` (KIP-704), with its record values: RECOVERING after an unclean
    election, until the new leader has recovered its log and reports RECOVERED."""

    RECOVERED = 0
    RECOVERING = 1


_DOWN = (Process.CRASHED, Process.STOPPED, Process.HUNG)
_SERVING = (Process.UP, Process.ISOLATED)


@dataclass(eq=False)
class Broker:
    """One broker: its registration with the controller, its process, and how fast its followers copy."""

    id: int
    rack: str | None
    fenced: bool = False
    in_controlled_shutdown: bool = False
    registered: bool = True
    process: Process = Process.UP
    #: New at every registration (Kafka's broker epoch).
    epoch: int = 0
    #: Clock time of the registration; heartbeats tick from it.
    registered_at: int = 0
    #: Kept fenced on purpose (``simulator.brokers.fenced``) until started explicitly.
    held_fenced: bool = False
    #: How its followers copy: a delay (ms) and a rate (records per second per partition; None: no limit).
    copy_delay_ms: int = 0
    copy_rate: float | None = None

    @property
    def active(self) -> bool:
        """May lead and join in-sync sets: registered, unfenced, not shutting down (Kafka's ``isActive``)."""
        return self.registered and not self.fenced and not self.in_controlled_shutdown

    @property
    def state(self) -> BrokerState:
        if not self.registered or (self.fenced and self.process in _DOWN):
            return BrokerState.OFFLINE
        if self.in_controlled_shutdown:
            return BrokerState.CONTROLLED_SHUTDOWN
        if self.fenced:
            return BrokerState.FENCED
        return BrokerState.RUNNING

    @property
    def heartbeating(self) -> bool:
        """Whether the controller hears from it."""
        return self.registered and self.process is Process.UP

    @property
    def serving(self) -> bool:
        """Whether its process serves: answers clients, leads, copies from its leaders (up or isolated)."""
        return self.registered and self.process in _SERVING


@dataclass(eq=False, slots=True)
class PartitionState:
    """One partition: replicas in placement order (leader preferred first), the leader and its epochs, the
    in-sync set (Kafka's ISR, Fluvio's LRS), each replica's log end offset and the high watermark.

    ``leo`` and ``caught_up`` are aligned with ``replicas``.
    """

    topic: str
    index: int
    replicas: list[int]
    leader: int
    isr: list[int]
    leader_epoch: int = 0
    partition_epoch: int = 0
    leo: list[int] = field(default_factory=list)
    high_watermark: int = 0
    status: PartitionStatus = PartitionStatus.ONLINE
    #: The leader before the current one (-1 if none): the one whose log a Fluvio candidate is measured against.
    last_leader: int = NO_LEADER
    #: The leader's LEO when its epoch began; a follower must reach it to join the in-sync set.
    epoch_start_offset: int = 0
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    #: Per replica: the clock time up to which it had everything the leader had.
    caught_up: list[int] = field(default_factory=list)
    #: Fluvio: the proposed leader while the status is CandidateFound (-1 otherwise).
    candidate: int = NO_LEADER
    #: A reassignment in progress (Kafka's ``addingReplicas`` and ``removingReplicas``, KIP-455): the
    #: replicas being added (in ``replicas`` already, copying) and those to drop once the added ones are
    #: in sync (:func:`controller.election.change.completed_reassignment`). Both empty when none is in progress.
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    #: Kafka's eligible leader replicas (KIP-966): replicas out of an ISR smaller than
    #: ``min.insync.replicas`` that hold every committed record, and may lead cleanly once the ISR is
    #: empty; and the last known ELR (members that left it since). Both empty with ELR off.
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    def leo_of(self, broker: int) -> int:
        return self.leo[self.replicas.index(broker)]

    @property
    def log_end_offsets(self) -> dict[int, int]:
        return dict(zip(self.replicas, self.leo, strict=True))


#: The partition fields a change record may set: Kafka's ``PartitionChangeRecord`` (leader, ISR, replicas,
#: epochs, leader recovery state), the status (with Fluvio's candidate), the last leader, and the
#: replicas' logs as the change leaves them (followers truncated to a new leader's log end offset), a
#: reassignment's adding and removing replicas, and the eligible leader replicas (KIP-966).
CHANGE_FIELDS = frozenset(
    {
        "leader",
        "isr",
        "replicas",
        "leader_epoch",
        "partition_epoch",
        "leader_recovery_state",
        "status",
        "last_leader",
        "candidate",
        "adding_replicas",
        "removing_replicas",
        "epoch_start_offset",
        "leo",
        "high_watermark",
        "elr",
        "last_known_elr",
    }
)


class PartitionChange(NamedTuple):
    """One change record (Kafka's ``PartitionChangeRecord``), as :mod:`controller.election.change` builds
    it: ``fields`` are the names and values it sets, in turn (``("isr", [1, 2], "partition_epoch", 5)``:
    one flat tuple, as a failover makes 100,000 records); the others stay as they are."""

    partition: PartitionState
    cause: str
    fields: tuple[Any, ...]

    @classmethod
    def of(cls, partition: PartitionState, cause: str, **fields: Any) -> PartitionChange:
        """A record setting ``fields`` (those given None are left out)."""
        unknown = fields.keys() - CHANGE_FIELDS
        if unknown:
            raise ValueError(f"a partition change cannot set {sorted(unknown)}")
        return cls(partition, cause, tuple(x for k, v in fields.items() if v is not None for x in (k, v)))

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, value) for each field the record sets, in order."""
        names_and_values = iter(self.fields)
        return zip(names_and_values, names_and_values, strict=True)

    def get(self, name: str) -> Any:
        """The value the record sets ``name`` to, None when it leaves it."""
        for field_name, value in self.items():
            if field_name == name:
                return value
        return None


@dataclass(frozen=True)
class Prepared:
    """New partitions made ready off the event loop: their states and their replica lists as tuples."""

    partitions: list[PartitionState]
    replicas: tuple[tuple[int, ...], ...]
    #: Broker id -> the new partitions with a replica on it, in partition order.
    by_broker: dict[int, list[PartitionState]] = field(default_factory=dict)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    #: The topic's own configs (``unclean.leader.election.enable``, ...): set at creation and by
    #: AlterConfigs, through :meth:`Cluster.set_topic_configs`; read through :meth:`Cluster.topic_config`.
    configs: dict[str, str] = field(default_factory=dict)
    #: Bumped on every change of the topic's partitions (readers cache per version).
    version: int = 0
    #: The cluster's count of topics created before this one: topics sort by it in creation order.
    created: int = 0

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


class Cluster:
    """Brokers and topics. All mutation goes through its methods, so the placer's view stays current."""

    def __init__(
        self,
        brokers: Iterable[UsableBroker],
        seed: int | None = None,
        events: EventLog | None = None,
        static_configs: Mapping[str, str] | None = None,
        cluster_configs: Mapping[str, str] | None = None,
    ) -> None:
        """``static_configs`` are the server's properties (``server.properties``): the broker keys there
        give topic configs their server defaults (:meth:`topic_config`). ``cluster_configs`` are the
        dynamic cluster-level configs the cluster starts with (as the controller writes them at start)."""
        self._brokers: dict[int, Broker] = {
            b.id: Broker(b.id, b.rack, fenced=b.fenced, held_fenced=b.fenced) for b in brokers
        }
        self.topics: dict[str, Topic] = {}
        self._topics_by_id: dict[uuid.UUID, Topic] = {}
        # Topic names with '.' and '_' unified -> the topic holding that key (Kafka's collision rule).
        #: Topic names by their collision key ('.' and '_' unified): two may share one (made in one request).
        self._collision_keys: dict[str, list[str]] = {}
        #: Bumped on every change of brokers, topics or partitions, so that readers can cache what they derive.
        self.generation = 0
        #: Bumped on every change of a broker only: what readers derive from brokers alone stays cached
        #: while partitions change (100,000 of them in a failover).
        self.broker_generation = 0
        # The ids of the active and of the serving brokers, kept as brokers change (read as frozensets,
        # cached per broker generation).
        self._active: set[int] = {b.id for b in self._brokers.values() if b.active}
        self._serving: set[int] = {b.id for b in self._brokers.values() if b.serving}
        self._ids_cache: tuple[int, frozenset[int], frozenset[int]] | None = None
        self._assignments = Assignments()
        # Topics whose replica lists a reassignment changed since ``_assignments`` was brought up to date:
        # it is, once, when next read (a reassignment of a big topic completes a partition at a time).
        self._moved: set[str] = set()
        # Broker id -> topic name -> the partitions of that topic with a replica on it: failures touch only
        # these. Kept as topics come and go (new partitions are indexed where they are prepared, off the
        # event loop for big topics), so that no failover starts with a pass over every partition.
        self._on_broker: dict[int, dict[str, list[PartitionState]]] = {}
        self._view: ClusterView | None = None
        # Topic ids are deterministic when seeded (same requests give the same bytes).
        self._uuid_source = _UuidSource(seed)
        self.events = events if events is not None else EventLog(lambda: 0)
        self._created = 0
        # The names of changed topics (created, changed, deleted), in order: readers that derive from
        # every topic (the metadata image) update only these. ``_touched[0]`` is at ``_touched_start``.
        self._touched: list[str] = []
        self._touched_start = 0
        self._static_configs: dict[str, str] = dict(static_configs or {})
        # Dynamic broker configs (AlterConfigs): broker id -> key -> value; None holds the cluster default.
        self._broker_configs: dict[int | None, dict[str, str]] = (
            {None: dict(cluster_configs)} if cluster_configs else {}
        )
        # Group configs (the GROUP resource): group id -> key -> value, as set (metadata, as in KRaft).
        self._group_configs: dict[str, dict[str, str]] = {}
        # (topic, config, broker) and ("group", group, config) -> the parsed value in effect; emptied on
        # every config change.
        self._config_values: dict[tuple[str, str, int | str | None], Any] = {}
        # Broker (None: none) -> the entries of a topic that sets no config; emptied on every config change.
        self._default_entries: dict[int | None, list[ConfigEntry]] = {}
        #: Bumped on every config change (topic or broker), so that readers can cache what they derive.
        self.config_generation = 0
        # Topic name -> the indexes of its partitions with a reassignment in progress (Kafka's
        # ``reassigningTopics``), in insertion order.
        self._reassigning: dict[str, dict[int, None]] = {}

    # ------------------------------------------------------------------------------------- brokers

    @property
    def brokers(self) -> tuple[UsableBroker, ...]:
        """Every registered broker as placement and the wire see it (``fenced`` as registered)."""
        return tuple(UsableBroker(b.id, b.rack, b.fenced) for b in self._brokers.values() if b.registered)

    def usable_brokers(self) -> tuple[UsableBroker, ...]:
        """What a placer may place on (Kafka's ``usableBrokers``): registered brokers not shutting down."""
        return tuple(
            UsableBroker(b.id, b.rack, b.fenced)
            for b in self._brokers.values()
            if b.registered and not b.in_controlled_shutdown
        )

    def broker(self, broker_id: int) -> UsableBroker | None:
        b = self._brokers.get(broker_id)
        return UsableBroker(b.id, b.rack, b.fenced) if b is not None and b.registered else None

    def broker_state(self, broker_id: int) -> Broker | None:
        """The broker's full state (registration, process, replication settings), registered or not."""
        return self._brokers.get(broker_id)

    @property
    def broker_states(self) -> Mapping[int, Broker]:
        return self._brokers

    def offline_replicas(self, partition: PartitionState) -> list[int]:
        """The replicas on brokers the controller does not count alive: fenced or not registered."""
        brokers = self._brokers
        return [
            r for r in partition.replicas if (b := brokers.get(r)) is None or not b.registered or b.fenced
        ]

    def is_active(self, broker_id: int) -> bool:
        b = self._brokers.get(broker_id)
        return b is not None and b.active

    def active_ids(self) -> frozenset[int]:
        """The ids of the active brokers (:attr:`Broker.active`: they may lead and join in-sync sets)."""
        return self._ids()[1]

    def serving_ids(self) -> frozenset[int]:
        """The ids of the brokers whose process serves (:attr:`Broker.serving`)."""
        return self._ids()[2]

    def _ids(self) -> tuple[int, frozenset[int], frozenset[int]]:
        cached = self._ids_cache
        if cached is None or cached[0] != self.broker_generation:
            cached = self._ids_cache = (
                self.broker_generation,
                frozenset(self._active),
                frozenset(self._serving),
            )
        return cached

    def _index_broker(self, broker: Broker) -> None:
        for ids, member in ((self._active, broker.active), (self._serving, broker.serving)):
            if member:
                ids.add(broker.id)
            else:
                ids.discard(broker.id)
        self.broker_generation += 1

    @property
    def controller_id(self) -> int:
        """The broker that clients send administrative requests to: the lowest active id (-1: none)."""
        live = [b.id for b in self._brokers.values() if b.active]
        return min(live) if live else -1

    def update_broker(self, broker_id: int, cause: str, **changes: Any) -> Broker:
        """Sets fields of a broker (``fenced=True``, ``process=Process.CRASHED``, ...) and records the change."""
        broker = self._brokers[broker_id]
        recorded = []
        before_state = broker.state
        for name, value in changes.items():
            old = getattr(broker, name)
            if old != value:
                setattr(broker, name, value)
                recorded.append((name, _plain(old), _plain(value)))
        if broker.state is not before_state:
            recorded.append(("state", before_state.value, broker.state.value))
        if recorded:
            self._changed()
            self._index_broker(broker)
            self.events.record("broker", f"broker {broker_id}", recorded, cause)
        return broker

    def add_broker(self, broker_id: int, rack: str | None, now: int, cause: str) -> Broker:
        """Registers a broker (new, or registering again after it was removed); it starts fenced."""
        existing = self._brokers.get(broker_id)
        epoch = (existing.epoch + 1) if existing is not None else 0
        broker = Broker(broker_id, rack, fenced=True, registered=True, epoch=epoch, registered_at=now)
        if existing is not None:
            broker.copy_delay_ms, broker.copy_rate = existing.copy_delay_ms, existing.copy_rate
        self._brokers[broker_id] = broker
        self._changed()
        self._index_broker(broker)
        self.events.record(
            "broker", f"broker {broker_id}", [("registered", False, True), ("rack", None, rack)], cause
        )
        return broker

    # ------------------------------------------------------------------------------------- topics

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._topics_by_id.get(topic_id)

    def colliding_topic(self, name: str) -> str | None:
        """The existing topic whose name equals ``name`` up to '.' versus '_', if any (not ``name`` itself)."""
        others = [n for n in self._collision_keys.get(collision_key(name), ()) if n != name]
        return others[0] if others else None

    def view(self) -> ClusterView:
        """What a placer sees: the usable brokers and every current assignment (immutable, cached)."""
        if self._view is None:
            self._view = ClusterView(self.usable_brokers(), self._current_assignments())
        return self._view

    def partitions(self) -> Iterator[PartitionState]:
        for topic in self.topics.values():
            yield from topic.partitions

    @property
    def partition_count(self) -> int:
        """Partitions in the cluster, every topic counted."""
        return len(self._assignments)

    def partitions_on(self, broker: int) -> list[PartitionState]:
        """The partitions with a replica on ``broker``, in topic and partition order."""
        by_topic = self._on_broker.get(broker)
        if not by_topic:
            return []
        topics = self.topics
        names = sorted(by_topic, key=lambda name: topics[name].created) if len(by_topic) > 1 else by_topic
        return [p for name in names for p in by_topic[name]]

    def partition(self, topic: str, index: int) -> PartitionState:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            raise KeyError(f"no partition {topic}-{index}")
        return t.partitions[index]

    def prepare_partitions(
        self, topic: str, start: int, replicas: Sequence[Sequence[int]], now: int
    ) -> Prepared:
        """New partitions ``start..`` of ``topic`` as Kafka's controller creates them (the ISR is the active
        replicas, the leader the first of them), not yet added. Reads the brokers only, so big topics can
        be prepared off the event loop."""
        active = {b.id for b in self._brokers.values() if b.active}
        prepared = []
        for offset, rs in enumerate(replicas):
            rs = list(rs)
            isr = [r for r in rs if r in active]
            prepared.append(
                PartitionState(
                    topic,
                    start + offset,
                    rs,
                    isr[0] if isr else NO_LEADER,
                    isr,
                    leo=[0] * len(rs),
                    status=PartitionStatus.ONLINE if isr else PartitionStatus.OFFLINE,
                    caught_up=[now] * len(rs),
                )
            )
        by_broker: dict[int, list[PartitionState]] = {}
        for p in prepared:
            for r in p.replicas:
                by_broker.setdefault(r, []).append(p)
        return Prepared(prepared, tuple(tuple(p.replicas) for p in prepared), by_broker)

    def new_topic_id(self) -> uuid.UUID:
        """A fresh topic id from the cluster's (seeded) source: what a CreateTopics that only validates
        answers, as Kafka's controller does."""
        return self._uuid_source.next()

    def add_topic(
        self,
        name: str,
        replicas: Sequence[Sequence[int]],
        configs: Mapping[str, str] | None = None,
        now: int = 0,
        prepared: Prepared | None = None,
    ) -> Topic:
        """Adds a topic; ``prepared`` are its partitions from :meth:`prepare_partitions` when the caller made
        them already (off the event loop)."""
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        topic = Topic(name, self._uuid_source.next(), [], dict(configs or {}), created=self._created)
        if topic.configs:
            self._configs_changed()
        self._created += 1
        self.topics[name] = topic
        self._topics_by_id[topic.topic_id] = topic
        self._collision_keys.setdefault(collision_key(name), []).append(name)
        self.add_partitions(name, replicas, now=now, cause="topic created", prepared=prepared)
        return topic

    def add_partitions(
        self,
        name: str,
        replicas: Sequence[Sequence[int]],
        now: int = 0,
        cause: str = "partitions added",
        prepared: Prepared | None = None,
    ) -> None:
        topic = self.topics[name]
        start = len(topic.partitions)
        if prepared is None:
            prepared = self.prepare_partitions(name, start, replicas, now)
        assignments = self._current_assignments()  # before the new partitions join the topic
        added = prepared.partitions
        topic.partitions.extend(added)
        for broker, partitions in prepared.by_broker.items():
            self._on_broker.setdefault(broker, {}).setdefault(name, []).extend(partitions)
        self._assignments = assignments.with_topic(name, (assignments.topic(name) or ()) + prepared.replicas)
        topic.version += 1
        self._changed()
        self._touch(name)
        self.events.record("topic", f"topic {name}", [("partitions", start, start + len(added))], cause)

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name)
        self._topics_by_id.pop(topic.topic_id, None)
        sharing = self._collision_keys.get(collision_key(name), [])
        if name in sharing:
            sharing.remove(name)
            if not sharing:
                del self._collision_keys[collision_key(name)]
        self._moved.discard(name)
        self._assignments = self._assignments.without_topic(name)
        self._configs_changed()  # a topic of this name made later starts from its own configs
        self._reassigning.pop(name, None)
        for by_topic in self._on_broker.values():
            by_topic.pop(name, None)
        self._changed()
        self._touch(name)
        self.events.record(
            "topic", f"topic {name}", [("partitions", len(topic.partitions), 0)], "topic deleted"
        )
        return topic

    # ------------------------------------------------------------------------------------- configs

    def min_insync_replicas(self, p: PartitionState) -> int:
        """The in-sync replicas ``p`` needs for ``acks=all`` and for its high watermark to move: the topic's
        ``min.insync.replicas`` as its leader has it, at most the partition's replica count (Kafka's
        ``Partition.effectiveMinIsr``: a topic of one replica with ``min.insync.replicas=2`` is written).
        The one home of the rule."""
        configured = int(self.topic_config(p.topic, "min.insync.replicas", p.leader))
        return min(configured, len(p.replicas)) if p.replicas else configured

    def topic_config(self, topic: str, name: str, broker: int | None = None) -> Any:
        """The value in effect of topic config ``name`` (parsed: an int, a bool, a list, ...) for ``topic``:
        the topic's own, else its broker synonyms' set dynamically for ``broker`` (the broker that decides:
        a partition's leader; None for the controller, which has no per-broker values), for every
        broker, in ``server.properties``, else Kafka's default. The one place the simulation reads
        topic-level settings, so that AlterConfigs takes effect at once."""
        key = (topic, name, broker)
        try:
            return self._config_values[key]
        except KeyError:
            pass
        definition = topic_config_def(name)
        if definition is None:
            raise KeyError(f"no topic config {name!r}")
        entry = self.describe_topic_config(topic, name, broker)
        value = definition.default_value if entry.value is None else definition.parse(entry.value)
        self._config_values[key] = value
        return value

    def describe_topic_config(self, topic: str, name: str, broker: int | None = None) -> ConfigEntry:
        """Topic config ``name`` of ``topic`` as DescribeConfigs shows it: value, source, synonyms."""
        definition = topic_config_def(name)
        if definition is None:
            raise KeyError(f"no topic config {name!r}")
        t = self.topics.get(topic)
        return self._resolve(definition, t.configs if t is not None else {}, broker)

    def topic_config_entries(
        self, topic: str, configs: Mapping[str, str] | None = None, broker: int | None = None
    ) -> list[ConfigEntry]:
        """Every topic config of ``topic`` as DescribeConfigs shows it, in the table's order; ``configs``
        stand for the topic's own (a topic about to be created). The entries of configs a topic does not
        set are the same for every topic: they are made once per config change."""
        if configs is None:
            t = self.topics.get(topic)
            configs = t.configs if t is not None else {}
        defaults = self._default_entries.get(broker)
        if defaults is None:
            defaults = self._default_entries[broker] = [self._resolve(d, {}, broker) for d in TOPIC_CONFIGS]
        if not configs:
            return list(defaults)
        return [
            self._resolve(d, configs, broker) if d.name in configs else entry
            for d, entry in zip(TOPIC_CONFIGS, defaults, strict=True)
        ]

    def _resolve(
        self, definition: TopicConfigDef, configs: Mapping[str, str], broker: int | None
    ) -> ConfigEntry:
        return resolve(
            definition,
            configs,
            self._broker_configs.get(broker, {}) if broker is not None else {},
            self._broker_configs.get(None, {}),
            self._static_configs,
        )

    @property
    def static_configs(self) -> Mapping[str, str]:
        """The server's properties as given (``server.properties`` and ``--set``)."""
        return self._static_configs

    def broker_configs(self, broker: int | None) -> Mapping[str, str]:
        """The dynamic configs set for ``broker`` (None: for every broker, the cluster default)."""
        return self._broker_configs.get(broker, {})

    def set_topic_configs(self, topic: str, configs: Mapping[str, str], cause: str) -> None:
        """Replaces the topic's own configs (checked by the caller) and records what changed."""
        t = self.topics[topic]
        changes = _config_changes(t.configs, configs)
        if changes:
            t.configs = dict(configs)
            self._configs_changed()
            self.events.record("config", f"topic {topic}", changes, cause)

    def set_broker_configs(self, broker: int | None, configs: Mapping[str, str], cause: str) -> None:
        """Replaces the dynamic configs of ``broker`` (None: the cluster default), checked by the caller."""
        changes = _config_changes(self._broker_configs.get(broker, {}), configs)
        if changes:
            if configs:
                self._broker_configs[broker] = dict(configs)
            else:
                self._broker_configs.pop(broker, None)
            self._configs_changed()
            subject = "brokers (cluster default)" if broker is None else f"broker {broker}"
            self.events.record("config", subject, changes, cause)

    def group_configs(self, group: str) -> Mapping[str, str]:
        """The configs set on group ``group`` (the GROUP resource; :mod:`controller.config.group_configs`)."""
        return self._group_configs.get(group, {})

    def set_group_configs(self, group: str, configs: Mapping[str, str], cause: str) -> None:
        """Replaces the configs of group ``group`` (checked by the caller) and records what changed."""
        changes = _config_changes(self._group_configs.get(group, {}), configs)
        if changes:
            if configs:
                self._group_configs[group] = dict(configs)
            else:
                self._group_configs.pop(group, None)
            self._configs_changed()
            self.events.record("config", f"group {group}", changes, cause)

    def group_config(self, group: str, name: str) -> Any:
        """The value in effect of group config ``name`` for ``group`` (parsed): the group's own, else its
        broker synonym in ``server.properties``, else Kafka's default. The one place the simulation reads
        group-level settings, so that a change takes effect at the next request."""
        key = ("group", group, name)
        try:
            return self._config_values[key]
        except KeyError:
            pass
        from controller.config.group_configs import group_config_def, resolve_group_config

        definition = group_config_def(name)
        if definition is None:
            raise KeyError(f"no group config {name!r}")
        entry = resolve_group_config(definition, self.group_configs(group), self._static_configs)
        value = self._config_values[key] = definition.parse(entry.value or "")
        return value

    def group_config_entries(self, group: str) -> list[ConfigEntry]:
        """Every group config of ``group`` as DescribeConfigs shows it (Kafka's internal ones left out)."""
        from controller.config.group_configs import GROUP_CONFIGS, resolve_group_config

        own = self.group_configs(group)
        return [resolve_group_config(d, own, self._static_configs) for d in GROUP_CONFIGS if not d.internal]

    def _configs_changed(self) -> None:
        self._config_values.clear()
        self._default_entries.clear()
        self.config_generation += 1

    # ------------------------------------------------------------------------------------- partitions

    def apply_changes(self, changes: Iterable[PartitionChange]) -> list[list[tuple[str, Any, Any]]]:
        """The one place partition state is written: applies each change record in order (one event per
        partition that changed, at one clock time), how a failover writes 100,000 of them. What changed,
        per record (nothing recorded when nothing did)."""
        results: list[list[tuple[str, Any, Any]]] = []
        entries: list[tuple[str | tuple[str, int], list[tuple[str, Any, Any]], str]] = []
        touched: dict[str, None] = {}
        moved: dict[str, None] = {}  # topics whose replica lists changed (reassignments)
        for partition, cause, fields in changes:
            recorded = []
            if len(fields) == 4 and fields[0] == "isr" and fields[2] == "partition_epoch":
                # The ISR alone (isr_change's record, two thirds of a failover's): what the loop below
                # does, without getattr and setattr (neither field is indexed, the epoch is an int).
                old, value = partition.isr, fields[1]
                if old != value:
                    partition.isr = value
                    recorded.append(("isr", tuple(old), tuple(value)))
                old, value = partition.partition_epoch, fields[3]
                if old != value:
                    partition.partition_epoch = value
                    recorded.append(("partition_epoch", old, value))
            else:
                names_and_values = iter(fields)
                for name in names_and_values:
                    value = next(names_and_values)
                    old = getattr(partition, name)
                    if old != value:
                        if name not in _INDEXED_FIELDS:
                            pass  # one test for the usual fields (isr, epochs, leader)
                        elif name == "replicas":
                            self._replicas_changed(partition, old, value)
                            moved[partition.topic] = None
                        else:
                            self._reassigning_changed(partition, name, value)
                        setattr(partition, name, value)
                        # As _plain makes them, lists (the ISR) without a call: a failover records 200,000.
                        if type(old) is not int:
                            old = tuple(old) if type(old) is list else _plain(old)
                        if type(value) is not int:
                            value = tuple(value) if type(value) is list else _plain(value)
                        recorded.append((name, old, value))
            results.append(recorded)
            if recorded:
                touched[partition.topic] = None
                entries.append(((partition.topic, partition.index), recorded, cause))  # named when read
        self._moved.update(moved)
        if entries:
            self._changed(assignments=bool(moved))
            for name in touched:
                topic = self.topics.get(name)
                if topic is not None:
                    topic.version += 1
                    self._touch(name)
            self.events.record_many("partition", entries)
        return results

    def _current_assignments(self) -> Assignments:
        """Every topic's replica lists, those reassignments changed brought up to date."""
        if self._moved:
            assignments = self._assignments
            for name in sorted(self._moved):
                topic = self.topics[name]
                assignments = assignments.with_topic(name, tuple(tuple(p.replicas) for p in topic.partitions))
            self._assignments = assignments
            self._moved.clear()
        return self._assignments

    def _replicas_changed(self, partition: PartitionState, old: list[int], new: list[int]) -> None:
        """A reassignment changed ``partition``'s replicas: what is aligned with them follows (a new
        replica has an empty log and was never caught up; a record that sets ``leo`` after ``replicas``
        gives its own), and the index of partitions by broker."""
        leo = dict(zip(old, partition.leo, strict=True))
        caught_up = dict(zip(old, partition.caught_up, strict=True))
        partition.leo = [leo.get(r, 0) for r in new]
        partition.caught_up = [caught_up.get(r, NEVER_CAUGHT_UP) for r in new]
        name = partition.topic
        for r in old:
            if r not in new:
                on = self._on_broker.get(r, {}).get(name)
                if on is not None:
                    i = bisect.bisect_left(on, partition.index, key=_index)
                    if i < len(on) and on[i] is partition:
                        del on[i]
        for r in new:
            if r not in old:
                on = self._on_broker.setdefault(r, {}).setdefault(name, [])
                if not on or on[-1].index < partition.index:
                    on.append(partition)
                else:
                    bisect.insort(on, partition, key=_index)

    def _reassigning_changed(self, partition: PartitionState, name: str, value: list[int]) -> None:
        other = partition.removing_replicas if name == "adding_replicas" else partition.adding_replicas
        indexes = self._reassigning.setdefault(partition.topic, {})
        if value or other:
            indexes[partition.index] = None
        else:
            indexes.pop(partition.index, None)
            if not indexes:
                del self._reassigning[partition.topic]

    @property
    def reassignment_in_progress(self) -> bool:
        """Whether some partition has a reassignment in progress (kept as they change, so that a failover
        of 100,000 partitions asks once per slice instead of looking at each)."""
        return bool(self._reassigning)

    def reassigning(self, topic: str | None = None) -> list[PartitionState]:
        """The partitions with a reassignment in progress (of ``topic``; None: of every topic, in topic
        creation order), in partition order: kept as they change, so that listing them reads no others."""
        if topic is not None:
            indexes = self._reassigning.get(topic)
            if not indexes:
                return []
            partitions = self.topics[topic].partitions
            return [partitions[i] for i in sorted(indexes)]
        return [p for _, partitions in self.reassigning_by_topic() for p in partitions]

    def reassigning_by_topic(self) -> list[tuple[str, list[PartitionState]]]:
        """:meth:`reassigning` of every topic, by topic (in creation order), those without any left out."""
        names = sorted(self._reassigning, key=lambda name: self.topics[name].created)
        return [(name, found) for name in names if (found := self.reassigning(name))]

    @staticmethod
    def progress(partition: PartitionState, **changes: Any) -> None:
        """Replication progress (log end offsets, the high watermark moving on): state that clients do not
        see in metadata and that moves every tick, so it is not an event and not a metadata change."""
        for name, value in changes.items():
            setattr(partition, name, value)

    def _changed(self, assignments: bool = True) -> None:
        self.generation += 1
        if assignments:
            self._view = None

    # ------------------------------------------------------------------------------------- changed topics

    @property
    def touch_position(self) -> int:
        """How many topic changes there have been: a reader remembers it to ask what changed since."""
        return self._touched_start + len(self._touched)

    def touched_since(self, position: int) -> list[str] | None:
        """The names of the topics changed since ``position`` (with repeats), or None when they are no
        longer kept (the reader then looks at every topic)."""
        if position < self._touched_start:
            return None
        return self._touched[position - self._touched_start :]

    def forget_touched(self, position: int) -> None:
        """The changes before ``position`` are no longer needed."""
        drop = position - self._touched_start
        if drop > 0:
            del self._touched[:drop]
            self._touched_start = position

    def _touch(self, name: str) -> None:
        touched = self._touched
        touched.append(name)
        if len(touched) > _TOUCHED_KEPT + 4 * len(self.topics):  # nobody reads them: a reader looks at all
            self.forget_touched(self.touch_position)


#: Changed topic names kept beyond four per topic, for readers that did not ask for a while.
_TOUCHED_KEPT = 100_000


def _config_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for every key set, changed or removed (None where unset)."""
    return [(key, old.get(key), new.get(key)) for key in sorted({*old, *new}) if old.get(key) != new.get(key)]


def _index(partition: PartitionState) -> int:
    return partition.index


#: The partition fields the cluster's indexes follow (by broker, reassignments): apply_changes tells them.
_INDEXED_FIELDS = frozenset({"replicas", "adding_replicas", "removing_replicas"})


def _plain(value: Any) -> Any:
    if type(value) is list:
        return tuple(value)
    if isinstance(value, Enum):
        return value.value
    return value


_K = TypeVar("_K")
_V = TypeVar("_V")


class ConfigDerived(Generic[_K, _V]):
    """Values read from configs in effect, kept until any config changes (the cluster's
    ``config_generation`` moves: a topic's, a broker's or a group's configs set, a topic deleted), as
    :meth:`Cluster.topic_config` keeps each value: for what a request reads on every call (a Produce,
    for each partition it writes; a heartbeat, two group configs). The one home of that rule."""

    __slots__ = ("_at", "_cluster", "_values")

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._values: dict[_K, _V] = {}
        self._at = -1

    def get(self, key: _K, read: Callable[..., _V], *args: Any) -> _V:
        """The value kept for ``key``, else ``read(*args)`` (kept)."""
        generation = self._cluster.config_generation
        if self._at != generation:
            self._values.clear()
            self._at = generation
        value = self._values.get(key)
        if value is None:
            value = self._values[key] = read(*args)
        return value


class _UuidSource:
    def __init__(self, seed: int | None) -> None:
        import random

        self._random = random.Random(seed) if seed is not None else None

    def next(self) -> uuid.UUID:
        if self._random is None:
            return uuid.uuid4()
        return uuid.UUID(int=self._random.getrandbits(128), version=4)
