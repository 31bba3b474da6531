"""The data path: a log per partition replica, kept in step with the replication model.

The replication model (:mod:`controller.dynamics.replication`) decides in whole records where every
replica's log end offset is, tick by tick; this module holds the logs behind those offsets
(:class:`~controller.records.log.Log`, one per replica, the batches' bytes shared between replicas) and
makes them follow:

- a leader appends a client's checked batch (:meth:`DataPath.append`: Kafka's producer-state checks,
  then the stamp of offsets and the leader epoch outside the CRC; compressed batches are kept as sent)
  and the model's log end offset of the leader moves with it; the synthetic workload (``produce_load``)
  appends synthetic runs where the model says so (both move the same log end offset);
- a follower copies the leader's batches up to where the model puts it (:meth:`DataPath.follow`): whole
  client batches, as a Kafka follower fetches whole batches, so it may end a little past the model's
  count, and the model takes the offset the log reached;
- when leadership moves, the new leader's log gets the new epoch (``Partition.makeLeader``), every other
  replica truncates to where its log diverges from the new leader's (``divergence_offset``, found from
  the epoch caches as a Kafka follower finds it), and the producers' state is rebuilt from the new
  leader's log (``UnifiedLog.rebuildProducerState``);
- the high watermark is the model's (the lowest log end offset over the ISR): it now counts real records.

**Lost records.** A record is lost when it was acknowledged and a change of leader (or of the leader's
log) takes it away, as in Kafka:

- records below the high watermark were committed: a producer with ``acks=all`` was answered for them
  (or is about to be), one with ``acks=1`` too. Only an unclean election takes them away (the new
  leader's log ends below the high watermark);
- a batch appended with ``acks=1`` was answered as soon as the leader appended it: until the followers
  copy it (the high watermark passes it) it is lost by any election, a clean one too, whose new leader
  does not hold it (Kafka's followers truncate to the new leader's log, KIP-101/KIP-279);
- records never acknowledged are not losses: ``acks=0`` batches, and ``acks=all`` batches above the high
  watermark (their answer fails with NOT_LEADER_OR_FOLLOWER when the leader changes).

Each batch (part) that goes so is recorded (:class:`LostRecords`: topic, partition, offsets, leader
epoch, acks level, producer id and the cause: the election or the log change), kept for
:meth:`DataPath.lost_records` and written to the event log as a ``loss`` event. The acks level is kept
on each batch of the leader's log (:attr:`StoredBatch.acks <controller.records.log.StoredBatch>`).

Waiting: a Produce with ``acks=all`` waits until the high watermark covers its batch
(``Appended.replicated``, registered by :meth:`DataPath.append`, Kafka's ``DelayedProduce``) and a Fetch until data arrives
(:meth:`DataPath.watch`, Kafka's ``DelayedFetch``); both end on the cluster's clock.

Topic configs the data path reads (``min.insync.replicas``, ``max.message.bytes``,
``message.timestamp.*``, ``retention.bytes``) are read through one function, :meth:`DataPath.topic_settings`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from controller.cluster import NO_LEADER, Cluster, ConfigDerived, LeaderRecoveryState, PartitionState
from controller.config.topic_configs import MIN_INSYNC_REPLICAS
from controller.election.api import ElectionStyle
from controller.records.batch import control_batch, read_header
from controller.records.checks import ClientBatch, TopicLimits
from controller.records.log import ACKS_ALL, Log, StoredBatch, divergence_offset
from controller.records.producers import AbortedTxn, BatchMetadata, ProducerIdAllocator, ProducerStates
from protocol.codes import ErrorCode
from protocol.errors import Refusal

if TYPE_CHECKING:
    from controller.clock import Clock
    from controller.config import ServerConfig
    from controller.dynamics import Dynamics

log = logging.getLogger(__name__)

__all__ = ["Appended", "DataPath", "LostRecords", "PartitionData", "TopicSettings"]

#: The topic config that bounds a replica log's bytes (Kafka's; -1: no bound).
RETENTION_BYTES: Final = "retention.bytes"
CLEANUP_POLICY: Final = "cleanup.policy"


@dataclass(frozen=True, slots=True)
class LostRecords:
    """Acknowledged records that a change of leader took away (see the module docstring): the offsets
    ``[first_offset, last_offset]`` of one batch of ``topic``-``partition``, written in leader epoch
    ``leader_epoch`` and acknowledged with ``acks`` (-1 all, 1 the leader) to producer ``producer_id``
    (-1: none, a synthetic run); ``cause`` names the election (or the log change) that lost them."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    leader_epoch: int
    acks: int
    producer_id: int
    cause: str

    @property
    def count(self) -> int:
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """What the data path reads of a topic's configs (see :meth:`DataPath.topic_settings`)."""

    limits: TopicLimits
    #: The in-sync replicas an ``acks=all`` Produce needs (NOT_ENOUGH_REPLICAS below): the topic's
    #: ``min.insync.replicas`` under Kafka's style; 1 under Fluvio's, whose leader has no such minimum (it
    #: waits for every replica: :class:`controller.dynamics.replication.FluvioReplication`).
    min_insync_replicas: int
    #: Bytes a replica's log holds at most before its oldest batches below the high watermark go.
    retention_bytes: int
    #: DeleteRecords may move the log start: ``cleanup.policy`` includes ``delete``, or is not compacted
    #: (an empty policy, Kafka 4.x's "keep everything"). A compact-only topic's records cannot be deleted
    #: (POLICY_VIOLATION); Kafka 4.4 deletes those of a topic with an empty policy (seen in the
    #: differential benchmark).
    delete_policy: bool = True


