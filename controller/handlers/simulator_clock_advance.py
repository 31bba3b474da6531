"""SimulatorClockAdvance (1006): moves the virtual clock ahead, firing every timer on the way, as
``ServerThread.advance``; answers the new time. A real clock, a negative move or one above
:data:`MAX_ADVANCE_MS` (a longer move is several requests, so that one request cannot hold the clock
for hours of replication ticks) is INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_CLOCK_ADVANCE

#: The longest move one request makes: an hour.
MAX_ADVANCE_MS = 3_600_000

__all__ = ["API_KEY", "MAX_ADVANCE_MS", "VERSIONS", "error_response", "handle", "served"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if request["Ms"] > MAX_ADVANCE_MS:
        _control.check(ctx)
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.INVALID_REQUEST, "NowMs": -1,
                "ErrorMessage": f"Ms {request['Ms']} is above {MAX_ADVANCE_MS} (one hour): move in steps"}  # fmt: skip
    dynamics = ctx.controller.dynamics
    answer = await _control.answer(
        ctx, lambda: dynamics.advance(request["Ms"]), result=lambda now: {"NowMs": now}
    )
    answer.setdefault("NowMs", -1)
    return answer
