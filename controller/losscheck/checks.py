"""What a run records and the checks that hold it to the promise of no acknowledged record lost without a
report (``docs/data-path.md``, "The promise").

A run (:mod:`controller.losscheck.runner`, or any test that fills a :class:`RunRecord` itself) records:

- every record a producer was told was written (:class:`Acknowledged`: where, with which ``acks``, and
  its producer id, epoch and sequence when the producer is idempotent);
- every record read back from the beginning of each partition once the cluster has recovered
  (:class:`ReadRecord`, with its batch's leader epoch and producer fields);
- the server's ``lost_records()``;
- what was seen of the high watermark as it moved and after every step (:class:`Observation`, made by
  :class:`HighWatermarkWatch`).

Each :class:`Check` reads the record and names what it finds wrong (:class:`Violation`). The default ones
(:data:`DEFAULT_CHECKS`) are the promise, one rule each:

1. no acknowledged ``acks=all`` record missing unless a reported loss with an unclean cause covers it;
2. no acknowledged ``acks=1`` record missing unless a reported loss covers it;
3. no loss reported that did not happen (the lost batch's records are not in the final log, and each of
   its offsets is explained by a missing record its producer wrote there);
4. no duplicate of one (producer id, producer epoch, sequence) in the final log;
5. the high watermark never above the log end of any member of the in-sync set (Kafka's ISR, Fluvio's
   LRS) after a step, and never moving with fewer replicas than the policy's minimum (Kafka:
   ``min.insync.replicas`` in the ISR; Fluvio: every replica of the assignment).

A transactional run (transactional producers, :data:`TRANSACTION_CHECKS` beside the default ones) also
records what a read_committed consumer reads back and each transaction's outcome as its producer was told
it (:class:`TransactionsRecord`, in :attr:`RunRecord.extras` under ``"transactions"``), and holds it to:

6. every record of a transaction whose commit was answered is read back by a read_committed consumer, or
   a reported loss with an unclean cause covers it;
7. no record of a transaction whose abort was answered is ever returned to a read_committed consumer;
8. after the recovery, no transaction holds a partition's last stable offset below its high watermark
   (a read_committed consumer reads every partition to its end);

except, for 6 to 8, where an unclean election took a later write of the same producer on the partition
(its transaction's marker), reported lost: the records then take the fate of that producer's next
marker there, or hang open without one, as on Kafka (a hanging transaction, KIP-664); the reported loss
is their cause.

Share groups add theirs the same way: a :class:`Check` subclass reading what their run puts in
:attr:`RunRecord.extras`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_CHECKS",
    "UNCLEAN_CAUSE",
    "Acknowledged",
    "TRANSACTION_CHECKS",
    "Check",
    "Loss",
    "Observation",
    "ReadRecord",
    "Unanswered",
    "RunRecord",
    "TransactionsRecord",
    "Violation",
    "check_run",
]

#: How a loss's cause names an unclean election (``controller.data_path``): the only kind that may take
#: an acknowledged ``acks=all`` record.
UNCLEAN_CAUSE = "unclean election"


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """A record its producer was told was written: at ``offset`` of ``topic``-``partition``, acknowledged
    with ``acks`` (-1 all, 1 the leader); ``value`` names it (unique in the run); the producer's id, epoch
    and the record's sequence (-1 without idempotence)."""

    topic: str
    partition: int
    offset: int
    value: bytes
    acks: int
    producer_id: int = -1
    producer_epoch: int = -1
    sequence: int = -1


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A record written and never answered (its connection closed, its answer dropped or given up):
    the leader may have appended it, and a loss of it may be reported (``acks=1`` is acknowledged by the
    leader's append, whether or not the answer reaches the producer)."""

    topic: str
    partition: int
    value: bytes
    producer_id: int = -1


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """A record read back: where, its value, its batch's leader epoch and producer fields."""

    topic: str
    partition: int
    offset: int
    value: bytes | None
    leader_epoch: int
    producer_id: int = -1
    producer_epoch: int = -1
    sequence: int = -1


@dataclass(frozen=True, slots=True)
class Loss:
    """One entry of ``lost_records()`` (the fields the checks read)."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    leader_epoch: int
    acks: int
    producer_id: int
    cause: str

    @classmethod
    def of(cls, lost: Any) -> Loss:
        """From a :class:`controller.data_path.LostRecords`."""
        return cls(
            lost.topic,
            lost.partition,
            lost.first_offset,
            lost.last_offset,
            lost.leader_epoch,
            lost.acks,
            lost.producer_id,
            lost.cause,
        )

    def covers(self, topic: str, partition: int, offset: int) -> bool:
        return (
            self.topic == topic
            and self.partition == partition
            and self.first_offset <= offset <= self.last_offset
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """A rule of the high watermark seen broken: when (cluster clock), where and what."""

    at_ms: int
    topic: str
    partition: int
    what: str


@dataclass(frozen=True, slots=True)
class Violation:
    """A rule broken: the check's name and what it saw."""

    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


@dataclass
class RunRecord:
    """Everything a run records for the checks (see the module docstring)."""

    #: ``kafka`` or ``fluvio``.
    policy: str
    acknowledged: list[Acknowledged] = field(default_factory=list)
    #: Writes whose answer never came, and writes whose offset their producer never learns or counts (the
    #: records of a transaction not committed, its markers): each may explain one reported loss.
    unanswered: list[Unanswered] = field(default_factory=list)
    read: list[ReadRecord] = field(default_factory=list)
    #: Partitions that could not be read back (no leader once every broker was back): what they hold is
    #: unknown, so each is a failure of the run (:func:`check_run`).
    unreadable: list[tuple[str, int]] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)
    high_watermark: list[Observation] = field(default_factory=list)
    #: What later checks read (transactions, share groups), by name.
    extras: dict[str, Any] = field(default_factory=dict)

    def read_values(self) -> dict[tuple[str, int], set[bytes]]:
        values: dict[tuple[str, int], set[bytes]] = defaultdict(set)
        for r in self.read:
            if r.value is not None:
                values[(r.topic, r.partition)].add(r.value)
        return values

    def missing(self) -> list[Acknowledged]:
        """The acknowledged records not read back, in the order they were acknowledged."""
        values = self.read_values()
        return [a for a in self.acknowledged if a.value not in values[(a.topic, a.partition)]]