@dataclass(frozen=True, slots=True)
class Appended:
    """Where a client's batch went: ``base_offset`` and ``last_offset`` (those of the original batch for
    a retried duplicate), the LogAppendTime stamped (-1: CreateTime) and the log start offset.
    ``replicated`` (``acks=all`` only): the outcome of the wait for the in-sync replicas, registered at
    the append itself (see :meth:`DataPath.append`)."""

    base_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False
    replicated: asyncio.Future[ErrorCode] | None = None


@dataclass(slots=True)
class _Waiter:
    """An ``acks=all`` answer waiting for the high watermark to pass ``end`` (the batch's last offset + 1)
    in the leader epoch it was appended in; ``entry`` is the batch, acknowledged when the wait succeeds."""

    end: int
    leader_epoch: int
    entry: StoredBatch | None
    future: asyncio.Future[ErrorCode]


@dataclass(slots=True)
class PartitionData:
    """The replicas' logs of one partition and what its leader keeps beside them."""

    logs: dict[int, Log]
    #: The leader and leader epoch the logs were last put in step with.
    leader: int
    leader_epoch: int
    #: The leader's producer state (None: rebuilt from its log when next needed).
    producers: ProducerStates | None = None
    #: When (the leader's clock, ms) idle producers were last forgotten (producer.id.expiration.ms).
    producers_checked: int = 0
    #: The highest high watermark seen: what was committed (an unclean election may lower the model's).
    committed: int = 0
    waiters: list[_Waiter] = field(default_factory=list)
    #: The leader's ``acks=1`` batches that ended at or above ``committed`` when appended, in log order:
    #: answered, and lost by an election whose new leader lacks them (dropped once committed).
    unreplicated: deque[StoredBatch] = field(default_factory=deque)
    #: Whether a transactional batch or a marker was ever appended: only then is the last stable offset
    #: anything but the high watermark (a partition without transactions never reads producer state for it).
    transactional: bool = False


#: A partition's list of Fetch waits is pruned of ended ones when it reaches this length (a safety net:
#: a fetch removes its own waits when it ends, :meth:`DataPath.unwatch`).
_PRUNE_WATCHERS: Final = 64

#: What a partition without data reads as.
_EMPTY_LOG: Final = Log()


