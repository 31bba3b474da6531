"""SimulatorBrokerRemove (1003): unregisters a broker, as ``ServerThread.remove_broker``."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_BROKER_REMOVE

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    dynamics = ctx.controller.dynamics
    return await _control.answer(
        ctx, lambda: dynamics.remove_broker(request["BrokerId"]), ErrorCode.BROKER_NOT_AVAILABLE
    )
