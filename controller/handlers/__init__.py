"""Request handlers: one module per API key, each a function from decoded request to response data.

Adding an API is one module here (or in the handlers package of a subsystem: :mod:`controller.app`) and
its spec in ``schemas/``, then ``python -m controller.handlers.index``: the index it writes
(``_index.py``) lists every module that defines ``API_KEY``, with its versions; ApiVersions advertises
what the index holds without importing a handler, the dispatch (:mod:`controller.dispatch`) routes to it,
and a handler's module is imported at the first request of its API. A handler module defines:

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
- optionally ``KEY_SPACE``: the key space of its API key (``"kafka"``), for the API Kafka's clients mean by
  a key the project gave an API of its own (apiKey 68: :mod:`protocol.registry`); such a handler serves
  the connections that speak that key space (:class:`Handlers`, :mod:`controller.dispatch`);
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
  loop whatever the body's size, so its cost must not grow with the body's bytes;
- optionally ``connection_key_space(config, request, version) -> str | None``: the key space the
  connection speaks from this request on (ApiVersions: the client names the library it is).

Handlers never see bytes (but records, as the protocol carries them). An answer stays bounded by its request: what the answer repeats for each
element of the request is bounded by what that element takes in the request, and an error message is
said once per answer (:class:`SaidOnce`), not once per element.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from controller.handlers._index import HANDLERS
from protocol.caps import CapPath
from protocol.codec import DecodeFn
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.acls.authorizer import Authorizer
    from controller.app import Controller
    from controller.config import ServerConfig
    from controller.image import MetadataImage
    from protocol.framing import RequestHeader

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

#: Kafka's "authorized operations not computed" marker (a client that did not ask for them).
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
    #: The authorizer (:mod:`controller.acls`), None when ``authorizer.class.name`` names none: then
    #: every check below allows.
    authorizer: Authorizer | None = None

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    # ---- authorization, as Kafka's handlers ask (``AuthHelper``): codes of controller.acls.model

    @property
    def kafka_principal(self) -> str:
        """``User:alice``, or ``User:ANONYMOUS`` for a client that did not authenticate."""
        return "User:ANONYMOUS" if self.principal is None else f"User:{self.principal}"

    @property
    def host(self) -> str:
        """The client's address, as ACLs name hosts."""
        host = self.peer.rpartition(":")[0] or self.peer
        return host[1:-1] if host.startswith("[") else host

    def allowed(self, operation: int, resource_type: int, name: str) -> bool:
        """Whether the client may perform ``operation`` on the resource (always, without an authorizer)."""
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize(
            self.kafka_principal, self.host, operation, resource_type, name
        )

    def refused_on_cluster(self, operation: int) -> str | None:
        """A refusal's message when the client may not perform ``operation`` on the cluster (Kafka's
        ``authorizeClusterOperation``: the request is answered CLUSTER_AUTHORIZATION_FAILED), None when it
        may."""
        authorizer = self.authorizer
        if authorizer is None:
            return None
        from controller.acls.codes import CLUSTER_NAME, Operation, ResourceType

        if authorizer.authorize(
            self.kafka_principal, self.host, operation, ResourceType.CLUSTER, CLUSTER_NAME
        ):
            return None
        verb = Operation(operation).name.lower().replace("_", " ")
        return f"{self.kafka_principal} is not authorized to {verb} the cluster."

    def allowed_names(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]:
        """The names of ``names`` the client may perform ``operation`` on (each decided once)."""
        authorizer = self.authorizer
        if authorizer is None:
            return set(names)
        return authorizer.allowed_names(self.kafka_principal, self.host, operation, resource_type, names)

    def allowed_on_some(self, operation: int, resource_type: int) -> bool:
        """Whether the client may perform ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``)."""
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(
            self.kafka_principal, self.host, operation, resource_type
        )

    def operations(self, resource_type: int, name: str) -> int:
        """The authorized operations on a resource as the wire's bitfield: every operation of the type
        without an authorizer, as Kafka answers then."""
        authorizer = self.authorizer
        if authorizer is None:
            from controller.acls.codes import ALL_OPERATIONS, ResourceType

            return ALL_OPERATIONS[ResourceType(resource_type)]
        return authorizer.operations(self.kafka_principal, self.host, resource_type, name)


HandleFn = Callable[[RequestContext, dict[str, Any], int], Awaitable[Any] | Any]
UnsupportedFn = Callable[[int], tuple[dict[str, Any], int]]
ErrorFn = Callable[[dict[str, Any], int, int, str], dict[str, Any]]
CapsFn = Callable[["ServerConfig"], Mapping[CapPath, Cap]]


#: What a handler module may define besides ``API_KEY``, ``VERSIONS`` and ``served``, and its default.
_BEHAVIOUR = {
    "handle": None,
    "unsupported": None,
    "error_response": None,
    "answer_depends_on": None,
    "decode_caps": None,
    "decode": None,
    "connection_key_space": None,
}
_MODULE_NAMES = {"answer_depends_on": "ANSWER_DEPENDS_ON"}


