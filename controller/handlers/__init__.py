"""Request handlers: one module per API key, each a function from decoded request to response data.

Each handler module defines ``API_KEY``, ``VERSIONS = (min, max)`` (what the server answers, within the
spec's range) and ``async def handle(ctx, request, version) -> dict``. A handler that answers requests
of versions it does not support (ApiVersions does, as Kafka) also defines
``def unsupported(ctx, version) -> (response, response_version)``; for the others the server closes the
connection. ``handle`` may also be a plain function: a handler that can answer at once does, and the
server answers the request without a task. A module may define
``def error_response(request, version, error_code, message) -> dict``: the answer the server sends when
the handler fails (a bug), so that the request is still answered. A module may define
``ANSWER_DEPENDS_ON``: ``"request"`` when an answer its handler gives at once (not awaited) depends on
the request's version and body alone, ``"image"`` when also on the metadata image the broker answers
from and the advertised listeners; the server then keeps such answers encoded and answers the same
request again without decoding it or calling the handler (:class:`controller.server.KeptAnswers`).
Handlers never see bytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.app import Controller
    from controller.connection import Connection
    from controller.image import MetadataImage
    from protocol.framing import RequestHeader

__all__ = ["HANDLER_MODULES", "NO_OPERATIONS", "Handler", "RequestContext", "load_handlers"]

HANDLER_MODULES = [
    "api_versions",
    "create_replica_placement",
    "metadata",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "describe_cluster",
    "elect_leaders",
    "sasl_handshake",
    "sasl_authenticate",
]

#: Kafka's "authorized operations not computed" marker; no ACLs are simulated.
NO_OPERATIONS = -(2**31)


@dataclass(slots=True)
class RequestContext:
    """What a handler may use besides the request: the controller's state and who is asking.

    ``endpoints`` are the brokers' listeners as the server advertises them (broker id -> host, port).
    """

    controller: Controller
    header: RequestHeader
    peer: str
    listener_broker: int | None = None  # the broker whose listener received the request (None: bootstrap)
    endpoints: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    #: The metadata image the answering broker holds when it is not the current one (isolated brokers).
    image: MetadataImage | None = None
    #: The client's connection (its security state, for SaslHandshake and SaslAuthenticate).
    connection: Connection | None = None


HandleFn = Callable[[RequestContext, dict[str, Any], int], Awaitable[Any] | Any]
UnsupportedFn = Callable[[RequestContext, int], tuple[dict[str, Any], int]]
ErrorFn = Callable[[dict[str, Any], int, int, str], dict[str, Any]]


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    handle: HandleFn
    #: The answer to a request of an unsupported version, and the version it is encoded in; None: close.
    unsupported: UnsupportedFn | None = None
    #: The answer when the handler fails: every item of the request with the error; None: close.
    error_response: ErrorFn | None = None
    #: What an answer given at once depends on besides the request: "image", "request" (nothing), or
    #: None (anything: never kept). The module's ``ANSWER_DEPENDS_ON``.
    answer_depends_on: str | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def load_handlers() -> dict[int, Handler]:
    handlers: dict[int, Handler] = {}
    for name in HANDLER_MODULES:
        module = importlib.import_module(f"controller.handlers.{name}")
        low, high = module.VERSIONS
        handlers[module.API_KEY] = Handler(
            module.API_KEY,
            low,
            high,
            module.handle,
            getattr(module, "unsupported", None),
            getattr(module, "error_response", None),
            getattr(module, "ANSWER_DEPENDS_ON", None),
        )
    return handlers
