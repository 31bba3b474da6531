"""Request handlers: one module per API key, each a function from decoded request to response data.

Adding an API is one module here and its spec in ``schemas/``: the registry finds every module of this
package that defines ``API_KEY``, ApiVersions advertises what the registry holds, and the dispatch
(:mod:`controller.dispatch`) routes to it. A handler module defines:

- ``API_KEY`` (an :class:`protocol.codes.ApiKey`) and ``VERSIONS = (min, max)``: what the server answers,
  within the spec's range;
- ``handle(ctx, request, version)``: the answer (see :mod:`controller.answers`), from the request's data
  and a :class:`RequestContext` (plain data: who asks, through which listener, and the controller's
  state; never the server or a connection). A plain function that can answer at once does, and the
  request costs no task; an ``async def`` (or a plain function returning an awaitable) answers later;
- optionally ``unsupported(version) -> (response, response_version)``: the answer to a version it does not
  support (ApiVersions answers one, as Kafka); without it the connection is closed;
- optionally ``error_response(request, version, error_code, message)``: the answer when the handler fails
  (a bug), so that the request is still answered; without it the connection is closed;
- optionally ``served(config) -> bool``: whether the server serves the API key at all with that
  configuration (the control APIs: ``simulator.control.enable``); an API not served is neither
  advertised nor answered, as Kafka treats an API key it does not know;
- optionally ``ANSWER_DEPENDS_ON``: an :class:`AnswerDependsOn`, for handlers whose answers given at once
  depend on nothing but the request (and the metadata image): the dispatch then keeps such answers
  encoded and answers the same request again without decoding it or calling the handler.

Handlers never see bytes.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from protocol.codes import ApiKey

if TYPE_CHECKING:
    from controller.app import Controller
    from controller.config import ServerConfig
    from controller.image import MetadataImage
    from protocol.framing import RequestHeader
    from protocol.registry import Schemas

__all__ = [
    "NO_OPERATIONS",
    "AnswerDependsOn",
    "Handler",
    "Handlers",
    "RequestContext",
    "SaslExchange",
    "load_handlers",
]

#: Kafka's "authorized operations not computed" marker; no ACLs are simulated.
NO_OPERATIONS = -(2**31)


class AnswerDependsOn(enum.Enum):
    """What an answer a handler gives at once depends on, besides the request's version and body."""

    #: Nothing: the same request always gets the same answer (ApiVersions).
    REQUEST = "request"
    #: The metadata image the answering broker holds, and the advertised listeners (Metadata).
    IMAGE = "image"


class SaslExchange(Protocol):
    """A connection's SASL exchange, as the SaslHandshake and SaslAuthenticate handlers drive it
    (:class:`controller.security.SaslSession`)."""

    @property
    def user(self) -> str | None: ...

    @property
    def expects_handshake(self) -> bool: ...

    @property
    def expects_token(self) -> bool: ...

    def handshake(self, mechanism: str, version: int) -> dict[str, Any]: ...

    def authenticate(self, token: bytes) -> dict[str, Any]: ...


@dataclass(slots=True)
class RequestContext:
    """What a handler may use besides the request: the controller's state and who is asking, as plain data.

    ``endpoints`` are the brokers' listeners as the server advertises them (broker id -> host, port).
    """

    controller: Controller
    #: The handlers the server serves (what ApiVersions advertises).
    handlers: Handlers
    header: RequestHeader
    peer: str
    #: The broker whose listener received the request (None: the bootstrap listener).
    listener_broker: int | None = None
    endpoints: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    #: The metadata image the answering broker holds when it is not the current one (isolated brokers).
    image: MetadataImage | None = None
    #: The authenticated user (SASL), None for an anonymous client.
    principal: str | None = None
    #: The connection's SASL exchange on a SASL listener (None elsewhere).
    sasl: SaslExchange | None = None

    @property
    def client_id(self) -> str | None:
        return self.header.client_id


HandleFn = Callable[[RequestContext, dict[str, Any], int], Awaitable[Any] | Any]
UnsupportedFn = Callable[[int], tuple[dict[str, Any], int]]
ErrorFn = Callable[[dict[str, Any], int, int, str], dict[str, Any]]


@dataclass(frozen=True)
class Handler:
    api_key: ApiKey
    min_version: int
    max_version: int
    handle: HandleFn
    #: The answer to a request of an unsupported version, and the version it is encoded in; None: close.
    unsupported: UnsupportedFn | None = None
    #: The answer when the handler fails: every item of the request with the error; None: close.
    error_response: ErrorFn | None = None
    #: What an answer given at once depends on (None: anything, never kept).
    answer_depends_on: AnswerDependsOn | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class Handlers(Mapping[int, Handler]):
    """The handlers the server serves, by API key (what ApiVersions advertises)."""

    def __init__(self, handlers: Mapping[int, Handler]) -> None:
        self._handlers = dict(sorted(handlers.items()))

    def __getitem__(self, api_key: int) -> Handler:
        return self._handlers[api_key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)

    def supports(self, api_key: int, version: int) -> bool:
        handler = self._handlers.get(api_key)
        return handler is not None and handler.supports(version)


def load_handlers(schemas: Schemas, config: ServerConfig | None = None) -> Handlers:
    """Every handler module of this package, checked against the specs: a handler must answer versions its
    spec has, and two modules cannot claim one API key. With ``config``, the modules whose ``served``
    says no are left out."""
    handlers: dict[int, Handler] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        api_key = getattr(module, "API_KEY", None)
        if api_key is None:
            continue
        key = ApiKey(api_key)
        if key in handlers:
            raise RuntimeError(
                f"apiKey {key.name} ({key.value}) is handled by two modules, {info.name} among them"
            )
        served = getattr(module, "served", None)
        if config is not None and served is not None and not served(config):
            continue
        low, high = module.VERSIONS
        spec_low, spec_high = schemas.request(key).valid_versions
        if not (spec_low <= low <= high <= spec_high):
            raise RuntimeError(
                f"handler {info.name} answers {key.name} {low}-{high}, outside the spec's {spec_low}-{spec_high}"
            )
        depends = getattr(module, "ANSWER_DEPENDS_ON", None)
        handlers[key] = Handler(
            key,
            low,
            high,
            module.handle,
            getattr(module, "unsupported", None),
            getattr(module, "error_response", None),
            AnswerDependsOn(depends) if depends is not None else None,
        )
    return Handlers(handlers)