class Handler:
    """One API key as the server serves it: its versions (from the index), and what its module defines,
    imported at the first use of any of it (then plain attributes):

    - ``handle``: the handler;
    - ``unsupported``: the answer to a request of an unsupported version, and the version it is encoded
      in (None: close);
    - ``error_response``: the answer when the handler fails, every item of the request with the error
      (None: close);
    - ``answer_depends_on``: what an answer given at once depends on (None: anything, never kept);
    - ``decode_caps``: the request's array caps from the settings (None: none);
    - ``decode``: the handler's own decoder of its requests' bodies, for a hot path (None: the codec's);
    - ``connection_key_space``: the key space the connection speaks after this request (None: no say).
    """

    handle: HandleFn
    unsupported: UnsupportedFn | None
    error_response: ErrorFn | None
    answer_depends_on: AnswerDependsOn | None
    decode_caps: CapsFn | None
    decode: DecodeFn | None
    connection_key_space: Callable[[Any, dict[str, Any], int], str | None] | None

    def __init__(
        self, api_key: ApiKey, min_version: int, max_version: int, module: str, key_space: str | None = None
    ) -> None:
        self.api_key = api_key
        self.min_version = min_version
        self.max_version = max_version
        #: The handler's module (imported at first use).
        self.module = module
        #: The key space of its API (None: the project's own; :mod:`protocol.registry`).
        self.key_space = key_space

    def __getattr__(self, name: str) -> Any:
        if name not in _BEHAVIOUR:
            raise AttributeError(f"'Handler' object has no attribute {name!r}")
        self.load()
        return self.__dict__[name]

    def load(self) -> Handler:
        """Imports the handler's module (once) and takes what it defines."""
        if "handle" not in self.__dict__:
            module = importlib.import_module(self.module)
            for name, default in _BEHAVIOUR.items():
                value = getattr(module, _MODULE_NAMES.get(name, name), default)
                if name == "answer_depends_on" and value is not None:
                    value = AnswerDependsOn(value)
                self.__dict__[name] = value
        return self

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def __repr__(self) -> str:
        return f"Handler({self.api_key.name}, {self.min_version}-{self.max_version}, {self.module})"


class Handlers(Mapping[int, Handler]):
    """The handlers the server serves, by API key (what ApiVersions advertises), as a connection of the
    project's own key space sees them; :meth:`in_space` gives them as a connection of another sees them
    (the API keys that are two APIs answered by that space's handler)."""

    def __init__(
        self,
        handlers: Mapping[int, Handler],
        spaces: Mapping[str, Mapping[int, Handler]] | None = None,
        key_space: str | None = None,
    ) -> None:
        self._handlers = dict(sorted(handlers.items()))
        #: Key space -> its own handlers of keys that are two APIs.
        self._spaces = {space: dict(own) for space, own in (spaces or {}).items()}
        #: The key space these handlers are of (None: the project's own).
        self.key_space = key_space
        self._in_space: dict[str, Handlers] = {}

    def in_space(self, key_space: str | None) -> Handlers:
        """The handlers as a connection speaking ``key_space`` sees them (None: the project's own)."""
        if key_space == self.key_space:
            return self
        if key_space is None or key_space not in self._spaces:
            return self if self.key_space is None else Handlers(self._handlers, self._spaces)
        found = self._in_space.get(key_space)
        if found is None:
            found = self._in_space[key_space] = Handlers(
                {**self._handlers, **self._spaces[key_space]}, self._spaces, key_space
            )
        return found

    def key_spaces(self) -> tuple[str, ...]:
        """The key spaces some handler serves."""
        return tuple(sorted(self._spaces))

    def __getitem__(self, api_key: int) -> Handler:
        return self._handlers[api_key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)

    def supports(self, api_key: int, version: int) -> bool:
        handler = self._handlers.get(api_key)
        return handler is not None and handler.supports(version)


def load_handlers(config: ServerConfig | None = None) -> Handlers:
    """The handlers of the index (``_index.py``), none imported yet. With ``config``, those whose module's
    ``served`` says no are left out (``served`` functions are imported now: they are small)."""
    handlers: dict[int, Handler] = {}
    spaces: dict[str, dict[int, Handler]] = {}
    gates: dict[str, Callable[[ServerConfig], bool]] = {}
    for api_key, module, low, high, served, space in HANDLERS:
        if config is not None and served is not None:
            gate = gates.get(served)
            if gate is None:
                where, _, name = served.partition(":")
                gate = gates[served] = getattr(importlib.import_module(where), name)
            if not gate(config):
                continue
        handler = Handler(ApiKey(api_key), low, high, module, space)
        if space is None:
            handlers[api_key] = handler
        else:
            spaces.setdefault(space, {})[api_key] = handler
    return Handlers(handlers, spaces)
