"""AddOffsetsToTxn (25) v0-4: a consumer group's offsets join a transaction, as Kafka's
``handleAddOffsetsToTxnRequest``: the group's ``__consumer_offsets`` partition is added to the transaction
(:meth:`TransactionCoordinator.add_partitions`), so that the transaction's markers reach it; answered once
that is replicated. PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH before v2. With an authorizer, a
transactional id the client may not WRITE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, then a group it may not
READ GROUP_AUTHORIZATION_FAILED."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.transactions.handlers._respond import Answer
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
VERSIONS = (0, 4)

_PRODUCER_FENCED = 2


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request["TransactionalId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    coordinator = ctx.controller.transactions.coordinator

    def build(error: ErrorCode) -> dict[str, Any]:
        if error is ErrorCode.PRODUCER_FENCED and version < _PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"ThrottleTimeMs": 0, "ErrorCode": error}

    answer: Answer[ErrorCode] = Answer(build)
    coordinator.add_partitions(
        request["TransactionalId"],
        request["ProducerId"],
        request["ProducerEpoch"],
        [coordinator.offsets_partition(request["GroupId"])],
        ctx.listener_broker,
        answer.respond,
    )
    return answer.result()


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code}
