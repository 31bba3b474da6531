"""IncrementalAlterConfigs (44): configs set, deleted (back to what the next level gives), or, for lists,
appended to or subtracted from, one by one; see :mod:`controller.config_admin` for the checks, Kafka's.
(the first refusals as a Kafka 4 broker makes them before it forwards the request: the list operations,
and operations it does not know).
"""

from __future__ import annotations

from typing import Any

from controller.config_admin import ConfigChange
from controller.handlers import RequestContext
from controller.handlers.alter_configs import altered, error_response
from protocol.codes import ApiKey

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = (0, 1)

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle"]


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    changes = [
        [ConfigChange(c["Name"], c["Value"], c["ConfigOperation"]) for c in r["Configs"]]
        for r in request["Resources"]
    ]
    return await altered(ctx, request, changes, incremental=True)
