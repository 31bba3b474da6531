"""The transaction markers: a commit or abort marker written to every partition of a transaction that is
ending, through the replication model, as Kafka's ``TransactionMarkerChannelManager`` has them written.

For each partition of the transaction the coordinator has the partition's leader append a control batch
(:meth:`controller.data_path.DataPath.append_marker`, what a leader does with a WriteTxnMarkers request)
and waits until the partition's high watermark covers it (the request's acks=all). A partition without a
serving leader, a leader that changes before the marker is replicated, is tried again on the replication
tick (Kafka's channel retries on NOT_LEADER_OR_FOLLOWER); a partition whose topic is gone is skipped.
A marker for a partition of ``__consumer_offsets`` is written by the group coordinator
(:meth:`controller.groups.durable.GroupService.complete_transaction`): it makes the group's transactional
offsets its offsets, or drops them. A marker the partition refuses as stale (an older producer or
coordinator epoch: INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED) stops the job, as Kafka's
coordinator stops when it learns it is a zombie.

Once every partition has its marker, :class:`MarkerJob`'s ``done`` is called: the coordinator writes
CompleteCommit or CompleteAbort. A job is dropped (:meth:`MarkerChannel.cancel_partition`) when the
coordinator's ``__transaction_state`` partition moves: the new coordinator writes the markers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from controller.transactions.metadata import TopicPartition, TransactionMetadata
from protocol.codes import ErrorCode
from protocol.errors import Refusal

if TYPE_CHECKING:
    from controller.data_path import DataPath
    from controller.groups.durable import GroupService

log = logging.getLogger(__name__)

__all__ = ["MarkerChannel", "MarkerJob"]


@dataclass(eq=False)
class MarkerJob:
    """The markers of one transaction end."""

    transactional_id: str
    #: The ``__transaction_state`` partition of the transactional id.
    state_partition: int
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    commit: bool
    metadata: TransactionMetadata
    done: Callable[[], None]
    remaining: set[TopicPartition] = field(default_factory=set)
    cancelled: bool = False


class MarkerChannel:
    """Writes the markers of ending transactions (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        retry_ms: int,
        data_path: Callable[[], DataPath],
        groups: Callable[[], GroupService],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.retry_ms = retry_ms
        self._data_path = data_path
        self._groups = groups
        self.jobs: list[MarkerJob] = []

    def send(self, job: MarkerJob, partitions: set[TopicPartition]) -> None:
        """Writes the job's markers to ``partitions`` (at once where a leader serves), then ``job.done``."""
        job.remaining = set(partitions)
        self.jobs.append(job)
        if not partitions:
            self._finish(job)
            return
        for tp in sorted(partitions):
            self._write(job, tp)

    def cancel_partition(self, state_partition: int) -> None:
        """The coordinator of ``__transaction_state`` partition ``state_partition`` moved: its jobs stop."""
        for job in [j for j in self.jobs if j.state_partition == state_partition]:
            job.cancelled = True
            self.jobs.remove(job)

    def close(self) -> None:
        for job in self.jobs:
            job.cancelled = True
        self.jobs.clear()

    def pending(self, transactional_id: str) -> set[TopicPartition]:
        """The partitions still without their marker, for a transactional id whose markers are being written."""
        return {tp for job in self.jobs if job.transactional_id == transactional_id for tp in job.remaining}

    # ------------------------------------------------------------------------------------- writing

    def _retry(self, job: MarkerJob, tp: TopicPartition) -> None:
        if not job.cancelled:
            self.clock.call_later(self.retry_ms, lambda: self._write(job, tp), "transaction marker retry")

    def _write(self, job: MarkerJob, tp: TopicPartition) -> None:
        if job.cancelled or tp not in job.remaining:
            return
        topic, index = tp
        t = self.cluster.topics.get(topic)
        if t is None or index >= len(t.partitions):
            log.info(
                "%s: no partition %s-%d any more; no marker written there", job.transactional_id, topic, index
            )
            self._written(job, tp)
            return
        p = t.partitions[index]
        if p.leader == NO_LEADER or p.leader not in self.cluster.serving_ids():
            self._retry(job, tp)
            return
        if topic == GROUP_METADATA_TOPIC_NAME:
            self._groups().complete_transaction(
                index, job.producer_id, job.commit, lambda error: self._acked(job, tp, error)
            )
            return
        data_path = self._data_path()
        appended = data_path.append_marker(
            p, job.producer_id, job.producer_epoch, job.commit, job.coordinator_epoch
        )
        if isinstance(appended, Refusal):
            log.warning(
                "%s: the marker for %s-%d was refused (%s: %s); the coordinator stops writing this transaction's "
                "markers",
                job.transactional_id,
                topic,
                index,
                appended.code.name,
                appended.message,
            )
            job.cancelled = True
            if job in self.jobs:
                self.jobs.remove(job)
            return
        future = appended.replicated  # registered by the append: no leader change can come between
        assert future is not None
        if future.done():
            self._acked(job, tp, future.result())
        else:
            future.add_done_callback(lambda f: self._acked(job, tp, _result(f)))

    def _acked(self, job: MarkerJob, tp: TopicPartition, error: ErrorCode) -> None:
        if job.cancelled:
            return
        if error is ErrorCode.NONE:
            self._written(job, tp)
        else:
            self._retry(job, tp)

    def _written(self, job: MarkerJob, tp: TopicPartition) -> None:
        job.remaining.discard(tp)
        job.metadata.partitions.discard(tp)
        if not job.remaining:
            self._finish(job)

    def _finish(self, job: MarkerJob) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
        if not job.cancelled:
            job.done()


def _result(future: asyncio.Future[ErrorCode]) -> ErrorCode:
    if future.cancelled():
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return future.result()
