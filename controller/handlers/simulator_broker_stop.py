"""SimulatorBrokerStop (1000): stops a broker (crash, hang, isolate, controlled), as
``ServerThread.stop_broker``; an unknown mode is INVALID_REQUEST, an unknown broker BROKER_NOT_AVAILABLE."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_BROKER_STOP

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    dynamics = ctx.controller.dynamics
    return await _control.answer(
        ctx,
        lambda: dynamics.stop_broker(request["BrokerId"], request["Mode"]),
        ErrorCode.BROKER_NOT_AVAILABLE,
    )
