"""SimulatorBrokerAdd (1002): registers a new broker (optionally on a rack), as ``ServerThread.add_broker``;
an id already registered is INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey

API_KEY = ApiKey.SIMULATOR_BROKER_ADD

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    dynamics = ctx.controller.dynamics
    return await _control.answer(ctx, lambda: dynamics.add_broker(request["BrokerId"], request["Rack"]))
