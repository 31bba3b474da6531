"""SimulatorFaultsClear (1011): removes the request faults with the given ids (null: every fault); answers
how many were removed (an id the server does not hold is no error)."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_FAULTS_CLEAR

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    _control.check(ctx)
    cleared = ctx.controller.faults.clear(request["Ids"])
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Cleared": cleared}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Cleared": 0}
