"""AddPartitionsToTxn (24) v0-5: partitions join a transaction (v0-v3, from producers), or a partition
leader asks whether they are in it (v4+, VerifyOnly, KIP-890 part 1).

As Kafka's ``KafkaApis.handleAddPartitionsToTxnRequest``: a partition of an unknown topic fails the whole
transaction's request: UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED for the others; else
the coordinator's answer (:meth:`TransactionCoordinator.add_partitions`,
:meth:`TransactionCoordinator.verify`) for every partition, PRODUCER_FENCED answered as
INVALID_PRODUCER_EPOCH before v2. The answer waits until the transaction's new state is replicated.

With an authorizer: v4+ (brokers') needs CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED);
before v4 a transactional id the client may not WRITE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
partition, and a topic it may not WRITE TOPIC_AUTHORIZATION_FAILED for its partitions with the others
OPERATION_NOT_ATTEMPTED.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.handlers import RequestContext
from controller.transactions.handlers._respond import Answer
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
VERSIONS = (0, 5)

_BATCHED = 4
_PRODUCER_FENCED = 2


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    if version >= _BATCHED and not ctx.allowed(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return error_response(request, version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "")
    if version < _BATCHED:
        transactions = [
            {
                "TransactionalId": request["V3AndBelowTransactionalId"],
                "ProducerId": request["V3AndBelowProducerId"],
                "ProducerEpoch": request["V3AndBelowProducerEpoch"],
                "VerifyOnly": False,
                "Topics": request["V3AndBelowTopics"],
            }
        ]
    else:
        transactions = request["Transactions"]
    answers = [_transaction(ctx, t, version) for t in transactions]
    if all(not isinstance(a, asyncio.Future) for a in answers):
        return _response(answers, version)
    return _gather(answers, version)


async def _gather(answers: list[Any], version: int) -> dict[str, Any]:
    done = [await a if isinstance(a, asyncio.Future) else a for a in answers]
    return _response(done, version)


def _response(results: list[dict[str, Any]], version: int) -> dict[str, Any]:
    if version < _BATCHED:
        return {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": results[0]["TopicResults"]}
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ResultsByTransaction": results}


def _result(
    transactional_id: str,
    errors: dict[tuple[str, int], ErrorCode] | list[tuple[tuple[str, int], ErrorCode]],
) -> dict[str, Any]:
    """One transaction's results by topic: from a map (a partition once), or from a list (a partition
    the request named twice answered twice)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items() if isinstance(errors, dict) else errors:
        by_topic.setdefault(topic, []).append({"PartitionIndex": partition, "PartitionErrorCode": error})
    return {
        "TransactionalId": transactional_id,
        "TopicResults": [{"Name": name, "ResultsByPartition": parts} for name, parts in by_topic.items()],
    }


def _transaction(ctx: RequestContext, transaction: dict[str, Any], version: int) -> Any:
    transactional_id = transaction["TransactionalId"]
    partitions = [(t["Name"], p) for t in transaction["Topics"] for p in t["Partitions"]]
    if ctx.authorizer is not None and version < _BATCHED:
        if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return _result(
                transactional_id, dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            )
        allowed = ctx.allowed_names(Operation.WRITE, ResourceType.TOPIC, (name for name, _ in partitions))
        if any(name not in allowed for name, _ in partitions):
            return _result(
                transactional_id,
                {
                    tp: ErrorCode.OPERATION_NOT_ATTEMPTED
                    if tp[0] in allowed
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    for tp in partitions
                },
            )
    cluster = ctx.controller.cluster
    unknown = {
        (name, p)
        for name, p in partitions
        if name not in cluster.topics or not 0 <= p < len(cluster.topics[name].partitions)
    }
    if unknown:
        return _result(
            transactional_id,
            {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            },
        )
    coordinator = ctx.controller.transactions.coordinator
    if transaction["VerifyOnly"]:
        errors = coordinator.verify(
            transactional_id, transaction["ProducerId"], transaction["ProducerEpoch"], partitions
        )
        return _result(transactional_id, errors)

    def build(error: ErrorCode) -> dict[str, Any]:
        if error is ErrorCode.PRODUCER_FENCED and version < _PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        if version < _BATCHED:  # Kafka answers each partition the request named, twice if named twice
            return _result(transactional_id, [(tp, error) for tp in partitions])
        return _result(transactional_id, {tp: error for tp in partitions})

    answer: Answer[ErrorCode] = Answer(build)
    coordinator.add_partitions(
        transactional_id,
        transaction["ProducerId"],
        transaction["ProducerEpoch"],
        partitions,
        ctx.listener_broker,
        answer.respond,
        transaction_version=2 if version >= _BATCHED else 0,
    )
    return answer.result()


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    code = ErrorCode(error_code)
    if version < _BATCHED:
        topics = request.get("V3AndBelowTopics") or []
        results = [_result("", {(t["Name"], p): code for t in topics for p in t["Partitions"]})]
        return _response(results, version)
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ResultsByTransaction": []}
