"""The group coordinator as a broker: ``__consumer_offsets`` on the replication model.

As in Kafka, a group belongs to partition ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
of ``__consumer_offsets`` and its coordinator is that partition's leader (the topic and its records on the
replication model are :class:`~controller.coordinator_topic.CoordinatorTopic`'s, shared with the
transaction coordinator). The topic is made at the first FindCoordinator, with
``offsets.topic.num.partitions`` partitions and ``offsets.topic.replication.factor`` replicas.

Every record Kafka's coordinator writes (a group's generation and assignment, one per committed partition,
tombstones) is appended to that partition's leader as one synthetic record, and the log offset of each
record is remembered. An OffsetCommit is answered once the partition's high watermark covers its records
(Kafka appends with acks=all), and only then shown (OffsetFetch, :meth:`GroupService.committed_offsets`),
as Kafka shows committed offsets.

Transactional offsets (TxnOffsetCommit) are records too, pending until the transaction's marker reaches
the partition (:meth:`GroupService.complete_transaction`): a commit marker makes them the group's
offsets, an abort marker drops them; while some are pending, OffsetFetch with RequireStable answers
UNSTABLE_OFFSET_COMMIT for their partitions (Kafka's ``OffsetMetadataManager``).

When the partition's leader changes (a crash, a hang, an isolation, an election), requests to the old
broker get NOT_COORDINATOR and FindCoordinator names the new leader, which loads the partition's groups:
for :data:`LOAD_MS` on the cluster's clock it answers COORDINATOR_LOAD_IN_PROGRESS; what it loads is the
records up to its own log end offset (commits still waiting for their answer are applied when they get
it). Records above it are gone: a commit not answered yet is answered NOT_COORDINATOR (its client
retries), and an answered commit that goes (only an unclean election can take one) is listed in
:attr:`GroupService.lost_commits`. Parked JoinGroup and SyncGroup requests of the moved groups are
answered NOT_COORDINATOR. Each move is an event (``group coordinator``).

Other group families keep their groups' records here too, as Kafka's coordinator does (share groups,
:mod:`controller.share`; the consumer group protocol's, :mod:`controller.consumer_groups`): each is
registered in :attr:`GroupService.families` under the record kinds it writes (:meth:`GroupService.add_family`
checks them), writes with :meth:`GroupService.append` and :meth:`GroupService.when_durable`, and is handed
its records of a partition when the partition's coordinator moves. A family may also say how its records
are compacted, which group ids are its own and how its groups are shown (:class:`GroupFamily`). Committed
offsets are the classic coordinator's, for every family's groups.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster
from controller.config import ServerConfig
from controller.coordinator_topic import LOAD_MS, CoordinatorTopic, coordinator_partition, java_string_hash
from controller.groups.classic import ClassicGroup, GroupState
from controller.groups.coordinator import CommittedOffset, GroupCoordinator, GroupSettings
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "LOAD_MS",
    "OFFSETS_TOPIC",
    "GroupService",
    "LostCommit",
    "coordinator_partition",
    "java_string_hash",
]

OFFSETS_TOPIC = GROUP_METADATA_TOPIC_NAME


@dataclass(frozen=True)
class LostCommit:
    """An answered commit whose record was above the new leader's log end offset when the coordinator
    moved (only an unclean election takes one)."""

    group_id: str
    topic: str
    partition: int
    offset: int
    #: Where its record was in ``__consumer_offsets``.
    log_partition: int
    log_offset: int
    #: Clock time of the move that lost it.
    lost_at: int


class _Record(NamedTuple):
    """One record of ``__consumer_offsets`` (a tuple: one is made per partition committed)."""

    offset: int
    group_id: str
    #: ("group", snapshot or None for a tombstone) or ("offset", ((topic, partition), CommittedOffset | None)).
    kind: str
    value: Any


@dataclass(eq=False)
class _PendingCommit:
    """A commit (or another family's records) written and not answered yet: the offsets of its first and last
    records, and whether a coordinator move lost them (it is then answered NOT_COORDINATOR)."""

    first: int
    last: int
    lost: bool = False


#: Groups whose coordinator :meth:`GroupService.check` remembers (all are forgotten past it).
_FOUND_KEPT = 100_000

#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096

#: The record kinds of the classic coordinator (and of every group's offsets).
CLASSIC_KINDS = frozenset({"group", "offset", "txn_offset", "txn_end"})


class GroupFamily(Protocol):
    """Another family of groups whose records live on ``__consumer_offsets`` (:attr:`GroupService.families`).

    Besides :meth:`moved`, a family may define ``compaction_key(record) -> Hashable`` (compaction keeps the
    last record of each key; without it, the last record of each group and kind), ``owns(group_id) ->
    bool`` (an id with offsets and no classic group record is then not loaded as a simple group) and
    ``group_state(group_id) -> dict | None`` (how :meth:`GroupService.group_state` shows its groups)."""

    def moved(self, index: int, kept: list[Any], lost: list[Any], now: int) -> int:
        """Partition ``index`` has a new coordinator: drop the groups held from it and load them from
        ``kept`` (its records below the new leader's log end offset, in log order; ``lost``: those
        above). Returns how many groups it loaded."""
        ...


class GroupService:
    """The coordinator of every group, placed on the brokers (see the module docstring)."""

    def __init__(self, config: ServerConfig, cluster: Cluster, clock: Clock, topic: CoordinatorTopic) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.partitions = topic.partitions
        #: ``__consumer_offsets`` on the replication model (the Controller's ``offsets_topic``, which
        #: FindCoordinator asks without loading the groups).
        self.topic = topic
        self.coordinator = GroupCoordinator(
            clock,
            GroupSettings(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                max_size=config.group_max_size,
                max_groups=config.max_groups,
                max_pending_members=config.max_pending_members,
            ),
            seed=config.seed,
            events=cluster.events,
        )
        self.coordinator.log = self
        #: Other group families on this topic (share groups, :mod:`controller.share`; the consumer group
        #: protocol's, :mod:`controller.consumer_groups`), by each record kind they write: each is told of
        #: a move with its own records (``moved(index, kept, lost, now)``).
        self.families: dict[str, GroupFamily] = {}
        self.lost_commits: list[LostCommit] = []
        self._records: dict[int, list[_Record]] = {}
        #: How many records a partition may hold before it is compacted again.
        self._compact_at: dict[int, int] = {}
        self._holder: dict[int, int] = {}
        self._loaded_at: dict[int, int] = {}
        #: Per partition, the commits written and not answered yet, in log order.
        self._unanswered: dict[int, list[_PendingCommit]] = {}
        #: Per group id, where :meth:`check` found its coordinator: the cluster's generation and broker
        #: generation then (any partition or broker change moves one on), the partition and its leader.
        self._found: dict[str, tuple[int, int, int, int]] = {}

    def close(self) -> None:
        self.coordinator.close()

    def add_family(self, family: GroupFamily, kinds: frozenset[str]) -> None:
        """Registers ``family`` under the record ``kinds`` it writes (none taken already)."""
        for kind in kinds:
            if kind in CLASSIC_KINDS or kind in self.families:
                raise ValueError(f"record kind {kind!r} is taken")
        for kind in kinds:
            self.families[kind] = family

    def owned_by_family(self, group_id: str) -> GroupFamily | None:
        """The family whose group ``group_id`` is, of those that tell (``owns``)."""
        for family in dict.fromkeys(self.families.values()):
            owns = getattr(family, "owns", None)
            if owns is not None and owns(group_id):
                return family
        return None

    # ------------------------------------------------------------------------------------- placement

    def partition_of(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.partitions)

    async def ensure_topic(self) -> ErrorCode:
        """Makes ``__consumer_offsets`` if it is not there yet (:meth:`CoordinatorTopic.ensure`)."""
        return await self.topic.ensure()

    def coordinator_of(self, group_id: str) -> tuple[ErrorCode, int]:
        """The coordinator's broker id, or COORDINATOR_NOT_AVAILABLE (no topic yet, no serving leader)."""
        return self.topic.coordinator_of(group_id)

    def check(self, group_id: str, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) may take a request
        for ``group_id`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        cluster = self.cluster
        found = self._found.get(group_id)
        if found is not None and found[0] == cluster.generation and found[1] == cluster.broker_generation:
            index, leader = found[2], found[3]
        else:
            if not group_id:
                return ErrorCode.INVALID_GROUP_ID
            if OFFSETS_TOPIC not in cluster.topics:
                # No broker holds the group's partition before FindCoordinator makes the topic: Kafka's group
                # coordinator answers NOT_COORDINATOR (the partition is not one it loaded).
                return ErrorCode.NOT_COORDINATOR
            index = self.partition_of(group_id)
            error, leader = self.topic.leader_of(index)
            if error:
                return error
            if len(self._found) >= _FOUND_KEPT:
                self._found.clear()
            self._found[group_id] = (cluster.generation, cluster.broker_generation, index, leader)
        if broker is not None and broker != leader:
            return ErrorCode.NOT_COORDINATOR
        if self._holder.get(index) != leader:
            self._follow(index, leader)
        loaded = self._loaded_at.get(index)
        if loaded is not None and self.clock.now() < loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def follow_all(self) -> None:
        """Brings every partition's groups to their current leader (what a check does for one)."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        serving = self.cluster.serving_ids()
        for p in topic.partitions:
            if p.index in self._holder and p.leader != NO_LEADER and p.leader in serving:
                self._follow(p.index, p.leader)

    # ------------------------------------------------------------------------------------- moves

    def _follow(self, index: int, leader: int) -> None:
        holder = self._holder.get(index)
        if holder == leader:
            return
        self._holder[index] = leader
        if holder is None:
            return  # the partition's first coordinator: nothing to load
        now = self.clock.now()
        self._loaded_at[index] = now + LOAD_MS
        p = self.cluster.partition(OFFSETS_TOPIC, index)
        end = p.leo_of(leader)
        groups = {r.group_id for r in self._records.get(index, ()) if r.kind not in self.families}
        groups |= {g for g in self.coordinator.groups if self.partition_of(g) == index}
        groups |= {g for g in self.coordinator.offsets if self.partition_of(g) == index}
        groups |= {g for g in self.coordinator.pending_offsets if self.partition_of(g) == index}
        groups.discard("")  # the end record of a transaction that held no offsets of this partition
        for group_id in sorted(groups):
            self.coordinator.unload(group_id, ErrorCode.NOT_COORDINATOR)
        kept, lost = [], []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        # Commits not answered yet: one the move loses is answered NOT_COORDINATOR (as Kafka answers a commit
        # whose append fails with NOT_LEADER_OR_FOLLOWER) and is no lost commit; one the new leader holds
        # waits on for its high watermark, and is applied then, not loaded now.
        unanswered: set[int] = set()
        for pending in self._unanswered.get(index, ()):
            unanswered.update(range(pending.first, pending.last + 1))
            if pending.last >= end:
                pending.lost = True
        for record in lost:
            if record.offset in unanswered:
                continue
            if record.kind == "offset" and record.value[1] is not None:
                (topic, partition), value = record.value
                self.lost_commits.append(
                    LostCommit(record.group_id, topic, partition, value.offset, index, record.offset, now)
                )
            elif record.kind == "txn_end" and record.value[1]:
                # A commit marker lost: the offsets it made the group's go with it.
                for (topic, partition), value in record.value[2]:
                    self.lost_commits.append(
                        LostCommit(record.group_id, topic, partition, value.offset, index, record.offset, now)
                    )
        waiting = self.topic.take_waiting(index)
        for offset, respond in waiting:
            if offset < end:
                self.topic.wait(index, offset, respond)
            else:
                respond()  # gone: a commit is answered NOT_COORDINATOR (write_offsets), a marker's answer too
        loaded = f"{len(groups)} group(s)"
        families = self.families
        for family in dict.fromkeys(families.values()):
            count = family.moved(
                index,
                [r for r in kept if families.get(r.kind) is family],
                [r for r in lost if families.get(r.kind) is family],
                now,
            )
            kinds = sorted(kind for kind, f in families.items() if f is family)
            loaded += f", {count} {'/'.join(kinds)} group(s)"
        for group_id in sorted(groups):
            records = [
                r
                for r in kept
                if r.group_id == group_id and r.kind not in families and r.offset not in unanswered
            ]
            self._load(group_id, records, simple=self.owned_by_family(group_id) is None)
        self.cluster.events.record(
            "group",
            f"{OFFSETS_TOPIC}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {loaded} from its log up to offset {end}",
        )
        self.topic.check_waiting()

    def _load(self, group_id: str, records: list[_Record], simple: bool = True) -> None:
        """The classic group and the offsets of ``group_id`` from its records; ``simple``: a group with
        offsets and no group record is a simple group (not when another family's group has the id)."""
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        pending: dict[int, dict[tuple[str, int], CommittedOffset]] = {}
        snapshot: dict[str, Any] | None = None
        written = False
        for record in records:
            if record.kind == "group":
                snapshot, written = record.value, True
            elif record.kind == "txn_offset":
                producer_id, key, value = record.value
                pending.setdefault(producer_id, {})[key] = value
            elif record.kind == "txn_end":
                producer_id, commit, committed = record.value
                pending.pop(producer_id, None)
                if commit:  # the record holds what it made the group's (its offset records may be compacted)
                    offsets.update(committed)
            else:
                key, value = record.value
                if value is None:
                    offsets.pop(key, None)
                else:
                    offsets[key] = value
        self.coordinator.offsets.pop(group_id, None)
        if offsets:
            self.coordinator.offsets[group_id] = offsets
        self.coordinator.pending_offsets.pop(group_id, None)
        if pending:
            self.coordinator.pending_offsets[group_id] = pending
        if snapshot is None and offsets and not written and simple:
            snapshot = ClassicGroup(group_id).snapshot()  # a group that only committed: a simple group
        self.coordinator.load(group_id, snapshot)

    # ------------------------------------------------------------------------------------- the log

    def _append(self, group_id: str, kind: str, values: list[Any]) -> int | None:
        """Appends one record per value to the group's partition (its leader's log end offset moves on by
        as many); the offset of the last, or None when there is no partition to append to."""
        return self._append_to(self.partition_of(group_id), group_id, kind, values)

    def _append_to(self, index: int, group_id: str, kind: str, values: list[Any]) -> int | None:
        p = self.topic.partition(index)
        if p is None or p.leader == NO_LEADER:
            return None  # no coordinator partition (groups driven in-process only): kept in memory
        offset = p.leo[p.replicas.index(p.leader)]
        last = self.topic.append_at(p, len(values), "group coordinator append")
        records = self._records.get(index)
        if records is None:
            records = self._records[index] = []
        records.extend(_Record(offset + n, group_id, kind, value) for n, value in enumerate(values))
        if len(records) >= self._compact_at.get(index, COMPACT_AT):
            self._compact(index, min(p.leo))
        self._holder.setdefault(index, p.leader)
        return last

    def _compact(self, index: int, below: int) -> None:
        """Kafka compacts ``__consumer_offsets`` (``cleanup.policy=compact``): of the records every replica
        has (below ``below``, the lowest log end offset), only the last of each key (a group's metadata, a
        group's partition) is kept. What any replica loads after a move, and what a move loses, are the
        same as before (those records are below every replica's log end offset)."""
        records = self._records[index]
        last: dict[tuple[Any, ...], int] = {}
        # Transactional offsets stay while their transaction is open; those of ended transactions go with
        # their end (a commit's offsets are in its end record).
        open_txns: dict[tuple[str, int], list[int]] = {}
        for n, record in enumerate(records):
            if record.offset >= below:
                break
            if record.kind == "txn_offset":
                open_txns.setdefault((record.group_id, record.value[0]), []).append(n)
                continue
            if record.kind == "txn_end":
                open_txns.pop((record.group_id, record.value[0]), None)
                if record.value[1]:  # a commit: its offsets are the group's now
                    for key, _ in record.value[2]:
                        last[(record.group_id, "offset", key)] = n
                continue
            family = self.families.get(record.kind)
            keyed = getattr(family, "compaction_key", None) if family is not None else None
            if keyed is not None:
                last[(record.kind, keyed(record))] = n
                continue
            key = (record.group_id, record.kind, record.value[0] if record.kind == "offset" else None)
            last[key] = n
        else:
            n = len(records)
        kept_txn = [k for indexes in open_txns.values() for k in indexes]
        if len(last) + len(kept_txn) < n:
            keep = sorted(set(last.values()) | set(kept_txn))
            self._records[index] = records = [records[k] for k in keep] + records[n:]
        self._compact_at[index] = max(COMPACT_AT, 2 * len(records))

    def append(self, group_id: str, kind: str, values: list[Any]) -> int | None:
        """Another family's records (``kind``) on the group's partition: the offset of the last, or None."""
        return self._append(group_id, kind, values)

    def when_durable(
        self, group_id: str, last: int | None, count: int, respond: Callable[[ErrorCode], None]
    ) -> None:
        """``respond`` to a write of ``count`` records ending at ``last``: NONE once the high watermark of
        the group's partition covers them (Kafka appends with acks=all; at once when ``last`` is None:
        nothing was appended), NOT_COORDINATOR when the coordinator moves to a replica without them first
        (:meth:`_follow`; Kafka answers a write whose append fails so)."""
        self._when_durable_at(self.partition_of(group_id), last, count, respond)

    def _when_durable_at(
        self, index: int, last: int | None, count: int, respond: Callable[[ErrorCode], None]
    ) -> None:
        """:meth:`when_durable` for a write to partition ``index``."""
        if last is None:
            respond(ErrorCode.NONE)
            return
        pending = _PendingCommit(last - count + 1, last)
        self._unanswered.setdefault(index, []).append(pending)

        def answered() -> None:
            waiting = self._unanswered.get(index, [])
            if pending in waiting:
                waiting.remove(pending)
            respond(ErrorCode.NOT_COORDINATOR if pending.lost else ErrorCode.NONE)

        self.topic.wait(index, last, answered)

    def write_group(
        self,
        group: ClassicGroup,
        respond: Callable[[ErrorCode], None] | None = None,
        assignment: Mapping[str, bytes] | None = None,
    ) -> None:
        """The group's record (its removal when it is Dead), with ``assignment`` for its members' when
        given; ``respond`` as :meth:`when_durable` does."""
        value = None if group.is_in(GroupState.DEAD) else group.snapshot(assignment)
        index = self.partition_of(group.group_id)
        last = self._append_to(index, group.group_id, "group", [value])
        if respond is not None:
            self._when_durable_at(index, last, 1, respond)

    def write_offsets(
        self,
        group_id: str,
        offsets: list[tuple[tuple[str, int], CommittedOffset | None]],
        respond: Callable[[ErrorCode], None],
    ) -> None:
        """Appends a commit's records and answers as :meth:`when_durable` does."""
        index = self.partition_of(group_id)
        self._when_durable_at(
            index, self._append_to(index, group_id, "offset", offsets), len(offsets), respond
        )

    # ------------------------------------------------------------------------------------- transactions

    def write_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        offsets: list[tuple[tuple[str, int], CommittedOffset]],
        respond: Callable[[], None],
    ) -> None:
        """Transactional offsets of ``producer_id``'s open transaction (pending in the coordinator already);
        ``respond`` once they are durable."""
        last = self._append(group_id, "txn_offset", [(producer_id, key, value) for key, value in offsets])
        if last is None:
            respond()
            return
        self.topic.wait(self.partition_of(group_id), last, respond)

    def complete_transaction(
        self, index: int, producer_id: int, commit: bool, respond: Callable[[ErrorCode], None]
    ) -> None:
        """The transaction marker of ``producer_id`` written to partition ``index`` of ``__consumer_offsets``
        (its leader: the caller checked there is one): the pending offsets of that producer of every group
        of the partition become the groups' (commit) or go (abort), as the records say; ``respond`` gets
        NONE once the marker is durable, NOT_LEADER_OR_FOLLOWER when a move lost it first."""
        self.follow_all()
        groups = sorted(
            g
            for g, by_producer in self.coordinator.pending_offsets.items()
            if producer_id in by_producer and self.partition_of(g) == index
        )
        ends: list[tuple[str, Any]] = []
        for group_id in groups or [""]:
            ended = self.coordinator.end_transaction(group_id, producer_id, commit) if group_id else {}
            ends.append((group_id, (producer_id, commit, tuple(sorted(ended.items())))))
        last = None
        for group_id, value in ends:
            last = self._append_to(index, group_id, "txn_end", [value])
        if last is None:
            respond(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return
        record = self._records[index][-1]

        def durable() -> None:
            kept = self._records.get(index, ())
            survived = any(r is record for r in reversed(kept))
            respond(ErrorCode.NONE if survived else ErrorCode.NOT_LEADER_OR_FOLLOWER)

        self.topic.wait(index, last, durable)

    def has_pending_offsets(self, group_id: str, key: tuple[str, int]) -> bool:
        """Whether an open transaction holds an offset of the group's partition ``key`` (RequireStable)."""
        return any(key in offsets for offsets in self.coordinator.pending_offsets.get(group_id, {}).values())

    # ------------------------------------------------------------------------------------- reading

    def group_state(self, group_id: str) -> dict[str, Any] | None:
        """The group now (None: no such group): state, generation, protocol, leader, members with their
        assignments, and its coordinator broker."""
        self.follow_all()
        group = self.coordinator.groups.get(group_id)
        if group is None:
            family = self.owned_by_family(group_id)
            shown = getattr(family, "group_state", None)
            state: dict[str, Any] | None = shown(group_id) if shown is not None else None
            return state
        _, broker = self.coordinator_of(group_id)
        return {
            "group_id": group_id,
            "state": group.state.value,
            "generation": group.generation,
            "protocol_type": group.protocol_type,
            "protocol": group.protocol_name,
            "leader": group.leader,
            "members": {
                m.member_id: {
                    "instance_id": m.instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "assignment": m.assignment,
                }
                for m in group.members.values()
            },
            "coordinator": broker,
            "coordinator_partition": self.partition_of(group_id),
        }

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> committed offset: what OffsetFetch answers, commits whose records the
        high watermark of ``__consumer_offsets`` covers (one still waiting for its followers is not
        shown)."""
        self.follow_all()
        return {
            key: value.offset for key, value in sorted(self.coordinator.offsets.get(group_id, {}).items())
        }
