"""SimulatorFaultsList (1010): the request faults the server holds, in order, each in the compact syntax
of ``simulator.faults`` with how many requests it matched and how many times it fired."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_FAULTS_LIST

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    _control.check(ctx)
    faults = [
        {"Id": f.id, "Spec": str(f.spec), "Calls": f.calls, "Fired": f.fired} for f in ctx.controller.faults
    ]
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Faults": faults}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Faults": []}
