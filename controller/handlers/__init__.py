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
  encoded and answers the same request again without decoding it or calling the handler;
- optionally ``decode_caps(config) -> {field path: Cap}``: the most elements each array of the request
  may hold, from the server's settings (:class:`Cap`). The dispatch decodes with them
  (:mod:`protocol.caps`): an array above its cap is not built, and the request is answered with
  ``error_response`` and the cap's error, without calling ``handle``;
- optionally ``decode(frame, offset, version) -> (request, end) | None``: a decoder of the request's body
  for a hot path, giving what the spec's codec gives (and where the body ends) without its copies, or
  None for what it leaves to the codec (Produce: :mod:`protocol.produce_request`). It runs on the event
  loop whatever the body's size, so its cost must not grow with the body's bytes.

Handlers never see bytes (but records, as the protocol carries them). An answer stays bounded by its request: what the answer repeats for each
element of the request is bounded by what that element takes in the request, and an error message is
said once per answer (:class:`SaidOnce`), not once per element.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from protocol.caps import CapPath
from protocol.codec import DecodeFn
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.app import Controller
    from controller.config import ServerConfig
    from controller.image import MetadataImage
    from protocol.framing import RequestHeader
    from protocol.registry import Schemas

__all__ = [
    "NO_OPERATIONS",
    "AnswerDependsOn",
    "Cap",
    "Handler",
    "Handlers",
    "RequestContext",
    "SaidOnce",
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


@dataclass(frozen=True, slots=True)
class Cap:
    """The most elements one array of a request may hold: above ``limit`` the array is not decoded and the
    request is answered with ``error`` (the error Kafka gives for that limit); ``setting`` names where the
    limit comes from (a setting's key, or a constant's module) for the message."""

    limit: int
    error: ErrorCode
    setting: str

    def message(self, path: CapPath, count: int) -> str:
        return (
            f"{count} elements in {'.'.join(path)}, above the limit of {self.limit} ({self.setting}); "
            "the request was not read further."
        )


class SaidOnce:
    """The error messages of one answer: each is given with the first element that has it (with its error
    code), and later elements with the same error and message carry none (null: the error code says it).
    Kafka's ApiError gives each element its message (``ReplicationControlManager.electLeader`` names the
    topic in every partition's), so that a request naming one long unknown topic with many partitions got
    an answer thousands of times its size; here an answer stays within a few times its request."""

    __slots__ = ("_said",)

    def __init__(self) -> None:
        self._said: set[tuple[int, str]] = set()

    def __call__(self, code: int, message: str | None) -> str | None:
        """``message`` the first time it is given with ``code`` in this answer, None after."""
        if message is None:
            return None
        key = (code, message)
        if key in self._said:
            return None
        self._said.add(key)
        return message


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
CapsFn = Callable[["ServerConfig"], Mapping[CapPath, Cap]]


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
    #: The request's array caps from the settings (None: none).
    decode_caps: CapsFn | None = None
    #: The handler's own decoder of its requests' bodies, for a hot path (None: the spec's codec only).
    decode: DecodeFn | None = None

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
            getattr(module, "decode_caps", None),
            getattr(module, "decode", None),
        )
        if handlers[key].decode_caps is not None and handlers[key].error_response is None:
            raise RuntimeError(f"handler {info.name} declares decode_caps without an error_response")
    return Handlers(handlers)