class DataPath:
    """The logs of every partition replica, in step with the replication model (see the module docstring).

    A partition's logs exist from its first record on: a cluster of 100,000 empty partitions costs
    nothing here, and a failover touches only partitions that hold data.
    """

    def __init__(self, config: ServerConfig, cluster: Cluster, clock: Clock, dynamics: Dynamics) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.dynamics = dynamics
        self.replication = dynamics.replication
        self._partitions: dict[tuple[str, int], PartitionData] = {}
        #: Fetches waiting for a partition to change, by partition (kept apart from the logs: a consumer
        #: waiting on 100,000 empty partitions makes no logs).
        self._watchers: dict[tuple[str, int], list[asyncio.Future[None]]] = {}
        # Record timestamps are wall-clock times: the cluster's clock counts from the server's start, so
        # the leader's time is the wall clock then plus the cluster's clock (a virtual clock too).
        self._epoch_ms = int(time.time() * 1000) - clock.now()
        self._lost: list[LostRecords] = []
        #: Producer ids for InitProducerId: one new id per idempotent producer.
        self.producer_ids = ProducerIdAllocator()
        #: Bytes of answers written to connections whose clients do not read them (kept by the server):
        #: past ``simulator.unsent.answers.max.bytes`` a Fetch answer carries at most its first batch.
        self.unsent_answer_bytes = 0
        #: Each topic's settings as its leader has them (topic_settings).
        self._settings: ConfigDerived[tuple[str, int | None], TopicSettings] = ConfigDerived(cluster)
        self.replication.on_log_end_offsets = self.follow
        self.replication.on_high_watermark = self.high_watermark_moved
        dynamics.on_partitions_changed = self.partitions_changed
        dynamics.on_topic_deleted = self.topic_deleted
        dynamics.last_stable_offset = self.last_stable_offset

    # ------------------------------------------------------------------------------------- reading

    def data(self, p: PartitionState) -> PartitionData | None:
        return self._partitions.get((p.topic, p.index))

    def log_of(self, p: PartitionState, broker: int) -> Log:
        """The log of ``broker``'s replica of ``p`` (an empty one, not kept, before any record)."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            return _EMPTY_LOG
        return data.logs.get(broker, _EMPTY_LOG)

    def producer_states(self, p: PartitionState, broker: int) -> ProducerStates:
        """The producers ``broker``'s replica of ``p`` keeps state for (Kafka's ``UnifiedLog.activeProducers``
        on that replica): the leader's state as the leader keeps it; a follower's as the batches it has
        copied give it (a Kafka follower builds its state as it appends them)."""
        data = self._partitions.get((p.topic, p.index))
        if data is None or broker not in data.logs:
            return ProducerStates()
        if broker == p.leader == data.leader and data.leader_epoch == p.leader_epoch:
            return self._producers(data, data.logs[broker])
        return ProducerStates.from_batches(
            data.logs[broker].batches(), self.config.max_producers_per_partition
        )

    def lost_records(self) -> list[LostRecords]:
        """Every batch (part) of acknowledged records a change of leader took away, in the order they
        went: committed records an unclean election lost, ``acks=1`` records any election lost before
        the followers copied them."""
        return list(self._lost)

    def topic_settings(self, topic: str) -> TopicSettings:
        """The configs of ``topic`` the data path reads, as the cluster has them in effect (the topic's
        own, else the brokers', else Kafka's defaults: :meth:`Cluster.topic_config`, so that AlterConfigs
        takes effect at the next request); ``retention.bytes`` bounded by ``simulator.log.max.bytes``.
        The one place they are read from."""
        t = self.cluster.topics.get(topic)
        leader = t.partitions[0].leader if t is not None and t.partitions else None
        broker = leader if leader is not None and leader >= 0 else None
        return self._settings.get((topic, broker), self._read_settings, topic, broker)

    def _read_settings(self, topic: str, broker: int | None) -> TopicSettings:
        def value(name: str) -> Any:
            return self.cluster.topic_config(topic, name, broker)

        retention = self.config.log_max_bytes
        topic_retention = value(RETENTION_BYTES)
        if topic_retention >= 0:
            retention = topic_retention if retention < 0 else min(topic_retention, retention)
        limits = TopicLimits.read(value, self.config.records_max_decompressed_bytes)
        min_insync = value(MIN_INSYNC_REPLICAS) if self.dynamics.elections.style is ElectionStyle.KAFKA else 1
        policy = value(CLEANUP_POLICY)
        return TopicSettings(limits, min_insync, retention, "delete" in policy or "compact" not in policy)

    def now_ms(self) -> int:
        """The leader's wall-clock time (ms) for timestamp checks and LogAppendTime: the wall clock at the
        server's start plus the cluster's clock."""
        return self._epoch_ms + self.clock.now()

    # ------------------------------------------------------------------------------------- the model's hooks

    def _make(self, p: PartitionState) -> PartitionData:
        logs = {}
        for r, leo in zip(p.replicas, p.leo, strict=True):
            replica_log = logs[r] = Log()
            if leo:  # offsets the model had before any record (not expected: every change comes here)
                replica_log.extend_synthetic(leo, max(p.leader_epoch, 0), self.now_ms())
        data = PartitionData(logs, p.leader, p.leader_epoch, committed=p.high_watermark)
        if p.leader != NO_LEADER:
            logs[p.leader].become_leader(p.leader_epoch)
        self._partitions[(p.topic, p.index)] = data
        return data

    def follow(self, p: PartitionState, leo: list[int]) -> list[int]:
        """The model's hook: the replicas' logs reach ``leo`` (the leader appends a synthetic run for the
        synthetic workload, followers copy from the leader, a replica set lower is truncated); returns
        the log end offsets reached."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            if not any(leo):
                return leo
            data = self._make(p)
        if data.leader_epoch != p.leader_epoch or data.leader != p.leader:
            self._leader_changed(p, data)
        return self._sync(p, data, leo)

    def _sync(self, p: PartitionState, data: PartitionData, leo: list[int]) -> list[int]:
        leader = p.leader
        logs = data.logs
        if len(logs) != len(p.replicas) or any(r not in logs for r in p.replicas):
            self._replicas_moved(p, data)
        out = list(leo)
        if leader == NO_LEADER:
            for i, r in enumerate(p.replicas):
                if leo[i] < logs[r].log_end_offset:
                    logs[r].truncate_to(leo[i])
                out[i] = logs[r].log_end_offset
            return out
        li = p.replicas.index(leader)
        leader_log = logs[leader]
        if leo[li] > leader_log.log_end_offset:
            leader_log.extend_synthetic(leo[li] - leader_log.log_end_offset, p.leader_epoch, self.now_ms())
        elif leo[li] < leader_log.log_end_offset:
            self._truncate_leader(p, data, leo[li])
        top = out[li] = leader_log.log_end_offset
        last = leader_log.last_batch()
        for i, r in enumerate(p.replicas):
            if i == li:
                continue
            follower = logs[r]
            have = follower.log_end_offset
            want = leo[i] if leo[i] < top else top
            if want > have:
                if last is not None and last.source is None and have >= last.base_offset:
                    # Within the leader's last synthetic run (the synthetic workload's steady state).
                    follower.extend_synthetic(want - have, last.leader_epoch, last.max_timestamp)
                else:
                    _copy(leader_log, follower, want)
            elif want < have:
                follower.truncate_to(want)
            out[i] = follower.log_end_offset
        self._retain(p, data)
        return out

    @staticmethod
    def _replicas_moved(p: PartitionState, data: PartitionData) -> None:
        """A reassignment changed the replicas: a removed replica's log goes; a new replica's log starts
        empty at its leader's log start offset (a follower fetching below it starts over from there)."""
        logs = data.logs
        for r in [r for r in logs if r not in p.replicas]:
            del logs[r]
        leader_log = logs.get(p.leader)
        start = 0
        if leader_log is not None:
            start = leader_log.log_start_offset
            holder = leader_log.batch_at(start)
            if holder is not None and not holder.is_synthetic:
                start = holder.base_offset  # a follower copies a client batch whole
        for r in p.replicas:
            if r not in logs:
                logs[r] = Log(start)

    def _truncate_leader(self, p: PartitionState, data: PartitionData, offset: int) -> None:
        """A leader's log set lower (``set_log_end_offset``): what it held past ``offset`` goes."""
        leader_log = data.logs[p.leader]
        cause = f"log end offset of leader {p.leader} set to {offset}"
        holder = leader_log.batch_at(offset)
        if holder is not None and not holder.is_synthetic:
            offset = min(offset, holder.base_offset)  # a client batch goes whole (Log.truncate_to)
        self._account_unreplicated(p, data, offset, None, cause)
        self._account_loss(p, data, leader_log, offset, cause)
        leader_log.truncate_to(offset)
        data.producers = None

    def partitions_changed(self, partitions: Sequence[PartitionState]) -> None:
        """The controller changed ``partitions``: :meth:`partition_changed` for each, in order. Nothing to
        do while no partition has records and no fetch waits (a failover without data costs nothing here)."""
        if not self._partitions and not self._watchers:
            return
        for p in partitions:
            self.partition_changed(p)

    def partition_changed(self, p: PartitionState) -> None:
        """The controller changed ``p`` (a leader, the epochs, the in-sync set): the logs follow, and
        fetches waiting on it look again."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            if self._watchers:
                self._wake((p.topic, p.index))
            return
        if data.leader_epoch != p.leader_epoch or data.leader != p.leader:
            self._leader_changed(p, data)
        # Only truncation here: followers copy at replication ticks.
        logs = data.logs
        wanted = [
            leo if r == p.leader or r not in logs else min(leo, logs[r].log_end_offset)
            for r, leo in zip(p.replicas, p.leo, strict=True)
        ]
        leo = self._sync(p, data, wanted)
        if leo != p.leo:
            self.cluster.progress(p, leo=leo)
        if p.high_watermark > data.committed:
            data.committed = p.high_watermark

    def _leader_changed(self, p: PartitionState, data: PartitionData) -> None:
        """A new leader (or none): the new epoch starts at its log end offset, the other replicas
        truncate to where they diverge from it, committed records it lacks are accounted as lost, and
        every ``acks=all`` answer waiting on the old leader fails with NOT_LEADER_OR_FOLLOWER."""
        data.leader, data.leader_epoch = p.leader, p.leader_epoch
        data.producers = None
        waiters, data.waiters = data.waiters, []
        for waiter in waiters:
            if not waiter.future.done():
                waiter.future.set_result(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._wake((p.topic, p.index))
        if p.leader == NO_LEADER:
            return
        logs = data.logs
        leader_log = logs.get(p.leader)
        if leader_log is None:
            leader_log = logs[p.leader] = Log()
        cause = f"{self._election_kind(p)}: leader {p.leader} elected with epoch {p.leader_epoch}"
        self._account_unreplicated(p, data, leader_log.log_end_offset, leader_log, cause)
        if leader_log.log_end_offset < data.committed:
            longest = max(logs.values(), key=lambda replica_log: replica_log.log_end_offset)
            self._account_loss(p, data, longest, leader_log.log_end_offset, cause)
        leader_log.become_leader(p.leader_epoch)
        for r, replica_log in logs.items():
            if r != p.leader:
                cut = divergence_offset(replica_log, leader_log)
                if cut < replica_log.log_end_offset:
                    replica_log.truncate_to(cut)

    def _election_kind(self, p: PartitionState) -> str:
        """The kind of the election that made ``p``'s current leader, as its losses are labelled:
        ``unclean election`` under Kafka's style when the new leader was outside the ISR (Kafka marks its
        log RECOVERING then, KIP-704: ``LeaderRecoveryState``), ``unclean election of the last known
        leader`` when, with eligible leader replicas on, that leader is the one the partition had before
        it went leaderless (Kafka's balanced recovery, :mod:`controller.election.change`), else ``clean
        election``; under Fluvio's style ``fluvio election`` (Fluvio's SC promotes by log-end-offset lag
        and knows no unclean kind)."""
        elections = self.dynamics.elections
        if elections.style is not ElectionStyle.KAFKA:
            return f"{elections.style} election"
        if p.leader_recovery_state is LeaderRecoveryState.RECOVERING:
            if p.leader == p.last_leader and elections.config.elr_version >= 1:
                return "unclean election of the last known leader"
            return "unclean election"
        return "clean election"

    def _account_loss(
        self, p: PartitionState, data: PartitionData, source: Log, offset: int, cause: str
    ) -> None:
        """Records committed in ``source`` at ``offset`` and after are going: account the acknowledged
        ones (not ``acks=0`` batches)."""
        committed = data.committed
        if offset >= committed:
            return
        position = offset
        while position < committed:
            entry = source.batch_at(position)
            if entry is None:
                break
            if entry.acks != 0:
                first, last = max(entry.base_offset, offset), min(entry.last_offset, committed - 1)
                self._record_loss(p, entry, first, last, cause)
            position = entry.last_offset + 1
        data.committed = offset

    def _account_unreplicated(
        self, p: PartitionState, data: PartitionData, offset: int, leader_log: Log | None, cause: str
    ) -> None:
        """The leader's ``acks=1`` batches above the committed records that the log kept from here on
        does not hold (``leader_log``: the new leader's; None: the leader's own log, cut at ``offset``):
        account them as lost (only their records above the committed ones: :meth:`_account_loss`
        accounts the rest). Called before ``data.committed`` is lowered."""
        pending = data.unreplicated
        if not pending:
            return
        committed = data.committed
        kept: deque[StoredBatch] = deque()
        for entry in pending:
            if entry.last_offset < committed:
                continue
            if leader_log is None:
                start, held = max(entry.base_offset, offset), entry.last_offset < offset
            else:
                start, held = entry.base_offset, leader_log.batch_at(entry.base_offset) is entry
            if held:
                kept.append(entry)  # still not copied by the new leader's followers
            else:
                self._record_loss(p, entry, max(start, committed), entry.last_offset, cause)
        data.unreplicated = kept

    def _record_loss(self, p: PartitionState, entry: StoredBatch, first: int, last: int, cause: str) -> None:
        producer_id = -1 if entry.is_synthetic else entry.header().producer_id
        lost = LostRecords(p.topic, p.index, first, last, entry.leader_epoch, entry.acks, producer_id, cause)
        self._lost.append(lost)
        self.cluster.events.record(
            "loss",
            p.name,
            [
                ("first_offset", None, first),
                ("last_offset", None, last),
                ("leader_epoch", None, entry.leader_epoch),
                ("acks", None, entry.acks),
                ("producer_id", None, producer_id),
            ],
            cause,
        )
        log.warning(
            "%s: acknowledged records %d-%d (epoch %d, acks=%d, producer %d) lost: %s",
            p.name,
            first,
            last,
            entry.leader_epoch,
            entry.acks,
            producer_id,
            cause,
        )

    def high_watermark_moved(self, p: PartitionState) -> None:
        """The model's hook: ``acks=all`` answers the high watermark now covers are given, fetches wake."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            return
        hw = p.high_watermark
        if hw > data.committed:
            data.committed = hw
        if data.transactional and data.producers is not None:
            data.producers.forget_completed(hw)
        pending = data.unreplicated
        while pending and pending[0].last_offset < hw:
            pending.popleft()
        if data.waiters:
            if data.leader_epoch != p.leader_epoch or data.leader != p.leader:
                self._leader_changed(p, data)  # fails every waiter of the old epoch
            still = []
            for waiter in data.waiters:
                if waiter.future.done():
                    continue  # the answer gave up waiting (its timeout)
                if waiter.leader_epoch != p.leader_epoch:
                    waiter.future.set_result(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                elif waiter.end <= hw:
                    self._acknowledge(waiter.entry)
                    waiter.future.set_result(ErrorCode.NONE)
                else:
                    still.append(waiter)
            data.waiters = still
        self._wake((p.topic, p.index))

    @staticmethod
    def _acknowledge(entry: StoredBatch | None) -> None:
        """An ``acks=all`` wait for ``entry`` succeeded: its producer is told it was written, and from now
        on a loss of it is a loss of acknowledged records."""
        if entry is not None and entry.acks == 0:
            entry.acks = ACKS_ALL

    def topic_deleted(self, topic: str) -> None:
        for key in [key for key in self._partitions if key[0] == topic]:
            data = self._partitions.pop(key)
            for waiter in data.waiters:
                if not waiter.future.done():
                    waiter.future.set_result(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        for key in [key for key in self._watchers if key[0] == topic]:
            self._wake(key)

    def _wake(self, key: tuple[str, int]) -> None:
        watchers = self._watchers.pop(key, None)
        if watchers:
            for future in watchers:
                if not future.done():
                    future.set_result(None)

    def _retain(self, p: PartitionState, data: PartitionData) -> None:
        """Bound the bytes the logs hold (``simulator.log.max.bytes`` / ``retention.bytes``): the oldest
        batches below the high watermark go, as Kafka's retention deletes whole segments, while the log
        keeps at least the bound."""
        leader_log = data.logs.get(p.leader) if p.leader != NO_LEADER else None
        if leader_log is None:
            return
        limit = self.config.log_max_bytes
        topic = self.cluster.topics.get(p.topic)
        if (topic is None or RETENTION_BYTES not in topic.configs) and (
            limit < 0 or leader_log.size_bytes <= limit
        ):
            return  # the common case, without reading the topic's settings
        retention = self.topic_settings(p.topic).retention_bytes
        if retention < 0:
            return
        for replica_log in data.logs.values():
            if replica_log.size_bytes > retention:
                replica_log.retain_bytes(retention, p.high_watermark)
        if data.transactional and data.producers is not None:
            data.producers.forget_aborted(leader_log.log_start_offset)

    # ------------------------------------------------------------------------------------- producing

    def append(
        self, p: PartitionState, batch: ClientBatch, settings: TopicSettings, acks: int = ACKS_ALL
    ) -> Appended | Refusal:
        """Append a client's checked batch at ``p``'s leader (the caller checked leadership, the batch and
        min.insync.replicas): Kafka's producer-state checks first (a retried duplicate is answered with
        its original offsets and nothing is appended), then the append with the Produce's ``acks`` kept
        on the batch (an ``acks=1`` batch is watched until committed, see :meth:`lost_records`); the
        model's leader log end offset follows and replication is told there is work.

        With ``acks=all`` the wait for the in-sync replicas is registered in this same step
        (``Appended.replicated``, :meth:`_wait`), for a retried duplicate too: nothing can change the
        leader between the append and the wait, and the wait compares leader epochs when it completes,
        so a new leader's high watermark never answers for a batch the old leader appended."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            data = self._make(p)
        elif data.leader_epoch != p.leader_epoch or data.leader != p.leader:
            self._leader_changed(p, data)
        leader_log = data.logs[p.leader]
        producers = self._producers(data, leader_log)
        header = batch.header
        checked = producers.check(header, leader_log.log_end_offset, p.topic, p.index)
        if isinstance(checked, Refusal):
            return checked
        if isinstance(checked, BatchMetadata):
            original = leader_log.batch_at(checked.first_offset)
            return Appended(
                checked.first_offset,
                checked.last_offset,
                checked.timestamp if settings.limits.log_append_time else -1,
                leader_log.log_start_offset,
                duplicate=True,
                replicated=self._wait(p, data, checked.last_offset + 1, original)
                if acks == ACKS_ALL
                else None,
            )
        append_time = self.now_ms() if settings.limits.log_append_time else None
        # An acks=all batch is not acknowledged until its wait succeeds (0 until then: see _acknowledge).
        entry = leader_log.append_as_leader(
            batch, p.leader_epoch, append_time, 0 if acks == ACKS_ALL else acks
        )
        replicated = self._wait(p, data, entry.last_offset + 1, entry) if acks == ACKS_ALL else None
        producers.record(header, entry.base_offset)
        if header.is_transactional:
            data.transactional = True
        if acks == 1:
            data.unreplicated.append(entry)
        return self._appended(p, data, leader_log, entry, append_time, "produce", replicated)

    def _appended(
        self,
        p: PartitionState,
        data: PartitionData,
        leader_log: Log,
        entry: StoredBatch,
        append_time: int | None,
        why: str,
        replicated: asyncio.Future[ErrorCode] | None,
    ) -> Appended:
        """After an append at the leader: the model's log end offset follows, replication is told (which
        may complete ``replicated``, the append's wait, at once)."""
        li = p.replicas.index(p.leader)
        leo = list(p.leo)
        leo[li] = leader_log.log_end_offset
        self.cluster.progress(p, leo=leo)
        self.replication.appended(p)
        self.replication.refresh(p, why)
        self._retain(p, data)
        return Appended(
            entry.base_offset,
            entry.last_offset,
            append_time if append_time is not None else -1,
            leader_log.log_start_offset,
            replicated=replicated,
        )

    def append_marker(
        self, p: PartitionState, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> Appended | Refusal:
        """Append a transaction marker at ``p``'s leader (the caller checked that it has one), as a leader
        appends the control batch of a WriteTxnMarkers request (origin COORDINATOR, acks=all): the
        producer-state checks of a marker, then the append, its wait for the in-sync replicas registered
        in the same step (``Appended.replicated``, as :meth:`append`)."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            data = self._make(p)
        elif data.leader_epoch != p.leader_epoch or data.leader != p.leader:
            self._leader_changed(p, data)
        leader_log = data.logs[p.leader]
        producers = self._producers(data, leader_log)
        refusal = producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if refusal is not None:
            return refusal
        settings = self.topic_settings(p.topic)
        now = self.now_ms()
        raw = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now)
        append_time = now if settings.limits.log_append_time else None
        # Acknowledged to the coordinator when its wait (registered here, as for an acks=all batch) succeeds.
        entry = leader_log.append_as_leader(
            ClientBatch(memoryview(raw), read_header(raw)), p.leader_epoch, append_time, 0
        )
        replicated = self._wait(p, data, entry.last_offset + 1, entry)
        producers.record_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, entry.base_offset, now
        )
        data.transactional = True
        return self._appended(p, data, leader_log, entry, append_time, "transaction marker", replicated)

    def last_stable_offset(self, p: PartitionState) -> int:
        """The last stable offset of ``p`` (Kafka's ``UnifiedLog.lastStableOffset``): the high watermark, or
        the first offset of the oldest transaction still open (or whose marker is not yet below the high
        watermark) when that is lower. What a read_committed consumer reads up to."""
        hw = p.high_watermark
        data = self._partitions.get((p.topic, p.index))
        if data is None or not data.transactional or p.leader == NO_LEADER:
            return hw
        if data.leader_epoch != p.leader_epoch or data.leader != p.leader:
            self._leader_changed(p, data)
        leader_log = data.logs.get(p.leader)
        if leader_log is None:
            return hw
        first = self._producers(data, leader_log).first_unstable_offset(hw)
        return hw if first is None or first > hw else first

    def aborted_transactions(self, p: PartitionState, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of ``p``'s offsets [start, end) is told of
        (Kafka's ``collectAbortedTransactions``): the consumer drops their records itself."""
        data = self._partitions.get((p.topic, p.index))
        if data is None or not data.transactional or p.leader == NO_LEADER or start >= end:
            return []
        leader_log = data.logs.get(p.leader)
        if leader_log is None:
            return []
        return self._producers(data, leader_log).aborted_between(start, end)

    def _producers(self, data: PartitionData, leader_log: Log) -> ProducerStates:
        """The leader's producer state (rebuilt from its log when it was dropped), its producers idle for
        ``producer.id.expiration.ms`` forgotten every ``producer.id.expiration.check.interval.ms`` (Kafka's
        periodic task: looked at here when the partition is next appended to or described)."""
        if data.producers is None:
            data.producers = ProducerStates.from_batches(
                leader_log.batches(), self.config.max_producers_per_partition
            )
        now = self.now_ms()
        if now - data.producers_checked >= self.config.producer_id_expiration_check_interval_ms:
            data.producers_checked = now
            data.producers.expire(now, self.config.producer_id_expiration_ms)
        return data.producers

    def _wait(
        self, p: PartitionState, data: PartitionData, end: int, entry: StoredBatch | None
    ) -> asyncio.Future[ErrorCode]:
        """Kafka's ``DelayedProduce``, registered in the step of the append: a future set NONE when the
        high watermark reaches ``end`` in the current leader epoch (``entry`` is then acknowledged), or
        NOT_LEADER_OR_FOLLOWER when the leader changes first (:meth:`_leader_changed`,
        :meth:`high_watermark_moved`). The caller bounds the wait (and cancels the future when it gives
        up: the batch then stays unacknowledged)."""
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        if p.high_watermark >= end:
            self._acknowledge(entry)
            future.set_result(ErrorCode.NONE)
        else:
            data.waiters.append(_Waiter(end, p.leader_epoch, entry, future))
        return future

    def watch(self, p: PartitionState) -> asyncio.Future[None]:
        """A future set when ``p``'s high watermark moves, the controller changes it (its leader), or
        it is deleted."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watchers = self._watchers.setdefault((p.topic, p.index), [])
        if len(watchers) >= _PRUNE_WATCHERS:  # waits that ended without a change (cancelled) go
            watchers[:] = [f for f in watchers if not f.done()]
        watchers.append(future)
        return future

    def unwatch(self, p: PartitionState, future: asyncio.Future[None]) -> None:
        """A fetch's wait on ``p`` ended: its future leaves the partition's list (an idle partition
        polled over and over keeps none)."""
        key = (p.topic, p.index)
        watchers = self._watchers.get(key)
        if watchers is None:
            return
        try:
            watchers.remove(future)
        except ValueError:
            pass
        if not watchers:
            del self._watchers[key]

    def delete_records(self, p: PartitionState, offset: int) -> int:
        """DeleteRecords at the leader (the caller checked ``offset`` against the high watermark): every
        replica's log start moves to ``offset`` (a replica whose log ends before it keeps its own end);
        returns the leader's new log start offset."""
        data = self._partitions.get((p.topic, p.index))
        if data is None:
            return 0
        for replica_log in data.logs.values():
            replica_log.move_start(min(offset, replica_log.log_end_offset))
        # The producers' state stays (Kafka's ProducerStateManager.onLogStartOffsetIncremented keeps it):
        # rebuilding it from the log at the next append cost a pass over every batch the log holds.
        return data.logs[p.leader].log_start_offset


def _copy(source: Log, target: Log, upto: int) -> None:
    """A follower copies ``source``'s batches from its log end offset until it reaches ``upto``: client
    batches whole (the last may end past ``upto``), synthetic runs cut exactly."""
    while target.log_end_offset < upto:
        entry: StoredBatch | None = source.batch_at(target.log_end_offset)
        if entry is None:
            break
        if entry.is_synthetic:
            end = min(entry.last_offset + 1, upto)
            target.extend_synthetic(end - target.log_end_offset, entry.leader_epoch, entry.max_timestamp)
        elif entry.base_offset == target.log_end_offset:
            target.append_copy(entry)
        else:  # not expected: a follower's log ends at a batch boundary of its leader's
            raise AssertionError(f"follower at {target.log_end_offset} inside the leader's {entry!r}")
