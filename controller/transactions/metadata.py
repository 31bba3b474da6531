"""A transactional id's state at its coordinator and the transitions between states, as Kafka's
``TransactionMetadata`` and ``TxnTransitMetadata`` define them.

Every change is two steps, as in Kafka: a ``prepare_*`` method checks that the target state may follow
the current one and returns the :class:`Transit` (the whole state after the change) with the change
*pending* (no other change may start meanwhile: CONCURRENT_TRANSACTIONS); the coordinator writes the
transit to ``__transaction_state`` and, once it is replicated, :meth:`TransactionMetadata.complete`
makes it the state (or :meth:`TransactionMetadata.abandon` drops it when the write failed).

States and their transitions (Kafka's ``TransactionState``)::

    Empty             <- Empty, CompleteCommit, CompleteAbort            (InitProducerId: epoch bump)
    Ongoing           <- Ongoing, Empty, CompleteCommit, CompleteAbort   (partitions or offsets added)
    PrepareCommit     <- Ongoing                                         (EndTxn commit)
    PrepareAbort      <- Ongoing, PrepareEpochFence                      (EndTxn abort, fence, timeout)
    CompleteCommit    <- PrepareCommit                                   (every marker written)
    CompleteAbort     <- PrepareAbort
    PrepareEpochFence <- Ongoing                                         (never written: becomes PrepareAbort)
    Dead              <- Empty, CompleteCommit, CompleteAbort            (expired transactional id)

With KIP-890 part 2 (transaction version 2) every end of a transaction bumps the producer epoch at
PrepareCommit / PrepareAbort; the epoch before is kept as ``last_producer_epoch`` so that a retried
EndTxn is recognised; an exhausted epoch (32766) gets a new producer id at the end of the transaction
(``next_producer_id``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final, NamedTuple

__all__ = [
    "MAX_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TopicPartition",
    "Transit",
    "TransactionMetadata",
    "TxnState",
    "is_epoch_exhausted",
]

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
#: ``Short.MAX_VALUE``: the last epoch, kept for fencing (a client never gets it).
MAX_EPOCH: Final = 32767

#: (topic, partition)
TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's transaction states, by the names DescribeTransactions and ListTransactions give."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def valid_previous(self) -> frozenset[TxnState]:
        return _PREVIOUS[self]

    @property
    def expiration_allowed(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @classmethod
    def named(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.value == name:
                return state
        return None


_PREVIOUS: Final[dict[TxnState, frozenset[TxnState]]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


def is_epoch_exhausted(epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``: the client may not get the last epoch (kept for fencing)."""
    return epoch >= MAX_EPOCH - 1


