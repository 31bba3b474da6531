"""The share coordinator: share-partition state on ``__share_group_state``, as Kafka's ``ShareCoordinator``
keeps it (KIP-932).

A share-partition's key is ``groupId:topicId:partition`` (Kafka's ``SharePartitionKey.asCoordinatorKey``);
its state (:class:`~controller.share.partition.ShareState`: start offset, state epoch, the in-flight records
that are not plain AVAILABLE) lives on partition ``Utils.abs(key.hashCode()) %
share.coordinator.state.topic.num.partitions`` of ``__share_group_state``, whose leader is the key's
share coordinator. The topic, its placement, the appends, the wait for the high watermark and the moves are
:mod:`controller.coordinator_log`'s, shared with the group coordinator: every write is one record (a whole
snapshot, as Kafka's ``ShareSnapshot``), answered once the high watermark covers it, and a coordinator
that takes over loads what its log holds.

A write the new leader's log does not hold (an unclean election, or one not yet copied) is lost from the
coordinator. The share-partition's leader still holds that state in memory and writes it again with its
next change, as Kafka's does; only when the share-partition is loaded from the coordinator before that
(its own leader moved too) are accepted records lost: each is then reported
(:class:`LostAcknowledgement`), with the records it makes deliverable again.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from controller.clock import Clock
from controller.cluster import Cluster
from controller.coordinator_log import CoordinatorLog, LogRecord
from controller.dynamics.replication import Replication
from controller.share.partition import ShareState
from controller.topic_admin import TopicAdmin
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["SHARE_STATE_TOPIC", "LostAcknowledgement", "ShareCoordinator", "share_key"]

SHARE_STATE_TOPIC = "__share_group_state"


def share_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``groupId:topicId:partition`` (the topic id in
    Kafka's base64 form)."""
    return f"{group}:{kafka_uuid(topic_id)}:{partition}"


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka's ``Uuid.toString`` writes it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class LostAcknowledgement:
    """Records a share group accepted whose acceptance a move of the share coordinator lost before the
    share-partition's leader wrote it again: they are deliverable again."""

    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    #: Where the lost write was in ``__share_group_state``.
    log_partition: int
    log_offset: int
    at: int


class ShareCoordinator(CoordinatorLog):
    """Share-partition state on ``__share_group_state`` (see the module docstring)."""

    event_kind = "share"

    def __init__(
        self,
        partitions: int,
        replication_factor: int,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
        tick_ms: int,
        write_timeout_ms: int = 5000,
    ) -> None:
        super().__init__(
            SHARE_STATE_TOPIC,
            partitions,
            replication_factor,
            cluster,
            clock,
            replication,
            topic_admin,
            tick_ms,
        )
        self.write_timeout_ms = write_timeout_ms
        #: key -> the state the coordinator holds (what its leader loaded and wrote since).
        self.states: dict[str, ShareState] = {}
        #: key -> (the state a move lost, where its record was): until the share-partition writes again.
        self.lost: dict[str, tuple[ShareState, int, int]] = {}

    # ------------------------------------------------------------------------------------- reading

    def read(self, key: str, broker: int | None = None) -> tuple[ErrorCode, ShareState | None]:
        """ReadShareGroupState: the state kept for ``key`` (None: none yet), or the coordinator's error."""
        error = self.check_partition(self.partition_of(key), broker)
        if error:
            return error, None
        return ErrorCode.NONE, self.states.get(key)

    def keys_of(self, group: str) -> list[str]:
        """Every key with state of ``group``."""
        self.follow_all()
        prefix = group + ":"
        return sorted(k for k in self.states if k.startswith(prefix) and k.count(":") >= 2)

    # ------------------------------------------------------------------------------------- writing

    def write(self, key: str, state: ShareState | None, respond: Callable[[ErrorCode], None]) -> None:
        """WriteShareGroupState (None: DeleteShareGroupState): appended at the key's coordinator and
        answered NONE once durable. While the coordinator loads, or has no leader, the write is tried again
        on the replication tick, as Kafka's persister retries, until ``write_timeout_ms`` pass: then it is
        answered with the coordinator's error."""
        give_up = self.clock.now() + self.write_timeout_ms

        def attempt() -> None:
            index = self.partition_of(key)
            error = self.check_partition(index, None)
            if error:
                if self.clock.now() >= give_up:
                    respond(error)
                else:
                    self.clock.call_later(self.tick_ms, attempt, "share state write retries")
                return
            last = self.append(key, "share", [state])
            if last is None:
                respond(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                return
            if state is None:
                self.states.pop(key, None)
            else:
                self.states[key] = state
            self.lost.pop(key, None)
            self.when_durable(key, last, lambda: respond(ErrorCode.NONE))

        attempt()

    # ------------------------------------------------------------------------------------- moves

    def moved(self, index: int, kept: list[LogRecord], lost: list[LogRecord], now: int) -> str:
        keys = {k for k in self.states if self.partition_of(k) == index}
        for key in keys:
            self.states.pop(key, None)
        for record in kept:
            if record.value is None:
                self.states.pop(record.key, None)
            else:
                self.states[record.key] = record.value
        for record in lost:
            if record.value is not None:
                self.lost[record.key] = (record.value, index, record.offset)
        return f"{sum(1 for k in self.states if self.partition_of(k) == index)} share-partition state(s)"

    def compaction_key(self, record: LogRecord) -> Hashable:
        return record.key
