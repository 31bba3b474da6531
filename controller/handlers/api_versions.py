"""ApiVersions (18): the handshake. Advertises exactly the API keys and versions the server answers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from controller.handlers import RequestContext
from protocol.errors import error_by_name

if TYPE_CHECKING:
    from controller.app import Controller

API_KEY = 18
VERSIONS = (0, 4)

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if version >= 3:
        for field in ("ClientSoftwareName", "ClientSoftwareVersion"):
            value = request.get(field) or ""
            if not _SOFTWARE.fullmatch(value):
                return {
                    "ErrorCode": error_by_name("INVALID_REQUEST").code,
                    "ApiKeys": [],
                    "ThrottleTimeMs": 0,
                }
    return ctx.controller.api_versions_response()


def unsupported_version_response(controller: Controller) -> dict[str, Any]:
    """Kafka's answer to an ApiVersions request of a version it does not know: v0, only ApiVersions' range."""
    handler = controller.handlers[API_KEY]
    return {
        "ErrorCode": error_by_name("UNSUPPORTED_VERSION").code,
        "ApiKeys": [
            {"ApiKey": API_KEY, "MinVersion": handler.min_version, "MaxVersion": handler.max_version}
        ],
    }
