"""InitProducerId (22) v0-5: a producer id for an idempotent or a transactional producer.

As Kafka's ``TransactionCoordinator.handleInitProducerId``. Without a transactional id every request gets
a new producer id (from the controller's deterministic allocator, :class:`ProducerIdAllocator`) at epoch
0, whatever ProducerId and ProducerEpoch (v3+, KIP-360) it carries; any broker answers. With one, the
transactional id's coordinator answers (:meth:`TransactionCoordinator.init_producer_id`: the epoch
bumped, a zombie fenced, an open transaction aborted) once the new state is replicated; PRODUCER_FENCED
is answered as INVALID_PRODUCER_EPOCH before v4, which predates it.

With an authorizer, as Kafka: a transactional id the client may not WRITE is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType
from controller.handlers import RequestContext
from controller.records.producers import ProducerIdAllocator
from protocol.codes import ApiKey, ErrorCode

log = logging.getLogger(__name__)

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = (0, 5)


#: PRODUCER_FENCED may be answered from v4 on.
_PRODUCER_FENCED = 4
#: ProducerId and ProducerEpoch from v3 (KIP-360).
_RESUME = 3


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Any:
    transactional_id = request.get("TransactionalId")
    if ctx.authorizer is not None:
        if transactional_id is not None:
            if not ctx.allowed(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
                return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not ctx.allowed(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) and not (
            ctx.allowed_on_some(Operation.WRITE, ResourceType.TOPIC)
        ):
            return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if transactional_id is not None:
        return _transactional(ctx, request, version, transactional_id)
    producer_id = ctx.controller.data_path.producer_ids.allocate()
    return _answer(ErrorCode.NONE, producer_id, ProducerIdAllocator.FIRST_EPOCH)


def _transactional(ctx: RequestContext, request: dict[str, Any], version: int, transactional_id: str) -> Any:
    from controller.transactions.handlers._respond import Answer  # only a transactional producer needs it

    def build(result: tuple[ErrorCode, int, int]) -> dict[str, Any]:
        error, producer_id, epoch = result
        if error is ErrorCode.PRODUCER_FENCED and version < _PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return _answer(error, producer_id, epoch)

    expected = None
    if version >= _RESUME and request.get("ProducerId", -1) >= 0:
        expected = (request["ProducerId"], request.get("ProducerEpoch", -1))
    answer: Answer[tuple[ErrorCode, int, int]] = Answer(build)
    ctx.controller.transactions.coordinator.init_producer_id(
        transactional_id, request["TransactionTimeoutMs"], expected, ctx.listener_broker, answer.respond
    )
    return answer.result()


def _answer(code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerId": producer_id, "ProducerEpoch": epoch}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return _answer(ErrorCode(error_code))