class Check:
    """One rule over a :class:`RunRecord`: ``name``, and :meth:`check` returning what breaks it."""

    name = "check"

    def check(self, run: RunRecord) -> list[Violation]:
        raise NotImplementedError

    def _violation(self, detail: str) -> Violation:
        return Violation(self.name, detail)


class AcksAllNotLostWithoutUncleanLoss(Check):
    name = "acks=all record missing"

    def check(self, run: RunRecord) -> list[Violation]:
        return [
            self._violation(
                f"{a.topic}-{a.partition} offset {a.offset} ({a.value!r}, producer {a.producer_id}) was "
                "acknowledged with acks=all, is not in the log, and no loss by an unclean election covers it"
            )
            for a in run.missing()
            if a.acks == -1
            and not any(
                loss.cause.startswith(UNCLEAN_CAUSE) and loss.covers(a.topic, a.partition, a.offset)
                for loss in run.losses
            )
        ]


class AcksOneNotLostWithoutLoss(Check):
    name = "acks=1 record missing"

    def check(self, run: RunRecord) -> list[Violation]:
        return [
            self._violation(
                f"{a.topic}-{a.partition} offset {a.offset} ({a.value!r}) was acknowledged with acks=1, is "
                "not in the log, and no reported loss covers it"
            )
            for a in run.missing()
            if a.acks == 1 and not any(loss.covers(a.topic, a.partition, a.offset) for loss in run.losses)
        ]


class NoLossThatDidNotHappen(Check):
    """Every offset of a reported loss holds no record of the lost batch's epoch in the final log, and
    is explained by a write there: a record acknowledged at that offset that is missing, or else a write
    of the loss's producer to that partition whose answer never came (the leader may have counted it
    acknowledged, its ``acks=1`` append or its ``acks=all`` commit, while the answer was lost on the way;
    its producer does not know its offset, and may have written it again after the loss). Values are
    unique per write: a producer without idempotence writes a retried record under a new one."""

    name = "loss reported that did not happen"

    def check(self, run: RunRecord) -> list[Violation]:
        found = []
        epochs = {(r.topic, r.partition, r.offset): r.leader_epoch for r in run.read}
        missing: dict[tuple[str, int, int], list[Acknowledged]] = defaultdict(list)
        for a in run.missing():
            missing[(a.topic, a.partition, a.offset)].append(a)
        # Per partition, the producer ids of the unanswered writes: each explains one lost offset at most
        # (one read back elsewhere was written again by a retry of its producer after the loss).
        unexplained: dict[tuple[str, int], list[int]] = defaultdict(list)
        for u in run.unanswered:
            unexplained[(u.topic, u.partition)].append(u.producer_id)
        for loss in run.losses:
            for offset in range(loss.first_offset, loss.last_offset + 1):
                key = (loss.topic, loss.partition, offset)
                if epochs.get(key) == loss.leader_epoch:
                    found.append(
                        self._violation(
                            f"{loss.topic}-{loss.partition} offset {offset} is reported lost ({loss.cause}) "
                            f"but the final log holds a record of its epoch {loss.leader_epoch} there"
                        )
                    )
                    continue
                if any(_same_producer(a.producer_id, loss.producer_id) for a in missing.get(key, ())):
                    continue
                pool = unexplained[(loss.topic, loss.partition)]
                match = next((i for i, pid in enumerate(pool) if _same_producer(pid, loss.producer_id)), None)
                if match is not None:
                    del pool[match]
                    continue
                found.append(
                    self._violation(
                        f"{loss.topic}-{loss.partition} offset {offset} is reported lost ({loss.cause}, "
                        f"producer {loss.producer_id}) but no record written there is missing"
                    )
                )
        return found


