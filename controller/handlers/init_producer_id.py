"""InitProducerId (22) v0-5: a producer id for an idempotent producer.

As Kafka's ``TransactionCoordinator.handleInitProducerId`` without a transactional id: every request gets
a new producer id (from the controller's deterministic allocator, :class:`ProducerIdAllocator`) at epoch
0, whatever ProducerId and ProducerEpoch (v3+, KIP-360) it carries. Transactions are not simulated: a
request with a TransactionalId is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (a fatal error for
every client, so that a transactional producer stops instead of retrying), and the refusal is logged
with the reason.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.handlers import RequestContext
from controller.records.producers import ProducerIdAllocator
from protocol.codes import ApiKey, ErrorCode

log = logging.getLogger(__name__)

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = (0, 5)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    transactional_id = request.get("TransactionalId")
    if transactional_id is not None:
        log.warning(
            "%s: InitProducerId for transactional id %r refused: transactions are not simulated",
            ctx.peer,
            transactional_id,
        )
        return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    producer_id = ctx.controller.data_path.producer_ids.allocate()
    return _answer(ErrorCode.NONE, producer_id, ProducerIdAllocator.FIRST_EPOCH)


def _answer(code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": producer_id, "ProducerEpoch": epoch}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return _answer(ErrorCode(error_code))
