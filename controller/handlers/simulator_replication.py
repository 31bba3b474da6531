"""SimulatorReplication (1004): how one broker's followers copy (delay behind their leader, records per
second), as ``ServerThread.set_replication``; -1 leaves a value as it is, ``Unlimited`` lifts the rate
limit."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_REPLICATION

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    delay = request["DelayMs"]
    rate = None if request["Unlimited"] else request["RecordsPerSecond"]
    dynamics = ctx.controller.dynamics
    return await _control.answer(
        ctx,
        lambda: dynamics.set_replication(request["BrokerId"], None if delay == -1 else delay, rate),
        ErrorCode.BROKER_NOT_AVAILABLE,
    )