def _same_producer(written_by: int, lost_of: int) -> bool:
    """Whether a write's producer may be the lost batch's (-1: not known, e.g. a real client's, or none)."""
    return written_by < 0 or lost_of < 0 or written_by == lost_of


class NoDuplicateSequence(Check):
    name = "duplicate (producer id, epoch, sequence)"

    def check(self, run: RunRecord) -> list[Violation]:
        seen: dict[tuple[str, int, int, int, int], int] = {}
        found = []
        for r in run.read:
            if r.producer_id < 0 or r.sequence < 0:
                continue
            key = (r.topic, r.partition, r.producer_id, r.producer_epoch, r.sequence)
            if key in seen:
                found.append(
                    self._violation(
                        f"{r.topic}-{r.partition}: producer {r.producer_id} epoch {r.producer_epoch} sequence "
                        f"{r.sequence} at offsets {seen[key]} and {r.offset}"
                    )
                )
            else:
                seen[key] = r.offset
        return found


class HighWatermarkRules(Check):
    name = "high watermark"

    def check(self, run: RunRecord) -> list[Violation]:
        return [
            self._violation(f"{o.topic}-{o.partition} at {o.at_ms} ms: {o.what}") for o in run.high_watermark
        ]


@dataclass
class TransactionsRecord:
    """What a transactional run records beside the :class:`RunRecord`: the records of each transaction by
    the outcome its producer was told (a commit answered: ``committed``, also in
    :attr:`RunRecord.acknowledged` with ``acks=all``; an abort answered: ``aborted``; neither, its
    producer fenced or its answer lost: ``uncertain``), what a read_committed consumer read back from each
    partition's beginning, and the partitions where that read stopped below the high watermark."""

    committed: list[Acknowledged] = field(default_factory=list)
    aborted: list[Unanswered] = field(default_factory=list)
    uncertain: list[Unanswered] = field(default_factory=list)
    read_committed: list[ReadRecord] = field(default_factory=list)
    #: (topic, partition, where the read_committed read stopped, the high watermark).
    unstable: list[tuple[str, int, int, int]] = field(default_factory=list)
    #: The coordinator's records a move of ``__transaction_state``'s leader took away (the server's
    #: :meth:`~controller.transactions.service.TransactionService.lost_records`).
    state_lost: list[Any] = field(default_factory=list)

    def committed_values(self) -> dict[tuple[str, int], set[bytes]]:
        values: dict[tuple[str, int], set[bytes]] = defaultdict(set)
        for r in self.read_committed:
            if r.value is not None:
                values[(r.topic, r.partition)].add(r.value)
        return values


def _transactions(run: RunRecord) -> TransactionsRecord | None:
    record = run.extras.get("transactions")
    return record if isinstance(record, TransactionsRecord) else None


def _marker_lost(run: RunRecord, topic: str, partition: int, producer_id: int, offset: int) -> bool:
    """Whether an unclean election took a write of ``producer_id`` on the partition after ``offset`` (its
    transaction's marker there): the records before it then belong to no ended transaction on the new
    leader, and take the fate of the producer's next marker there, or hang open without one (as on
    Kafka: a hanging transaction, KIP-664). The reported loss is their cause."""
    return any(
        loss.cause.startswith(UNCLEAN_CAUSE)
        and loss.topic == topic
        and loss.partition == partition
        and loss.producer_id == producer_id
        and loss.last_offset > offset
        for loss in run.losses
    )


def _state_lost(run: RunRecord, topic: str, partition: int, producer_id: int) -> bool:
    """Whether the coordinator lost a record of ``producer_id``'s transaction that held the partition
    (a reported :class:`~controller.transactions.state_log.LostTxnRecord`): the coordinator no longer
    knows the partition is in the transaction, writes no marker there, and the records hang open (a
    hanging transaction, KIP-664). The reported loss is their cause."""
    record = _transactions(run)
    return record is not None and any(
        lost.producer_id == producer_id and (topic, partition) in lost.partitions
        for lost in record.state_lost
    )


