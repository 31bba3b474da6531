"""DescribeProducers (61) v0: the idempotent producers a partition replica keeps state for (KIP-664).

As Kafka's ``KafkaApis.handleDescribeProducersRequest`` and ``Partition.activeProducerState``: per
partition, an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a broker without a replica of it
NOT_LEADER_OR_FOLLOWER; any replica answers, leader or follower, with what its own log gives
(:meth:`controller.data_path.DataPath.producer_states`): each producer's id, epoch, last sequence and the
timestamp of its last batch, the epoch of the coordinator that wrote its last transaction marker there
(CoordinatorEpoch, -1 for none) and the first offset of its transaction open there
(CurrentTxnStartOffset, -1 for none). The bootstrap listener answers as the partition's leader.

With an authorizer, a topic the client may not READ is TOPIC_AUTHORIZATION_FAILED, as Kafka answers.

A partition named many times is answered each time (as Kafka does), from one read of its producers; an
error message repeated in the answer is given with its first partition only (``SaidOnce``: a topic name
of 32,700 characters named with 20,000 partitions made an answer of 650 MB, encoded on the event loop
for 3.6 s in the million-frame fuzz run); a big answer is encoded off the event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Sized
from controller.handlers import RequestContext, SaidOnce
from controller.handlers._partitions import find_topic, leads, partition_of
from controller.offload import BIG
from controller.topic_names import topic_name_problem
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.cluster import PartitionState
    from controller.data_path import DataPath

API_KEY = ApiKey.DESCRIBE_PRODUCERS
VERSIONS = (0, 0)

#: No open transaction.
_NO_TRANSACTION = -1


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Sized:
    data_path = ctx.controller.data_path
    topics = []
    allowed = None
    if ctx.authorizer is not None:
        allowed = ctx.allowed_names(
            Operation.READ, ResourceType.TOPIC, (t["Name"] for t in request["Topics"])
        )
    once = SaidOnce()
    # A partition named many times is answered each time, as Kafka does, from one read of its producers.
    read: dict[tuple[int, int], list[dict[str, Any]]] = {}
    size = 0
    for wanted in request["Topics"]:
        name = wanted["Name"]
        topic = find_topic(ctx, name, None, False)
        # As Kafka: a name no topic may have, an unknown topic (the error's message), an unknown partition
        # of a known topic (no message).
        problem = topic_name_problem(name) if topic is None else None
        partitions = []
        for index in wanted["PartitionIndexes"]:
            entry: dict[str, Any] = {"PartitionIndex": index, "ErrorMessage": None, "ActiveProducers": []}
            partitions.append(entry)
            if allowed is not None and name not in allowed:
                entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = partition_of(topic, index) if topic is not None else None
            if p is None:
                if problem is not None:
                    entry["ErrorCode"] = ErrorCode.INVALID_TOPIC_EXCEPTION
                    entry["ErrorMessage"] = once(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
                else:
                    entry["ErrorCode"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if topic is None:
                        entry["ErrorMessage"] = once(
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
                        )
                continue
            broker = ctx.listener_broker
            if broker is None:
                broker = p.leader if leads(ctx, p) else None
            if broker is None or broker not in p.replicas:
                entry["ErrorCode"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            entry["ErrorCode"] = ErrorCode.NONE
            key = (id(p), broker)
            if key not in read:
                read[key] = _producers(data_path, p, broker)
            entry["ActiveProducers"] = read[key]
            size += len(read[key])
        topics.append({"Name": name, "Partitions": partitions})
        size += len(partitions)
    answer = {"ThrottleTimeMs": 0, "Topics": topics}
    return Sized(answer, size) if size > BIG else answer


def _producers(data_path: DataPath, p: PartitionState, broker: int) -> list[dict[str, Any]]:
    """What ``broker``'s replica of ``p`` keeps of each producer (shared by every entry naming ``p``)."""
    return [
        {
            "ProducerId": producer.producer_id,
            "ProducerEpoch": producer.epoch,
            "LastSequence": producer.last_seq,
            "LastTimestamp": producer.last_timestamp,
            "CoordinatorEpoch": producer.coordinator_epoch,
            "CurrentTxnStartOffset": (
                producer.current_txn_first_offset
                if producer.current_txn_first_offset is not None
                else _NO_TRANSACTION
            ),
        }
        for producer in data_path.producer_states(p, broker).entries()
    ]


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    once = SaidOnce()
    return {
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {
                        "PartitionIndex": index,
                        "ErrorCode": error_code,
                        "ErrorMessage": once(error_code, message),
                        "ActiveProducers": [],
                    }
                    for index in t["PartitionIndexes"]
                ],
            }
            for t in request.get("Topics") or []
        ],
    }
