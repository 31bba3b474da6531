"""The transaction coordinator: Kafka's ``TransactionCoordinator`` on the cluster's clock.

Requests arrive from the handlers (``controller/transactions/handlers/``) with the broker whose listener
took them; each first asks the state log whether that broker coordinates the transactional id
(:meth:`StateLog.check`: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS), then
follows Kafka's checks in Kafka's order, prepares a transition (:mod:`.metadata`), writes it
(:meth:`StateLog.append`) and answers once it is replicated, through a ``respond`` callback.

- **InitProducerId** with a transactional id: a new producer id for a new id; else the epoch is bumped
  (Empty, CompleteCommit, CompleteAbort), a new producer id given when the epoch is exhausted, an open
  transaction is aborted with the producer fenced (PrepareEpochFence, then PrepareAbort with the bumped
  epoch; the caller gets CONCURRENT_TRANSACTIONS and retries), and a transaction preparing to end answers
  CONCURRENT_TRANSACTIONS. A producer id and epoch the request names (v3+) that do not match is
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4: the handler's call). ``transaction.timeout.ms``
  above ``transaction.max.timeout.ms`` is INVALID_TRANSACTION_TIMEOUT.
- **AddPartitionsToTxn** / **AddOffsetsToTxn** (its group's ``__consumer_offsets`` partition): the
  producer id must be the transactional id's (INVALID_PRODUCER_ID_MAPPING), the epoch its
  (PRODUCER_FENCED), no transition in progress nor a transaction ending (CONCURRENT_TRANSACTIONS);
  partitions already in an Ongoing transaction are answered at once. The verify-only form (KIP-890 part
  1, :meth:`TransactionCoordinator.verify`) answers per partition whether it is in the transaction
  (TRANSACTION_ABORTABLE when not).
- **EndTxn**: Ongoing goes to PrepareCommit / PrepareAbort (with KIP-890 part 2, EndTxn v5, the epoch is
  bumped there); once that is replicated the client is answered and the markers are written
  (:mod:`.markers`); when every marker is replicated, CompleteCommit / CompleteAbort. A retried EndTxn is
  answered NONE (the same end already complete), CONCURRENT_TRANSACTIONS (preparing), INVALID_TXN_STATE
  (the other end, or no transaction).
- **Timeouts**: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` the transactions
  open longer than their timeout are aborted with the producer fenced; every
  ``transaction.remove.expired.transaction.cleanup.interval.ms`` the transactional ids idle longer than
  ``transactional.id.expiration.ms`` (with no transaction) are forgotten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from controller.clock import Clock, Timer
from controller.config import ServerConfig
from controller.coordinator_topic import coordinator_partition
from controller.records.producers import ProducerIdAllocator
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from controller.transactions.markers import MarkerChannel, MarkerJob
from controller.transactions.metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    Transit,
    TxnState,
    is_epoch_exhausted,
)
from controller.transactions.state_log import StateLog
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["EndTxnResult", "InitResult", "TransactionCoordinator"]

#: (error, producer id, producer epoch)
InitResult = tuple[ErrorCode, int, int]
EndTxnResult = tuple[ErrorCode, int, int]


class TransactionCoordinator:
    """Every transactional id's coordinator (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        clock: Clock,
        state_log: StateLog,
        markers: MarkerChannel,
        producer_ids: Callable[[], ProducerIdAllocator],
        wall_ms: Callable[[], int],
    ) -> None:
        self.config = config
        self.clock = clock
        self.state_log = state_log
        self.markers = markers
        self._producer_ids = producer_ids
        #: The brokers' wall-clock time (ms): what start and update times are, as Kafka's are.
        self._now = wall_ms
        state_log.on_loaded = self._complete_loaded
        state_log.on_unloaded = markers.cancel_partition
        self._abort_timer: Timer | None = None
        self._expire_timer: Timer | None = None

    def start_timers(self) -> None:
        """Kafka's coordinator schedules the abort of timed-out transactions and the expiration of idle
        transactional ids at start; here, at the first transactional request."""
        if self._abort_timer is None:
            self._abort_timer = self.clock.call_later(
                self.config.txn_abort_interval_ms, self._abort_timed_out, "transaction timeouts"
            )
        if self._expire_timer is None:
            self._expire_timer = self.clock.call_later(
                self.config.txn_expiration_interval_ms, self._expire_ids, "transactional id expiration"
            )

    def close(self) -> None:
        for timer in (self._abort_timer, self._expire_timer):
            if timer is not None:
                timer.cancel()
        self.markers.close()
        self.state_log.close()

    def _allocate(self) -> int:
        return self._producer_ids().allocate()

    # ------------------------------------------------------------------------------------- InitProducerId

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        broker: int | None,
        respond: Callable[[InitResult], None],
    ) -> None:
        """``handleInitProducerId`` for a transactional id (``expected``: the request's producer id and epoch,
        v3+, when it names one)."""
        if not transactional_id:
            respond((ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            return
        if not 0 < timeout_ms <= self.config.txn_max_timeout_ms:
            respond((ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            return
        error = self.state_log.check(transactional_id, broker)
        if error:
            respond((error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            return
        self.start_timers()
        metadata = self.state_log.get(transactional_id)
        if metadata is None:
            metadata = self.state_log.put(
                TransactionMetadata(
                    transactional_id, self._allocate(), timeout_ms=timeout_ms, update_ms=self._now()
                )
            )
        epoch = self.state_log.coordinator_epoch(transactional_id)
        prepared = self._prepare_init(metadata, timeout_ms, expected)
        if isinstance(prepared, ErrorCode):
            respond((prepared, NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            return
        if prepared.state is TxnState.PREPARE_EPOCH_FENCE:
            # Abort the open transaction with the producer fenced; the caller retries.
            def fenced(result: EndTxnResult) -> None:
                code = result[0]
                respond(
                    (code if code else ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                )

            self._end_transaction(
                transactional_id,
                prepared.producer_id,
                prepared.producer_epoch,
                False,
                False,
                self.config.transaction_version,
                broker,
                fenced,
            )
            return

        def written(error: ErrorCode) -> None:
            if error:
                respond((error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH))
            else:
                log.info(
                    "initialized transactional id %s with producer id %d, epoch %d",
                    transactional_id,
                    metadata.producer_id,
                    metadata.producer_epoch,
                )
                respond((ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch))

        self.state_log.append(transactional_id, epoch, prepared, metadata, written)

    def _prepare_init(
        self, metadata: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None
    ) -> Transit | ErrorCode:
        """``prepareInitProducerIdTransit``."""
        if metadata.in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None:
            producer_id, epoch = expected
            valid = (
                metadata.producer_epoch == NO_PRODUCER_EPOCH
                or producer_id == metadata.producer_id
                or (producer_id == metadata.previous_producer_id and is_epoch_exhausted(epoch))
            )
            if not valid:
                return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state in (TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT, TxnState.EMPTY):
            if metadata.epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                return metadata.prepare_producer_id_rotation(
                    self._allocate(), timeout_ms, self._now(), expected is not None
                )
            transit = metadata.prepare_increment_epoch(
                timeout_ms, expected[1] if expected is not None else None, self._now()
            )
            return transit if transit is not None else ErrorCode.PRODUCER_FENCED
        if state is TxnState.ONGOING:
            return metadata.prepare_fence_epoch()
        raise RuntimeError(f"transactional id {metadata.transactional_id} in state {state.value}")

    # ------------------------------------------------------------------------------------- adding

    def _checked(
        self, transactional_id: str, producer_id: int, producer_epoch: int, broker: int | None
    ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """The checks every transactional request starts with: coordinator, mapping, epoch."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self.state_log.check(transactional_id, broker)
        if error:
            return error, None
        metadata = self.state_log.get(transactional_id)
        # A producer epoch below 0: the id's first InitProducerId never completed (its append failed), so no
        # producer holds this id yet (Kafka goes on and fails with an IllegalArgumentException).
        if metadata is None or metadata.producer_id != producer_id or metadata.producer_epoch < 0:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, metadata

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        broker: int | None,
        respond: Callable[[ErrorCode], None],
        transaction_version: int = 0,
    ) -> None:
        """``handleAddPartitionsToTransaction``: the partitions join the transaction (it begins if none is
        open); ``respond`` once that is replicated."""
        added = set(partitions)
        error, metadata = self._checked(transactional_id, producer_id, producer_epoch, broker)
        if error:
            respond(error)
            return
        assert metadata is not None
        if metadata.in_progress or metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            respond(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        if metadata.state is TxnState.ONGOING and added <= metadata.partitions:
            respond(ErrorCode.NONE)
            return
        self.start_timers()
        transit = metadata.prepare_add_partitions(added, self._now(), transaction_version)
        epoch = self.state_log.coordinator_epoch(transactional_id)
        self.state_log.append(transactional_id, epoch, transit, metadata, respond)

    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """``handleVerifyPartitionsInTransaction`` (AddPartitionsToTxn with VerifyOnly, as a partition leader
        asks it): per partition NONE when it is in the transaction, TRANSACTION_ABORTABLE when not; the
        coordinator's own errors for every partition."""
        wanted = list(partitions)
        error, metadata = self._checked(transactional_id, producer_id, producer_epoch, None)
        if not error:
            assert metadata is not None
            if metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error:
            return {tp: error for tp in wanted}
        assert metadata is not None
        return {
            tp: ErrorCode.NONE if tp in metadata.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in wanted
        }

    def offsets_partition(self, group_id: str) -> TopicPartition:
        """The ``__consumer_offsets`` partition of a group (what AddOffsetsToTxn adds)."""
        return GROUP_METADATA_TOPIC_NAME, coordinator_partition(group_id, self.config.offsets_partitions)

    # ------------------------------------------------------------------------------------- EndTxn

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        transaction_version: int,
        broker: int | None,
        respond: Callable[[EndTxnResult], None],
    ) -> None:
        """``handleEndTransaction``: the answer once PrepareCommit / PrepareAbort is replicated (the markers
        follow)."""
        self._end_transaction(
            transactional_id, producer_id, producer_epoch, commit, True, transaction_version, broker, respond
        )

    def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
        transaction_version: int,
        broker: int | None,
        respond: Callable[[EndTxnResult], None],
    ) -> None:
        """Kafka's ``endTransaction``, from a client (EndTxn) or from the coordinator itself (a fence, a
        timeout)."""
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if not transactional_id:
            respond((ErrorCode.INVALID_REQUEST, *fail))
            return
        error = self.state_log.check(transactional_id, broker)
        metadata = self.state_log.get(transactional_id) if not error else None
        if metadata is None:
            respond((error or ErrorCode.INVALID_PRODUCER_ID_MAPPING, *fail))
            return
        prepared = self._prepare_end(
            metadata, producer_id, producer_epoch, commit, from_client, transaction_version
        )
        if isinstance(prepared[0], ErrorCode):
            if metadata.pending is TxnState.PREPARE_EPOCH_FENCE:
                metadata.abandon()  # the fence goes no further
            respond(prepared)  # type: ignore[arg-type]
            return
        transit, fence = prepared  # type: ignore[misc]
        epoch = self.state_log.coordinator_epoch(transactional_id)

        def written(error: ErrorCode) -> None:
            if error:
                if fence:
                    metadata.failed_epoch_fence = True
                respond((error, *fail))
                return
            current = self.state_log.get(transactional_id)
            if current is not metadata or self.state_log.coordinator_epoch(transactional_id) != epoch:
                respond((ErrorCode.NOT_COORDINATOR, *fail))
                return
            complete = metadata.prepare_complete(self._now())
            respond((ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch))
            self._send_markers(epoch, metadata, complete)

        self.state_log.append(transactional_id, epoch, transit, metadata, written)

    def _prepare_end(
        self,
        metadata: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
        transaction_version: int,
    ) -> tuple[Transit, bool] | EndTxnResult:
        """The checks and the transition of ``endTransaction`` before the append: the transit and whether it
        fences the producer, or the answer."""
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        fencing = metadata.pending is TxnState.PREPARE_EPOCH_FENCE
        v2 = not fencing and metadata.supports_epoch_bump
        retry_on_overflow = (
            v2
            and metadata.previous_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and metadata.producer_epoch == 0
        )
        retry_on_bump = (
            not fencing and metadata.supports_epoch_bump and metadata.producer_epoch == producer_epoch + 1
        )
        state = metadata.state
        if v2:
            if state in (TxnState.ONGOING, TxnState.EMPTY, TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
                valid_epoch = producer_epoch == metadata.producer_epoch
            elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                valid_epoch = retry_on_bump
            else:
                valid_epoch = retry_on_bump or retry_on_overflow
        else:
            valid_epoch = (not from_client or producer_epoch == metadata.producer_epoch) and (
                producer_epoch >= metadata.producer_epoch
            )
        if metadata.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, *fail
        if not valid_epoch:
            return ErrorCode.PRODUCER_FENCED, *fail
        if metadata.in_progress and not fencing:
            return ErrorCode.CONCURRENT_TRANSACTIONS, *fail
        if state is TxnState.ONGOING:
            next_state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            next_producer_id = NO_PRODUCER_ID
            if transaction_version >= 2 and not fencing and metadata.epoch_exhausted:
                next_producer_id = self._allocate()
            fence = False
            if next_state is TxnState.PREPARE_ABORT and fencing:
                fence = True
                metadata.pending = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = metadata.prepare_abort_or_commit(
                next_state, transaction_version, next_producer_id, self._now()
            )
            return transit, fence
        if state is TxnState.COMPLETE_COMMIT:
            if commit:
                return ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch
            return ErrorCode.INVALID_TXN_STATE, *fail
        if state is TxnState.COMPLETE_ABORT:
            if not commit:
                return ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch
            return ErrorCode.INVALID_TXN_STATE, *fail
        if state is TxnState.PREPARE_COMMIT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE), *fail
        if state is TxnState.PREPARE_ABORT:
            return (ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS), *fail
        if state is TxnState.EMPTY:
            return ErrorCode.INVALID_TXN_STATE, *fail
        raise RuntimeError(f"transactional id {metadata.transactional_id} in state {state.value}")

    # ------------------------------------------------------------------------------------- markers

    def _send_markers(self, coordinator_epoch: int, metadata: TransactionMetadata, complete: Transit) -> None:
        """``addTxnMarkersToSend``: the markers, then CompleteCommit / CompleteAbort (retried while the
        coordinator stays and the append fails for want of replicas)."""
        commit = metadata.state is TxnState.PREPARE_COMMIT
        transactional_id = metadata.transactional_id

        def done() -> None:
            self._write_complete(coordinator_epoch, metadata, complete)

        job = MarkerJob(
            transactional_id,
            self.state_log.partition_of(transactional_id),
            coordinator_epoch,
            metadata.producer_id,
            metadata.producer_epoch,
            commit,
            metadata,
            done,
        )
        self.markers.send(job, set(metadata.partitions))

    def _write_complete(
        self, coordinator_epoch: int, metadata: TransactionMetadata, complete: Transit
    ) -> None:
        transactional_id = metadata.transactional_id

        def written(error: ErrorCode) -> None:
            if error in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR):
                if error:
                    log.info(
                        "%s: no longer its coordinator; the new one completes the transaction",
                        transactional_id,
                    )
                return
            # Not enough replicas, or not replicated in time: the coordinator tries again.
            if self.state_log.get(transactional_id) is metadata and metadata.pending is None:
                metadata.pending = complete.state
                self.clock.call_later(
                    self.config.replication_tick_ms,
                    lambda: self._write_complete(coordinator_epoch, metadata, complete),
                    "transaction completion retry",
                )

        if self.state_log.get(transactional_id) is not metadata:
            metadata.abandon()
            return
        self.state_log.append(transactional_id, coordinator_epoch, complete, metadata, written)

    def _complete_loaded(self, coordinator_epoch: int, metadata: TransactionMetadata) -> None:
        """A loaded transaction preparing to end: its markers are written again, then it completes."""
        log.info(
            "%s: completing the transaction %s found at load",
            metadata.transactional_id,
            "commit" if metadata.state is TxnState.PREPARE_COMMIT else "abort",
        )
        complete = metadata.prepare_complete(self._now())
        self._send_markers(coordinator_epoch, metadata, complete)

    # ------------------------------------------------------------------------------------- timers

    def _abort_timed_out(self) -> None:
        """``abortTimedOutTransactions``: transactions open longer than their timeout are aborted, their
        producer fenced."""
        self._abort_timer = self.clock.call_later(
            self.config.txn_abort_interval_ms, self._abort_timed_out, "transaction timeouts"
        )
        self.state_log.follow_all()
        now = self._now()
        for metadata in self.state_log.all_metadata():
            if metadata.in_progress or metadata.state is not TxnState.ONGOING:
                continue
            if metadata.start_ms + metadata.timeout_ms >= now:
                continue
            if self.state_log.check(metadata.transactional_id, None):
                continue  # loading, or no serving coordinator: the next round
            transactional_id = metadata.transactional_id
            log.info(
                "%s: transaction open longer than %d ms; aborting it", transactional_id, metadata.timeout_ms
            )
            transit = metadata.prepare_fence_epoch()

            def aborted(result: EndTxnResult, transactional_id: str = transactional_id) -> None:
                if result[0] not in (
                    ErrorCode.NONE,
                    ErrorCode.CONCURRENT_TRANSACTIONS,
                    ErrorCode.PRODUCER_FENCED,
                ):
                    log.warning(
                        "%s: the abort of its timed-out transaction failed: %s",
                        transactional_id,
                        result[0].name,
                    )

            self._end_transaction(
                transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                False,
                False,
                self.config.transaction_version,
                None,
                aborted,
            )

    def _expire_ids(self) -> None:
        """``removeExpiredTransactionalIds``: idle transactional ids without a transaction are forgotten."""
        self._expire_timer = self.clock.call_later(
            self.config.txn_expiration_interval_ms, self._expire_ids, "transactional id expiration"
        )
        now = self._now()
        for metadata in self.state_log.all_metadata():
            if metadata.in_progress or not metadata.state.expiration_allowed:
                continue
            if metadata.update_ms + self.config.txn_id_expiration_ms > now:
                continue
            index = self.state_log.partition_of(metadata.transactional_id)
            if self.state_log.loading(index):
                continue
            log.info("transactional id %s expired", metadata.transactional_id)
            self.state_log.write_tombstone(metadata.transactional_id)

    # ------------------------------------------------------------------------------------- reading

    def describe(self, transactional_id: str, broker: int | None) -> dict[str, Any]:
        """``handleDescribeTransactions``: one TransactionState entry."""
        entry: dict[str, Any] = {
            "ErrorCode": ErrorCode.NONE,
            "TransactionalId": transactional_id,
            "TransactionState": "",
            "TransactionTimeoutMs": 0,
            "TransactionStartTimeMs": -1,
            "ProducerId": -1,
            "ProducerEpoch": -1,
            "Topics": [],
        }
        if not transactional_id:
            entry["ErrorCode"] = ErrorCode.INVALID_REQUEST
            return entry
        error = self.state_log.check(transactional_id, broker)
        if error:
            entry["ErrorCode"] = error
            return entry
        metadata = self.state_log.get(transactional_id)
        if metadata is None or metadata.state is TxnState.DEAD:
            entry["ErrorCode"] = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            return entry
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(metadata.partitions):
            by_topic.setdefault(topic, []).append(partition)
        entry.update(
            TransactionState=metadata.state.value,
            TransactionTimeoutMs=metadata.timeout_ms,
            TransactionStartTimeMs=metadata.start_ms,
            ProducerId=metadata.producer_id,
            ProducerEpoch=metadata.producer_epoch,
            Topics=[{"Topic": t, "Partitions": ps} for t, ps in by_topic.items()],
        )
        return entry

    def list_transactions(
        self, states: list[str], producer_ids: list[int], duration_ms: int, broker: int | None
    ) -> dict[str, Any]:
        """``handleListTransactions`` at one broker: the transactional ids of the partitions it coordinates
        (the bootstrap listener answers for all), filtered."""
        self.state_log.follow_all()
        if self.state_log.any_loading():
            return {
                "ErrorCode": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                "UnknownStateFilters": [],
                "TransactionStates": [],
            }
        wanted: set[TxnState] = set()
        unknown: list[str] = []
        for name in states:
            state = TxnState.named(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        pids = set(producer_ids)
        now = self._now()
        found = []
        for metadata in self.state_log.all_metadata():
            if metadata.state is TxnState.DEAD:
                continue
            if broker is not None:
                _, leader = self.state_log.coordinator_of(metadata.transactional_id)
                if leader != broker:
                    continue
            if pids and metadata.producer_id not in pids:
                continue
            if states and metadata.state not in wanted:
                continue
            if duration_ms >= 0 and now - metadata.start_ms <= duration_ms:
                continue
            found.append(
                {
                    "TransactionalId": metadata.transactional_id,
                    "ProducerId": metadata.producer_id,
                    "TransactionState": metadata.state.value,
                }
            )
        return {"ErrorCode": ErrorCode.NONE, "UnknownStateFilters": unknown, "TransactionStates": found}
