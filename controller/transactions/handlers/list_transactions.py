"""ListTransactions (66) v0-1: the transactional ids a broker coordinates (KIP-664), as Kafka's
``handleListTransactions``: filtered by state (names no state knows come back in UnknownStateFilters),
producer id and, from v1, how long the transaction has run (KIP-994); COORDINATOR_LOAD_IN_PROGRESS while a
partition loads. The bootstrap listener answers for every broker. With an authorizer, only the ids the
client may DESCRIBE are listed."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey

API_KEY = ApiKey.LIST_TRANSACTIONS
VERSIONS = (0, 1)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    listed = ctx.controller.transactions.coordinator.list_transactions(
        request["StateFilters"],
        request["ProducerIdFilters"],
        request.get("DurationFilter", -1) if version >= 1 else -1,
        ctx.listener_broker,
    )
    if ctx.authorizer is not None:
        states = listed["TransactionStates"]
        allowed = ctx.allowed_names(
            Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, (s["TransactionalId"] for s in states)
        )
        listed["TransactionStates"] = [s for s in states if s["TransactionalId"] in allowed]
    return {"ThrottleTimeMs": 0, **listed}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code, "UnknownStateFilters": [], "TransactionStates": []}
