"""EndTxn (26) v0-5: commit or abort a transaction, as Kafka's ``handleEndTxnRequest``
(:meth:`TransactionCoordinator.end_txn`). Answered once PrepareCommit / PrepareAbort is replicated; the
markers are written after. v5 is KIP-890 part 2: the epoch is bumped at every end and the answer carries
the producer id and epoch to go on with. PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH before v2.
With an authorizer, a transactional id the client may not WRITE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.transactions.coordinator import EndTxnResult
from controller.transactions.handlers._respond import Answer
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.END_TXN
VERSIONS = (0, 5)

_PRODUCER_FENCED = 2
#: EndTxn v5: the client's transactions are KIP-890 part 2's (an epoch bump at every end).
_EPOCH_BUMP = 5


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request["TransactionalId"]):
        return error_response(request, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "")

    def build(result: EndTxnResult) -> dict[str, Any]:
        error, producer_id, epoch = result
        if error is ErrorCode.PRODUCER_FENCED and version < _PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": producer_id, "ProducerEpoch": epoch}

    answer: Answer[EndTxnResult] = Answer(build)
    ctx.controller.transactions.coordinator.end_txn(
        request["TransactionalId"],
        request["ProducerId"],
        request["ProducerEpoch"],
        request["Committed"],
        2 if version >= _EPOCH_BUMP else 0,
        ctx.listener_broker,
        answer.respond,
    )
    return answer.result()


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code, "ProducerId": -1, "ProducerEpoch": -1}
