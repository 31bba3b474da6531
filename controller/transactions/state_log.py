"""``__transaction_state`` on the replication model: where the transaction coordinator keeps its state,
as Kafka's ``TransactionStateManager`` does.

A transactional id belongs to partition ``Utils.abs(transactionalId.hashCode()) %
transaction.state.log.num.partitions`` of ``__transaction_state`` and its coordinator is that partition's
leader (:class:`~controller.coordinator_topic.CoordinatorTopic`, shared with the group coordinator). The
topic is made at the first FindCoordinator for a transaction, with
``transaction.state.log.replication.factor`` replicas and ``min.insync.replicas`` =
``transaction.state.log.min.isr``.

Every transition of a transactional id (:class:`~controller.transactions.metadata.Transit`) is a record
appended to the partition's leader; it becomes the state only once the partition's high watermark covers
it (:meth:`StateLog.append`, Kafka's ``appendTransactionToLog`` with acks=all): an in-sync set below
``min.insync.replicas``, or no replication within the transaction's own timeout (the TransactionTimeoutMs
its producer gave: Kafka's append waits ``txnTimeoutMs``, and answers its REQUEST_TIMED_OUT as
COORDINATOR_NOT_AVAILABLE), answers COORDINATOR_NOT_AVAILABLE; a move of the partition's leader
meanwhile, NOT_COORDINATOR.

**Moves.** When the partition's leader changes (a crash, a hang, an election), the new leader is the
coordinator: it loads the partition from its own log (the records below its log end offset) with the
partition's leader epoch as its coordinator epoch, answering COORDINATOR_LOAD_IN_PROGRESS for
:data:`~controller.coordinator_topic.LOAD_MS` on the cluster's clock; then it completes every transaction
that was preparing to commit or abort (:attr:`StateLog.on_loaded`: the coordinator writes their markers
again), as Kafka's ``loadTransactionsForTxnTopicPartition`` does. Transactions left Ongoing are aborted by
their timeout. Records above the new leader's log end offset are gone: those that had been replicated
(an unclean election took them) are listed as :class:`LostTxnRecord` and written to the event log, and so
are those an earlier coordinator loaded as its state from above the high watermark (a load reads up to
the log end, as Kafka's does): that coordinator answered from them (AddPartitionsToTxn of a partition
already in the transaction, a partition leader's verification), so their loss is reported as one. On the
Fluvio policy, whose high watermark waits for every replica, such a record can stay above it through a
whole coordinator epoch, and the next leader may not have it (docs/data-path.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from controller.clock import Clock, Timer
from controller.cluster import NO_LEADER, Cluster, PartitionState
from controller.config import ServerConfig
from controller.config.topic_configs import MIN_INSYNC_REPLICAS
from controller.coordinator_topic import LOAD_MS, CoordinatorTopic
from controller.dynamics.replication import Replication
from controller.topic_admin import TopicAdmin
from controller.transactions.metadata import TransactionMetadata, Transit, TxnState
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["TRANSACTION_STATE_TOPIC", "LostTxnRecord", "StateLog"]

TRANSACTION_STATE_TOPIC = "__transaction_state"
#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096


@dataclass(frozen=True)
class LostTxnRecord:
    """A record of ``__transaction_state`` that a move of its leader took away, after it was replicated
    (an unclean election) or after a coordinator had loaded it as its state: the transactional id, the
    state the record held and its transaction's partitions, where it was, when it went, and why it
    counted (``cause``)."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    log_partition: int
    log_offset: int
    lost_at: int
    partitions: tuple[tuple[str, int], ...] = ()
    cause: str = "replicated"


class _Record(NamedTuple):
    offset: int
    transactional_id: str
    #: None: a tombstone (the transactional id expired).
    transit: Transit | None


class _Append(NamedTuple):
    offset: int
    transactional_id: str
    coordinator_epoch: int
    transit: Transit
    metadata: TransactionMetadata
    respond: Callable[[ErrorCode], None]
    deadline: int


