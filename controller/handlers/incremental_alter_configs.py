"""IncrementalAlterConfigs (44): configs set, deleted (back to what the next level gives), or, for lists,
appended to or subtracted from, one by one; see :mod:`controller.config_admin` for the checks, Kafka's.
(the first refusals as a Kafka 4 broker makes them before it forwards the request: the list operations,
and operations it does not know).
"""

from __future__ import annotations

from typing import Any

from controller.config_admin import ConfigChange
from controller.handlers import RequestContext
from controller.handlers.alter_configs import answer, error_response
from protocol.codes import ApiKey

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = (0, 1)

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    results = await ctx.controller.config_admin.alter(
        [
            (
                r["ResourceType"],
                r["ResourceName"],
                [ConfigChange(c["Name"], c["Value"], c["ConfigOperation"]) for c in r["Configs"]],
            )
            for r in request["Resources"]
        ],
        validate_only=bool(request["ValidateOnly"]),
        incremental=True,
        answering_broker=ctx.listener_broker,
    )
    return answer(results)
