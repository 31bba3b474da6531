"""SimulatorProduceLoad (1005): records arriving at every partition leader of a topic, per partition and
second, as ``ServerThread.produce_load``; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_PRODUCE_LOAD

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    dynamics = ctx.controller.dynamics
    return await _control.answer(
        ctx,
        lambda: dynamics.produce_load(request["Topic"], request["RecordsPerSecond"]),
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    )
