"""SimulatorScenarioLoad (1012): a scenario file's steps (docs/scenarios.md) scheduled on the server's
clock, each ``t`` after now (the controller's scenario player, as ``serve --scenario``
does at start). The running server's brokers and settings stay: the file's cluster, settings, seed and
end are not applied, and the answer names them (``Ignored``). A file that cannot be read is
INVALID_REQUEST with its line and key (a text longer than :data:`MAX_SCENARIO_BYTES` too); a step that fails later is logged and the others still run."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, served
from controller.offload import BIG_BODY, in_thread
from controller.scenario import ScenarioError, parse_scenario
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_SCENARIO_LOAD

__all__ = ["API_KEY", "MAX_SCENARIO_BYTES", "VERSIONS", "error_response", "handle", "served"]

#: The longest scenario file a server reads, in bytes (a file of thousands of steps is far shorter); one
#: above :data:`~controller.offload.BIG_BODY` is read in a worker thread (the event loop serves on).
MAX_SCENARIO_BYTES = 1_000_000


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    _control.check(ctx)
    data = request["Scenario"]
    if len(data) > MAX_SCENARIO_BYTES:
        message = f"a scenario of {len(data)} bytes, above the limit of {MAX_SCENARIO_BYTES}"
        return error_response(request, version, ErrorCode.INVALID_REQUEST, message)
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        return error_response(
            request, version, ErrorCode.INVALID_REQUEST, f"the scenario is not UTF-8 text: {exc.reason}"
        )
    try:
        source = request["Source"] or "<scenario>"
        if len(data) > BIG_BODY:
            scenario = await in_thread(parse_scenario, text, source)
        else:
            scenario = parse_scenario(text, source)
    except ScenarioError as exc:
        return error_response(request, version, ErrorCode.INVALID_REQUEST, str(exc))
    ignored = [
        name
        for name, given in (
            ("cluster", scenario.brokers is not None or scenario.cluster_file is not None),
            ("settings", bool(scenario.settings)),
            ("scenario.seed", scenario.seed is not None),
            ("scenario.end", scenario.end_ms is not None),
        )
        if given
    ]
    start = ctx.controller.scenarios.play(scenario).start_ms
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": ErrorCode.NONE,
        "Steps": len(scenario.steps),
        "StartMs": start,
        "Ignored": ignored,
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "Steps": 0,
        "StartMs": -1,
        "Ignored": [],
    }
