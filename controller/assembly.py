"""The one place a server is put together: its security (TLS, SASL), the controller, the server.

Everything that runs a server (``placement-sim serve``, :class:`controller.embedded.ServerThread`, the
pytest plugin) starts it here; nothing else imports :mod:`controller.server`'s construction.
"""

from __future__ import annotations

# Every server uses these before its first answer, and they are imported with its code, not at its first
# start or first client: the control APIs' gate (read when the handlers are listed) and the handler of
# every client's first request.
import controller.handlers._control  # noqa: F401
import controller.handlers.api_versions  # noqa: F401
from controller.app import Controller
from controller.config import ServerConfig
from controller.security import Security
from controller.server import Server

__all__ = ["create_server"]


async def create_server(config: ServerConfig) -> Server:
    """The controller for ``config``, then a server for it (not yet listening: call ``start()``).

    A ConfigError for unusable key material comes before anything starts."""
    security = Security(config)
    controller = await Controller.start(config)
    # SCRAM logins check the cluster's credentials (controller.acls.scram), which the SCRAM admin APIs
    # change; on a SASL listener they are salted now, before anything is served.
    security.use_credentials(lambda: controller.scram)
    if security.sasl and any(m.startswith("SCRAM-") for m in security.mechanisms):
        controller.scram  # noqa: B018
    return Server(controller, security)
