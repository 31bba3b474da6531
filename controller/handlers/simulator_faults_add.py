"""SimulatorFaultsAdd (1009): registers request faults (:mod:`controller.faults`) after those the server
holds, in order; answers their ids. A fault that is not valid (an unknown action or error code, a
probability above 1), or more than ``controller.faults.registry.MAX_FAULTS`` held in all, is
INVALID_REQUEST, and none of the request's faults is added."""

from __future__ import annotations

from typing import Any

from controller.faults import FaultSpec, FaultSyntaxError
from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_FAULTS_ADD

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    _control.check(ctx)
    try:
        specs = [FaultSpec.from_wire(entry) for entry in request["Faults"]]
    except FaultSyntaxError as exc:
        return error_response(request, version, ErrorCode.INVALID_REQUEST, str(exc))
    try:
        faults = ctx.controller.faults.add_all(specs)
    except ValueError as exc:
        return error_response(request, version, ErrorCode.INVALID_REQUEST, str(exc))
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "Ids": [f.id for f in faults]}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Ids": []}
