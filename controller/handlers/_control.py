"""Shared by the control APIs (keys 1000 and up, ``Simulator*``): the gate, and their answers.

The control APIs drive the simulation over the wire (stop a broker, move the virtual clock, read the
event log, add request faults) by calling the same functions as the in-process controls of
:class:`controller.embedded.ServerThread` (:class:`controller.dynamics.Dynamics`, ``controller.faults``).

They are served only when ``simulator.control.enable`` is true (``auto``: when the listener is on a
loopback address), and on a SASL listener only to the users of ``simulator.control.users``. Otherwise
they are refused as Kafka refuses an API key it does not serve: not advertised, and the connection
closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from controller.answers import Close
from controller.handlers import RequestContext
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

__all__ = ["CONTROL_KEYS", "VERSIONS", "answer", "check", "error_response", "failed", "served"]

VERSIONS = (0, 0)
#: The control APIs' keys are this and above.
CONTROL_KEYS = 1000


def served(config: ServerConfig) -> bool:
    """Whether the control APIs are served at all (``simulator.control.enable``)."""
    return config.control_enabled


def check(ctx: RequestContext) -> None:
    """Refuses (closes) a SASL user not listed in ``simulator.control.users``."""
    if ctx.sasl is None:
        return
    users = ctx.controller.config.control_users or ()
    if ctx.principal not in users:
        raise Close(
            "unknown apiKey",
            f"apiKey {ctx.header.api_key}: user {ctx.principal} is not in simulator.control.users",
        )


def failed(exc: Exception, missing: ErrorCode = ErrorCode.INVALID_REQUEST) -> dict[str, Any]:
    """The answer to a control that could not be carried out: ``missing`` for what does not exist
    (KeyError), INVALID_REQUEST for a bad argument or a control the server cannot do."""
    if isinstance(exc, KeyError):
        message = str(exc.args[0]) if exc.args else str(exc)
        return {"ErrorCode": missing, "ErrorMessage": message}
    return {"ErrorCode": ErrorCode.INVALID_REQUEST, "ErrorMessage": str(exc)}


async def answer(
    ctx: RequestContext,
    action: Callable[[], Awaitable[Any]],
    missing: ErrorCode = ErrorCode.INVALID_REQUEST,
    result: Callable[[Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Runs a control: its answer (``result`` of what it returned), or its error."""
    check(ctx)
    try:
        done = await action()
    except (KeyError, ValueError, RuntimeError) as exc:
        return {"ThrottleTimeMs": 0, **failed(exc, missing)}
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, **(result(done) if result else {})}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message}