class StateLog:
    """The transaction coordinator's state, by ``__transaction_state`` partition (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.topic = CoordinatorTopic(
            TRANSACTION_STATE_TOPIC,
            config.txn_partitions,
            config.txn_replication_factor,
            {MIN_INSYNC_REPLICAS: str(config.txn_min_isr), "cleanup.policy": "compact"},
            cluster,
            clock,
            replication,
            topic_admin,
            config.replication_tick_ms,
        )
        #: The loaded transactional ids, by partition.
        self.cache: dict[int, dict[str, TransactionMetadata]] = {}
        #: The coordinator epoch each partition was loaded with (its leader epoch then).
        self.epochs: dict[int, int] = {}
        #: Every record appended, by partition, in log order (compacted: the last per transactional id).
        self._records: dict[int, list[_Record]] = {}
        self._compact_at: dict[int, int] = {}
        #: The broker holding each partition's state, and when its load ends.
        self._holder: dict[int, int] = {}
        self._loaded_at: dict[int, int] = {}
        self._load_timers: dict[int, Timer] = {}
        #: The highest high watermark seen per partition: records below it were acknowledged.
        self._committed: dict[int, int] = {}
        #: Per partition, the log end its coordinator loaded up to, with that coordinator's epoch: records
        #: below it were its state (answered from), replicated or not.
        self._loaded_end: dict[int, tuple[int, int]] = {}
        self._appends: dict[int, list[_Append]] = {}
        self._timeout_timer: Timer | None = None
        self.lost_records: list[LostTxnRecord] = []
        #: Told of each transaction a newly loaded partition holds in PrepareCommit or PrepareAbort, with
        #: the coordinator epoch (the coordinator writes its markers).
        self.on_loaded: Callable[[int, TransactionMetadata], None] = lambda epoch, metadata: None
        #: Told of each partition unloaded (its leader moved): its transactional ids' markers stop.
        self.on_unloaded: Callable[[int], None] = lambda index: None

    def close(self) -> None:
        self.topic.close()
        for timer in self._load_timers.values():
            timer.cancel()
        if self._timeout_timer is not None:
            self._timeout_timer.cancel()

    # ------------------------------------------------------------------------------------- lookups

    def partition_of(self, transactional_id: str) -> int:
        return self.topic.partition_of(transactional_id)

    async def ensure_topic(self) -> ErrorCode:
        return await self.topic.ensure()

    def coordinator_of(self, transactional_id: str) -> tuple[ErrorCode, int]:
        return self.topic.coordinator_of(transactional_id)

    def check(self, transactional_id: str, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) coordinates
        ``transactional_id`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS. A partition without a leader (or before the topic is made) is owned
        by no broker: NOT_COORDINATOR, as Kafka's TransactionStateManager answers a partition it does not
        own (FindCoordinator, which reads :meth:`coordinator_of`, says COORDINATOR_NOT_AVAILABLE)."""
        error, leader = self.coordinator_of(transactional_id)
        if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return ErrorCode.NOT_COORDINATOR
        if error:
            return error
        if broker is not None and broker != leader:
            return ErrorCode.NOT_COORDINATOR
        index = self.partition_of(transactional_id)
        self._follow(index, leader)
        if self.loading(index):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def loading(self, index: int) -> bool:
        return self.clock.now() < self._loaded_at.get(index, 0)

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        """The transactional id's state (after :meth:`check` said NONE), None when it has none."""
        return self.cache.get(self.partition_of(transactional_id), {}).get(transactional_id)

    def put(self, metadata: TransactionMetadata) -> TransactionMetadata:
        """``putTransactionStateIfNotExists``."""
        cache = self.cache.setdefault(self.partition_of(metadata.transactional_id), {})
        return cache.setdefault(metadata.transactional_id, metadata)

    def coordinator_epoch(self, transactional_id: str) -> int:
        return self.epochs.get(self.partition_of(transactional_id), -1)

    def all_metadata(self) -> list[TransactionMetadata]:
        """Every loaded transactional id (after :meth:`follow_all`), by id."""
        return sorted(
            (m for cache in self.cache.values() for m in cache.values()), key=lambda m: m.transactional_id
        )

    def any_loading(self) -> bool:
        now = self.clock.now()
        return any(now < at for at in self._loaded_at.values())

    # ------------------------------------------------------------------------------------- moves

    def follow_all(self) -> None:
        """Brings every partition's state to its current leader (what a check does for one)."""
        topic = self.cluster.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return
        serving = self.cluster.serving_ids()
        for p in topic.partitions:
            if p.leader != NO_LEADER and p.leader in serving:
                self._follow(p.index, p.leader)

    def partitions_changed(self, partitions: Sequence[PartitionState]) -> None:
        """The controller changed these partitions: those of ``__transaction_state`` whose leader moved are
        loaded by their new leader now (Kafka's ``onElection``), not at the next request."""
        serving: frozenset[int] | None = None
        for p in partitions:
            if p.topic != TRANSACTION_STATE_TOPIC:
                continue
            if self._holder.get(p.index) == p.leader and self.epochs.get(p.index) == p.leader_epoch:
                continue
            if p.index not in self._holder and p.index not in self._records:
                continue  # never used: nothing to load
            if serving is None:
                serving = self.cluster.serving_ids()
            if p.leader == NO_LEADER or p.leader not in serving:
                self._unload(p.index, "partition has no serving leader")
            else:
                self._follow(p.index, p.leader)

    def _unload(self, index: int, why: str) -> None:
        """No broker holds the partition's state (no serving leader): pending appends fail."""
        holder = self._holder.pop(index, None)
        if holder is None:
            return
        self._fail_appends(index, ErrorCode.NOT_COORDINATOR)
        self.cache.pop(index, None)
        self.on_unloaded(index)
        log.info("%s-%d unloaded from broker %d: %s", TRANSACTION_STATE_TOPIC, index, holder, why)

    def _follow(self, index: int, leader: int) -> None:
        holder = self._holder.get(index)
        p = self.topic.partition(index)
        assert p is not None
        if holder == leader and self.epochs.get(index) == p.leader_epoch:
            return
        self._holder[index] = leader
        self.epochs[index] = p.leader_epoch
        if holder is None and index not in self._records:
            self.cache.setdefault(index, {})
            return  # the partition's first coordinator: nothing to load
        now = self.clock.now()
        self._fail_appends(index, ErrorCode.NOT_COORDINATOR)
        self.on_unloaded(index)
        end = p.leo_of(leader)
        committed = max(self._committed.get(index, 0), p.high_watermark)
        loaded_end, loaded_epoch = self._loaded_end.get(index, (0, -1))
        kept, lost = [], []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        for record in lost:
            if record.transit is None or record.offset >= max(committed, loaded_end):
                continue  # never acknowledged, never answered from
            transit = record.transit
            cause = (
                "replicated"
                if record.offset < committed
                else f"loaded above the high watermark by the coordinator of epoch {loaded_epoch}"
            )
            lost_record = LostTxnRecord(
                record.transactional_id,
                transit.state.value,
                transit.producer_id,
                transit.producer_epoch,
                index,
                record.offset,
                now,
                tuple(sorted(transit.partitions)),
                cause,
            )
            self.lost_records.append(lost_record)
            log.warning("%s-%d: record lost (%s): %s", TRANSACTION_STATE_TOPIC, index, cause, lost_record)
        self._committed[index] = min(committed, end)
        self._loaded_end[index] = (end, p.leader_epoch)
        loaded: dict[str, TransactionMetadata] = {}
        for record in kept:
            if record.transit is None:
                loaded.pop(record.transactional_id, None)
            else:
                loaded[record.transactional_id] = TransactionMetadata.from_transit(
                    record.transactional_id, record.transit
                )
        self.cache[index] = loaded
        self._loaded_at[index] = now + LOAD_MS
        timer = self._load_timers.pop(index, None)
        if timer is not None:
            timer.cancel()
        self._load_timers[index] = self.clock.call_later(
            LOAD_MS, lambda: self._loaded(index, p.leader_epoch), "transaction state loaded"
        )
        self.cluster.events.record(
            "transaction",
            f"{TRANSACTION_STATE_TOPIC}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {len(loaded)} transactional id(s) from its log up to offset {end}",
        )

    def _loaded(self, index: int, epoch: int) -> None:
        """The load is over: transactions preparing to end are completed (their markers written again)."""
        self._load_timers.pop(index, None)
        if self.epochs.get(index) != epoch:
            return
        for metadata in sorted(self.cache.get(index, {}).values(), key=lambda m: m.transactional_id):
            if (
                metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
                and not metadata.in_progress
            ):
                self.on_loaded(epoch, metadata)

    # ------------------------------------------------------------------------------------- appends

    def append(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        transit: Transit,
        metadata: TransactionMetadata,
        respond: Callable[[ErrorCode], None],
    ) -> None:
        """Writes ``transit`` (pending on ``metadata``) to the transactional id's partition; once replicated
        it becomes the state and ``respond(NONE)``; else the transition is dropped and ``respond`` gets
        the error (Kafka's ``appendTransactionToLog``)."""
        index = self.partition_of(transactional_id)
        p = self.topic.partition(index)
        error = ErrorCode.NONE
        if p is None:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif self.epochs.get(index) != coordinator_epoch or p.leader_epoch != coordinator_epoch:
            error = ErrorCode.NOT_COORDINATOR
        elif len(p.isr) < self.cluster.min_insync_replicas(p):
            # NOT_ENOUGH_REPLICAS from the append, which the coordinator answers as not available.
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if error:
            metadata.abandon()
            respond(error)
            return
        assert p is not None
        offset = p.leo[p.replicas.index(p.leader)]
        self.topic.append(index, 1, "transaction coordinator append")
        self._records.setdefault(index, []).append(_Record(offset, transactional_id, transit))
        records = self._records[index]
        if len(records) >= self._compact_at.get(index, COMPACT_AT):
            self._compact(index, min(p.leo))
        entry = _Append(
            offset,
            transactional_id,
            coordinator_epoch,
            transit,
            metadata,
            respond,
            # Kafka's appendTransactionToLog waits the transaction's timeout, not a request's.
            self.clock.now() + max(1, transit.timeout_ms),
        )
        self._appends.setdefault(index, []).append(entry)
        self.topic.wait(index, offset, lambda: self._replicated(index, entry))
        timer = self._timeout_timer
        if timer is None or entry.deadline < timer.when:
            if timer is not None:
                timer.cancel()
            self._timeout_timer = self.clock.call_later(
                max(1, entry.deadline - self.clock.now()), self._expire, "transaction log appends"
            )

    def _replicated(self, index: int, entry: _Append) -> None:
        appends = self._appends.get(index)
        if not appends or entry not in appends:
            return  # failed already (the partition moved)
        appends.remove(entry)
        p = self.topic.partition(index)
        if p is not None:
            self._committed[index] = max(self._committed.get(index, 0), p.high_watermark)
        cache = self.cache.get(index, {})
        if (
            self.epochs.get(index) != entry.coordinator_epoch
            or cache.get(entry.transactional_id) is not entry.metadata
        ):
            entry.metadata.abandon()
            entry.respond(ErrorCode.NOT_COORDINATOR)
            return
        entry.metadata.complete(entry.transit)
        entry.respond(ErrorCode.NONE)

    def _fail_appends(self, index: int, error: ErrorCode) -> None:
        for entry in self._appends.pop(index, []):
            entry.metadata.abandon()
            entry.respond(error)

    def _expire(self) -> None:
        """Appends not replicated within the timeout: COORDINATOR_NOT_AVAILABLE (the record stays)."""
        self._timeout_timer = None
        now = self.clock.now()
        for index, appends in list(self._appends.items()):
            late = [a for a in appends if a.deadline <= now]
            for entry in late:
                appends.remove(entry)
                entry.metadata.abandon()
                entry.respond(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if not appends:
                del self._appends[index]
        pending = [a.deadline for appends in self._appends.values() for a in appends]
        if pending:
            self._timeout_timer = self.clock.call_later(
                max(1, min(pending) - now), self._expire, "transaction log appends"
            )

    def write_tombstone(self, transactional_id: str) -> None:
        """The transactional id expired: a tombstone, and it leaves the cache."""
        index = self.partition_of(transactional_id)
        p = self.topic.partition(index)
        self.cache.get(index, {}).pop(transactional_id, None)
        if p is None or p.leader == NO_LEADER:
            return
        offset = p.leo[p.replicas.index(p.leader)]
        self.topic.append(index, 1, "transactional id expired")
        self._records.setdefault(index, []).append(_Record(offset, transactional_id, None))

    def _compact(self, index: int, below: int) -> None:
        """``__transaction_state`` is compacted: of the records every replica has, the last per
        transactional id is kept (tombstones too)."""
        records = self._records[index]
        last: dict[str, int] = {}
        n = 0
        for n, record in enumerate(records):
            if record.offset >= below:
                break
            last[record.transactional_id] = n
        else:
            n = len(records)
        if len(last) < n:
            keep = sorted(last.values())
            self._records[index] = records = [records[k] for k in keep] + records[n:]
        self._compact_at[index] = max(COMPACT_AT, 2 * len(records))