def _hung(run: RunRecord, topic: str, partition: int, offset: int) -> bool:
    """Whether ``offset`` is at or past where a read_committed read stopped on the partition because of a
    transaction left open by a reported loss (its marker's, or its coordinator's record's)."""
    record = _transactions(run)
    if record is None:
        return False
    at = {(r.topic, r.partition, r.offset): r.producer_id for r in run.read}
    return any(
        (t, p) == (topic, partition) and offset >= stopped and _explained_hang(run, t, p, stopped, at)
        for t, p, stopped, _ in record.unstable
    )


def _explained_hang(run: RunRecord, topic: str, partition: int, stopped: int, at: dict[Any, int]) -> bool:
    producer_id = at.get((topic, partition, stopped), -2)
    return _marker_lost(run, topic, partition, producer_id, stopped) or _state_lost(
        run, topic, partition, producer_id
    )


class CommittedReadOrLost(Check):
    name = "committed transaction's record missing"

    def check(self, run: RunRecord) -> list[Violation]:
        record = _transactions(run)
        if record is None:
            return []
        read = record.committed_values()
        return [
            self._violation(
                f"{a.topic}-{a.partition} offset {a.offset} ({a.value!r}, producer {a.producer_id}) is a "
                "record of a committed transaction that a read_committed consumer did not get, and no loss by "
                "an unclean election covers it"
            )
            for a in record.committed
            if a.value not in read[(a.topic, a.partition)]
            and not any(
                loss.cause.startswith(UNCLEAN_CAUSE) and loss.covers(a.topic, a.partition, a.offset)
                for loss in run.losses
            )
            and not _marker_lost(run, a.topic, a.partition, a.producer_id, a.offset)
            and not _hung(run, a.topic, a.partition, a.offset)
        ]


class AbortedNeverRead(Check):
    name = "aborted transaction's record read"

    def check(self, run: RunRecord) -> list[Violation]:
        record = _transactions(run)
        if record is None:
            return []
        aborted = {(u.topic, u.partition, u.value): u for u in record.aborted}
        return [
            self._violation(
                f"{r.topic}-{r.partition} offset {r.offset} ({r.value!r}, producer {r.producer_id}) was "
                "returned to a read_committed consumer, but its transaction's abort was answered"
            )
            for r in record.read_committed
            if (r.topic, r.partition, r.value) in aborted
            and not _marker_lost(run, r.topic, r.partition, r.producer_id, r.offset)
        ]


class NoTransactionLeftOpen(Check):
    name = "last stable offset held"

    def check(self, run: RunRecord) -> list[Violation]:
        record = _transactions(run)
        if record is None:
            return []
        at = {(r.topic, r.partition, r.offset): r.producer_id for r in run.read}
        return [
            self._violation(
                f"{topic}-{partition}: a read_committed consumer stopped at offset {stopped} after the "
                f"recovery, below the high watermark {hw} (a transaction left open)"
            )
            for topic, partition, stopped, hw in record.unstable
            if not _explained_hang(run, topic, partition, stopped, at)
        ]


#: The rules of a transactional run (see the module docstring), checked beside :data:`DEFAULT_CHECKS`.
TRANSACTION_CHECKS: tuple[Check, ...] = (CommittedReadOrLost(), AbortedNeverRead(), NoTransactionLeftOpen())

#: The promise, one check per rule (see the module docstring).
DEFAULT_CHECKS: tuple[Check, ...] = (
    AcksAllNotLostWithoutUncleanLoss(),
    AcksOneNotLostWithoutLoss(),
    NoLossThatDidNotHappen(),
    NoDuplicateSequence(),
    HighWatermarkRules(),
)


def check_run(run: RunRecord, checks: Iterable[Check] = DEFAULT_CHECKS) -> list[Violation]:
    """Every rule ``run`` breaks, check by check (first, any partition it could not read back)."""
    found = [
        Violation("unreadable", f"{topic}-{partition} could not be read back after the recovery")
        for topic, partition in run.unreadable
    ]
    for check in checks:
        found += check.check(run)
    return found


def summarize(violations: Sequence[Violation], limit: int = 10) -> str:
    """A few lines naming the first ``limit`` violations (and how many more)."""
    lines = [str(v) for v in violations[:limit]]
    if len(violations) > limit:
        lines.append(f"... and {len(violations) - limit} more")
    return "\n".join(lines)