class Transit(NamedTuple):
    """The state a transition leads to (Kafka's ``TxnTransitMetadata``): what is written to
    ``__transaction_state`` and, once replicated, becomes the transactional id's state."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int
    #: The client's transaction version when it was made (2: KIP-890 part 2's epoch bumps).
    transaction_version: int


class IllegalTransition(RuntimeError):
    """A transition Kafka's coordinator would treat as fatal (a bug here, never a client's doing)."""


@dataclass(eq=False)
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``)."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    transaction_version: int = 0
    #: The state a transition in progress leads to (None: none in progress).
    pending: TxnState | None = None
    #: A fence whose write failed: the next fence does not bump the epoch again.
    failed_epoch_fence: bool = False

    @classmethod
    def from_transit(cls, transactional_id: str, transit: Transit) -> TransactionMetadata:
        """The state as a coordinator loads it from a record."""
        return cls(
            transactional_id,
            transit.producer_id,
            transit.previous_producer_id,
            transit.next_producer_id,
            transit.producer_epoch,
            transit.last_producer_epoch,
            transit.timeout_ms,
            transit.state,
            set(transit.partitions),
            transit.start_ms,
            transit.update_ms,
            transit.transaction_version,
        )

    @property
    def in_progress(self) -> bool:
        """``pendingTransitionInProgress``."""
        return self.pending is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def supports_epoch_bump(self) -> bool:
        return self.transaction_version >= 2

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TxnState.ONGOING, TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT)

    # ------------------------------------------------------------------------------------- transitions

    def _transit(
        self,
        state: TxnState,
        producer_id: int,
        epoch: int,
        last_epoch: int,
        timeout_ms: int,
        partitions: frozenset[TopicPartition],
        start_ms: int,
        update_ms: int,
        next_producer_id: int = NO_PRODUCER_ID,
        transaction_version: int = 0,
    ) -> Transit:
        """``prepareTransitionTo``: checks and marks the transition pending."""
        if self.pending is not None:
            raise IllegalTransition(
                f"{self.transactional_id}: a transition to {state.value} while one to {self.pending.value} is "
                "in progress"
            )
        if producer_id < 0:
            raise IllegalTransition(f"{self.transactional_id}: producer id {producer_id}")
        if state is not TxnState.DEAD and epoch < 0:
            raise IllegalTransition(f"{self.transactional_id}: producer epoch {epoch}")
        if self.state not in state.valid_previous:
            raise IllegalTransition(
                f"{self.transactional_id}: {state.value} cannot follow {self.state.value}"
            )
        self.pending = state
        return Transit(
            producer_id,
            self.producer_id,
            next_producer_id,
            epoch,
            last_epoch,
            timeout_ms,
            state,
            partitions,
            start_ms,
            update_ms,
            transaction_version,
        )

    def prepare_fence_epoch(self) -> Transit:
        """``prepareFenceProducerEpoch``: an open transaction is to be aborted and its producer fenced."""
        if self.producer_epoch == MAX_EPOCH:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence an epoch of {MAX_EPOCH}")
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._transit(
            TxnState.PREPARE_EPOCH_FENCE,
            self.producer_id,
            epoch,
            NO_PRODUCER_EPOCH,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_ms,
            self.update_ms,
        )

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now: int
    ) -> Transit | None:
        """``prepareIncrementProducerEpoch`` (InitProducerId): the next epoch, or the current one for a retry
        of a call that succeeded; None when the expected epoch is fenced (PRODUCER_FENCED)."""
        if self.epoch_exhausted:
            raise IllegalTransition(f"{self.transactional_id}: no epoch left for producer {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._transit(TxnState.EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1, now)

    def prepare_producer_id_rotation(
        self, producer_id: int, timeout_ms: int, now: int, record_last_epoch: bool
    ) -> Transit:
        """``prepareProducerIdRotation``: a new producer id at epoch 0 (the old one's epochs are exhausted)."""
        if self.has_pending_transaction:
            raise IllegalTransition(
                f"{self.transactional_id}: rotating the producer id of an open transaction"
            )
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._transit(TxnState.EMPTY, producer_id, 0, last, timeout_ms, frozenset(), -1, now)

    def prepare_add_partitions(
        self, added: set[TopicPartition] | frozenset[TopicPartition], now: int, transaction_version: int = 0
    ) -> Transit:
        """``prepareAddPartitions``: the transaction (begun now if none was open) with these partitions."""
        start = (
            now
            if self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT)
            else self.start_ms
        )
        return self._transit(
            TxnState.ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(self.partitions | set(added)),
            start,
            now,
            transaction_version=transaction_version,
        )

    def prepare_abort_or_commit(
        self, state: TxnState, transaction_version: int, next_producer_id: int, now: int
    ) -> Transit:
        """``prepareAbortOrCommit``: PrepareCommit or PrepareAbort; with transaction version 2 the epoch is
        bumped here."""
        if transaction_version >= 2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._transit(
            state,
            self.producer_id,
            epoch,
            last,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_ms,
            now,
            next_producer_id=next_producer_id,
            transaction_version=transaction_version,
        )

    def prepare_complete(self, now: int) -> Transit:
        """``prepareComplete``: every marker is written; CompleteCommit or CompleteAbort (with a new producer
        id when a version 2 bump exhausted the epoch)."""
        state = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        self.failed_epoch_fence = False
        if self.supports_epoch_bump and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        else:
            producer_id, epoch = self.producer_id, self.producer_epoch
        return self._transit(
            state,
            producer_id,
            epoch,
            self.producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_ms,
            now,
            transaction_version=self.transaction_version,
        )

    def prepare_dead(self) -> Transit:
        """``prepareDead``: the transactional id expired."""
        return self._transit(
            TxnState.DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_ms,
            self.update_ms,
        )

    # ------------------------------------------------------------------------------------- completion

    def complete(self, transit: Transit) -> None:
        """``completeTransitionTo``: the transit was replicated; it becomes the state."""
        to = self.pending
        if to is None or to is not transit.state:
            raise IllegalTransition(
                f"{self.transactional_id}: completing {transit.state.value} with {to} pending"
            )
        if to is TxnState.EMPTY:
            self.timeout_ms = transit.timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.previous_producer_id = transit.previous_producer_id
            self.partitions.clear()
            self.start_ms = -1
        elif to is TxnState.ONGOING:
            self.start_ms = transit.start_ms
            self.partitions |= transit.partitions
        elif to in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            if transit.transaction_version >= 2:
                self.producer_epoch = transit.producer_epoch
                self.last_producer_epoch = transit.last_producer_epoch
                self.next_producer_id = transit.next_producer_id
            else:
                self.producer_epoch = transit.producer_epoch
        elif to in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            self.start_ms = transit.start_ms
            self.partitions.clear()
            if transit.transaction_version >= 2:
                self.producer_epoch = transit.producer_epoch
                self.last_producer_epoch = transit.last_producer_epoch
                self.previous_producer_id = transit.previous_producer_id
                self.producer_id = transit.producer_id
                self.next_producer_id = transit.next_producer_id
        else:
            raise IllegalTransition(f"{self.transactional_id}: a transition to {to.value} is never completed")
        self.transaction_version = transit.transaction_version
        self.update_ms = transit.update_ms
        self.pending = None
        self.state = to

    def abandon(self) -> None:
        """The transit's write failed: no transition in progress any more."""
        self.pending = None

    def transit_now(self) -> Transit:
        """The state as it is, as a transit (what a record of it holds)."""
        return Transit(
            self.producer_id,
            self.previous_producer_id,
            self.next_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_ms,
            self.update_ms,
            self.transaction_version,
        )
