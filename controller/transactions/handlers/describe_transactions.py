"""DescribeTransactions (65) v0: the state of transactional ids at their coordinator (KIP-664), as Kafka's
``handleDescribeTransactions``: NOT_COORDINATOR from a broker that does not coordinate one,
TRANSACTIONAL_ID_NOT_FOUND for an id it does not know, else its state, timeout, start time, producer id
and epoch, and its partitions (while it prepares to end: those still without a marker). With an
authorizer, an id the client may not DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and only the
partitions of topics it may DESCRIBE are shown."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
VERSIONS = (0, 0)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    coordinator = ctx.controller.transactions.coordinator
    if ctx.authorizer is None:
        states = [coordinator.describe(tid, ctx.listener_broker) for tid in request["TransactionalIds"]]
        return {"ThrottleTimeMs": 0, "TransactionStates": states}
    states = []
    for tid in request["TransactionalIds"]:
        if not ctx.allowed(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            states.append(
                error_response({"TransactionalIds": [tid]}, version, _REFUSED, "")["TransactionStates"][0]
            )
            continue
        state = coordinator.describe(tid, ctx.listener_broker)
        allowed = ctx.allowed_names(
            Operation.DESCRIBE, ResourceType.TOPIC, (t["Topic"] for t in state["Topics"])
        )
        state["Topics"] = [t for t in state["Topics"] if t["Topic"] in allowed]
        states.append(state)
    return {"ThrottleTimeMs": 0, "TransactionStates": states}


_REFUSED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "TransactionStates": [
            {
                "ErrorCode": error_code,
                "TransactionalId": tid,
                "TransactionState": "",
                "TransactionTimeoutMs": 0,
                "TransactionStartTimeMs": 0,  # Kafka leaves an error's entry at its defaults
                "ProducerId": 0,
                "ProducerEpoch": 0,
                "Topics": [],
            }
            for tid in request.get("TransactionalIds") or []
        ],
    }
