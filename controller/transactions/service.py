"""The transactions subsystem as the Controller builds it on first use (``controller.app.SUBSYSTEMS``):
the state log on ``__transaction_state`` (:mod:`.state_log`), the marker channel (:mod:`.markers`) and
the coordinator (:mod:`.coordinator`), joined to the cluster's dynamics (the coordinator follows the
leaders of ``__transaction_state``), and what partition leaders ask of it when a transactional batch
arrives (KIP-890: :meth:`TransactionService.verify_produce`, :meth:`TransactionService.add_from_produce`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.clock import Clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.topic_admin import TopicAdmin
from controller.transactions.coordinator import TransactionCoordinator
from controller.transactions.markers import MarkerChannel
from controller.transactions.metadata import TopicPartition
from controller.transactions.state_log import TRANSACTION_STATE_TOPIC, LostTxnRecord, StateLog
from protocol.codes import ErrorCode
from protocol.errors import Refusal

if TYPE_CHECKING:
    from controller.data_path import DataPath
    from controller.dynamics import Dynamics
    from controller.groups.durable import GroupService

log = logging.getLogger(__name__)

__all__ = ["TRANSACTION_STATE_TOPIC", "TransactionService"]

#: Produce v11 may answer TRANSACTION_ABORTABLE (KIP-890); older versions get INVALID_TXN_STATE.
_ABORTABLE_PRODUCE = 11
#: Produce v12+ in a transaction of KIP-890 part 2 adds its partitions itself.
_ADDING_PRODUCE = 12
#: What the coordinator's own errors are answered as to a producer (``ReplicaManager``'s translation).
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class TransactionService:
    """Transactions on the simulated brokers (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        dynamics: Dynamics,
        topic_admin: TopicAdmin,
        data_path: Callable[[], DataPath],
        groups: Callable[[], GroupService],
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.state_log = StateLog(config, cluster, clock, dynamics.replication, topic_admin)
        self.markers = MarkerChannel(cluster, clock, config.replication_tick_ms, data_path, groups)
        self.coordinator = TransactionCoordinator(
            config,
            clock,
            self.state_log,
            self.markers,
            lambda: data_path().producer_ids,
            lambda: data_path().now_ms(),
        )
        dynamics.partition_watchers.append(self.state_log.partitions_changed)

    def close(self) -> None:
        self.coordinator.close()

    # ------------------------------------------------------------------------------------- the produce path

    def verify_produce(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition, version: int
    ) -> Refusal | None:
        """A partition leader's verification before a producer's first transactional batch there (KIP-890
        part 1, ``ReplicaManager.handleProduceAppend``): None when the partition is in the transaction,
        else the producer's answer, translated as Kafka translates the coordinator's."""
        if not self.config.txn_verification:
            return None
        error = self.coordinator.verify(transactional_id, producer_id, producer_epoch, [tp])[tp]
        return _produce_refusal(error, version)

    def add_from_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        tps: list[TopicPartition],
        version: int,
    ) -> asyncio.Future[dict[TopicPartition, Refusal | None]]:
        """Produce v12+ of a KIP-890 part 2 transaction: the leader adds the partitions to the transaction
        itself (AddPartitionsToTxn from the broker); per partition None, or the producer's answer."""
        future: asyncio.Future[dict[TopicPartition, Refusal | None]] = (
            asyncio.get_running_loop().create_future()
        )

        def respond(error: ErrorCode) -> None:
            if not future.done():
                refusal = _produce_refusal(error, version)
                future.set_result({tp: refusal for tp in tps})

        self.coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, tps, None, respond, transaction_version=2
        )
        return future

    # ------------------------------------------------------------------------------------- the oracle

    def transactions(self) -> dict[str, dict[str, Any]]:
        """Every transactional id the coordinators hold now, by id: ``state``, ``producer_id``,
        ``producer_epoch``, ``partitions`` (sorted (topic, partition) pairs), ``pending_markers`` (the
        partitions whose marker is still being written), ``timeout_ms``, ``start_ms`` (wall-clock ms, as
        record timestamps are; -1: no transaction), ``coordinator`` (the broker) and ``coordinator_partition``."""
        self.state_log.follow_all()
        out: dict[str, dict[str, Any]] = {}
        for metadata in self.state_log.all_metadata():
            _, broker = self.state_log.coordinator_of(metadata.transactional_id)
            pending = self.markers.pending(metadata.transactional_id)
            out[metadata.transactional_id] = {
                "state": metadata.state.value,
                "producer_id": metadata.producer_id,
                "producer_epoch": metadata.producer_epoch,
                "partitions": sorted(metadata.partitions | pending),
                "pending_markers": sorted(pending),
                "timeout_ms": metadata.timeout_ms,
                "start_ms": metadata.start_ms,
                "coordinator": broker,
                "coordinator_partition": self.state_log.partition_of(metadata.transactional_id),
            }
        return out

    def lost_records(self) -> list[LostTxnRecord]:
        """Records of ``__transaction_state`` a move of its leader took away after they were replicated or
        loaded as a coordinator's state (:class:`~controller.transactions.state_log.LostTxnRecord`)."""
        self.state_log.follow_all()
        return list(self.state_log.lost_records)


def _produce_refusal(error: ErrorCode, version: int) -> Refusal | None:
    if error is ErrorCode.NONE:
        return None
    if error is ErrorCode.PRODUCER_FENCED:
        return Refusal(ErrorCode.INVALID_PRODUCER_EPOCH, None)
    if error is ErrorCode.TRANSACTION_ABORTABLE and version < _ABORTABLE_PRODUCE:
        error = ErrorCode.INVALID_TXN_STATE
    if error is ErrorCode.INVALID_TXN_STATE:
        return Refusal(error, "Partition was not added to the transaction")
    if error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return Refusal(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"Unable to verify the partition has been added to the transaction. Underlying error: {error.name}",
        )
    return Refusal(error, None)
