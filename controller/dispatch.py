"""From a request frame to its answer: header, route, then a kept answer or decode -> handler -> encode,
framed in one place.

Kafka's rules for a frame: an unknown apiKey, an unsupported version (except where the handler answers
it: ApiVersions answers v0 with UNSUPPORTED_VERSION) or a body that does not decode closes the
connection (:class:`controller.answers.Close`). Every decodable request is answered: a response that
cannot be encoded as the handler made it (a message too long for its field, say) is encoded with its
strings cut to what their fields carry, and a handler that fails answers with its API's error response.

An API key may be two APIs (apiKey 68: the project's CreateReplicaPlacement, and ConsumerGroupHeartbeat,
which Kafka's clients mean by it: :mod:`protocol.registry`). Each connection speaks one key space
(:attr:`Origin.key_space`): the project's own until its ApiVersions request says otherwise (the handler's
``connection_key_space``, :mod:`controller.handlers.api_versions`), or the one the server is set to speak
(``simulator.apikey.68``); its requests are routed, decoded and answered in that space.

A handler whose answers depend on the request alone (and the metadata image: ``ANSWER_DEPENDS_ON``) has
the answers it gave at once kept encoded (:class:`KeptAnswers`): the same request bytes again, with the
same image and advertised listeners, cost their header.

Limits come before decoding: a handler's ``decode_caps`` (array caps from the settings) are prepared once
per route, and a request with an array above its cap is decoded without building that array
(:mod:`protocol.caps`) and answered with the handler's ``error_response`` and the cap's error, so that
what a request may make the server build is bounded by the settings, not by the client.

Big work stays off the event loop: a big body is decoded, and a big answer (:class:`Sized`) encoded, in a
worker thread (:mod:`controller.offload`).
"""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from controller.answers import FUTURE, NO_FRAME, NO_RESPONSE, Answer, Close, Later, Parked, Pieces, Sized
from controller.handlers import (
    AnswerDependsOn,
    Cap,
    DecodeFn,
    Handler,
    Handlers,
    RequestContext,
    SaslExchange,
    load_handlers,
)
from controller.logsafe import shown
from controller.offload import BIG, BIG_BODY, in_thread
from protocol import UNKNOWN_TAGGED_FIELDS, UNKNOWN_TAGS_FOUND, Capped, DecodeError, EncodeError
from protocol.caps import CapPath
from protocol.codec import DecodeCaps, Message
from protocol.codes import ErrorCode
from protocol.framing import (
    FramePieces,
    RequestHeader,
    encode_response,
    encode_response_pieces,
    parse_request_header,
    response_header_version,
)

if TYPE_CHECKING:
    from controller.app import Controller
    from controller.image import MetadataImage

log = logging.getLogger(__name__)

__all__ = ["Dispatcher", "KeptAnswers", "Origin"]

#: The longest string a non-compact string field carries (int16 length), in bytes.
_MAX_STRING = 0x7FFF

#: Kept answers (:class:`KeptAnswers`): for request bodies up to this size (bytes), ...
KEPT_REQUEST_BYTES = 16 * 1024
#: ... answers up to this size, ...
KEPT_ANSWER_BYTES = 1 << 20
#: ... at most this many answers and this many bytes in all, per image (or for the server).
KEPT_ANSWERS = 1024
KEPT_BYTES = 16 << 20


class _NoFaults:
    """The request faults before any is added (:class:`controller.faults.Faults` is built at its first use)."""

    armed = False


_NO_FAULTS = _NoFaults()


@dataclass(slots=True)
class Origin:
    """Who sends a connection's requests: plain data the dispatch turns into each request's context."""

    peer: str
    #: The broker whose listener took the connection (None: the bootstrap listener).
    broker: int | None = None
    #: The connection's SASL exchange (SASL listeners).
    sasl: SaslExchange | None = None
    #: The key space the connection speaks (None: the project's own; see the module docstring).
    key_space: str | None = None

    @property
    def principal(self) -> str | None:
        return self.sasl.user if self.sasl is not None else None


class KeptAnswers:
    """Encoded answers to requests seen before: (apiKey, version, request body) -> response body, made for
    the advertised listeners of :attr:`endpoints` (a version of them). Bounded in count and bytes: a
    client sending ever new requests fills it, then its answers are made each time."""

    __slots__ = ("answers", "endpoints", "size")

    def __init__(self, endpoints: int) -> None:
        self.endpoints = endpoints
        self.answers: dict[tuple[int, int, bytes], bytes] = {}
        self.size = 0

    def keep(self, key: tuple[int, int, bytes], body: bytes) -> None:
        size = len(body) + len(key[2])
        if (
            len(self.answers) < KEPT_ANSWERS
            and len(body) <= KEPT_ANSWER_BYTES
            and self.size + size <= KEPT_BYTES
        ):
            self.answers[key] = body
            self.size += size


@dataclass(frozen=True, slots=True)
class _Route:
    """How the requests of one API version are served: worked out at their first request."""

    handler: Handler
    version: int
    #: The stats key counting these requests.
    counter: str
    header_version: int
    #: The request's and the response's codecs (None for a version the handler does not support).
    request: Message | None = None
    response: Message | None = None
    flexible: bool = False
    #: The handler's ``answer_depends_on`` (None: answers are never kept).
    kept: AnswerDependsOn | None = None
    #: The encoded answer to every request of this version (an unsupported version's).
    fixed: bytes | None = None
    #: The handler's caps, and those that apply to this version prepared for decoding (None: not yet,
    #: while ``cap_rules`` is set; the first request prepares them).
    caps: DecodeCaps | None = None
    cap_rules: dict[CapPath, Cap] | None = None
    #: What decodes a body: ``(frame, offset) -> (request, end)``, the codec's (capped, when caps apply;
    #: None until they are prepared).
    decoder: Callable[[bytes, int], tuple[dict[str, Any], int]] | None = None
    #: The handler's own decoder (``Handler.decode``) where it applies: no caps apply to the route.
    in_place: DecodeFn | None = None
    #: The handler's ``connection_key_space``: the key space a connection speaks after this request.
    learns: Callable[[Any, dict[str, Any], int], str | None] | None = None

    def framed(self, correlation: int, body: bytes) -> bytes:
        """The one place a response is framed (:meth:`framed_pieces` for a body in pieces)."""
        return encode_response(correlation, self.header_version, body)

    def framed_pieces(self, correlation: int, pieces: list[bytes | memoryview]) -> FramePieces:
        return encode_response_pieces(correlation, self.header_version, pieces)


class Dispatcher:
    """Answers request frames for one controller (see the module docstring).

    Besides the controller's state, answers depend on what the server tells the dispatcher about the
    network: the brokers' advertised listeners (:meth:`advertise`) and the metadata images of brokers cut
    off from the controller (:meth:`freeze`)."""

    def __init__(self, controller: Controller, stats: Counter[str]) -> None:
        self.controller = controller
        self.schemas = controller.schemas
        #: The API keys served: every handler module's (what ApiVersions advertises).
        self.handlers: Handlers = load_handlers(controller.config)
        #: Request faults (controller.faults): asked about every request while any is registered (none
        #: before the faults are first used: they are built then, and replace this).
        self.faults: Any = _NO_FAULTS
        controller.when_built("faults", self._faults_built)
        self.stats = stats
        #: The broker listeners as advertised: broker id -> (host, port).
        self.endpoints: dict[int, tuple[str, int]] = {}
        #: Changes with :attr:`endpoints` (answers kept for other listeners are not given).
        self._endpoints_version = 0
        #: The metadata images of brokers cut off from the controller.
        self._frozen: dict[int, MetadataImage] = {}
        self._routes: dict[tuple[int, int], _Route] = {}
        #: The routes of the connections speaking another key space than the project's, by key space.
        self._space_routes: dict[str, dict[tuple[int, int], _Route]] = {}
        #: Answers that depend on the request alone (answers that depend on the image are kept with it).
        self._kept = KeptAnswers(0)
        #: The authorizer (authorizer.class.name): handlers ask it through their request context. With
        #: it, answers depend on who asks, and none is kept.
        self.authorizer = controller.acls.authorizer if controller.config.authorizer_class else None
        #: The key space every connection speaks when the server is set to one (``simulator.apikey.68``);
        #: None: each connection's own (its ApiVersions request tells).
        self.forced_key_space: str | None = None
        self._auto_key_space = True
        mode = getattr(controller.config, "api_key_68", "auto")
        if mode != "auto":
            self._auto_key_space = False
            self.forced_key_space = "kafka" if mode == "ConsumerGroupHeartbeat" else None

    def _faults_built(self, faults: Any) -> None:
        self.faults = faults

    # ------------------------------------------------------------------------------------- the network

    def advertise(self, broker: int, endpoint: tuple[str, int] | None) -> None:
        """``broker``'s listener as clients are told it (None: it has none any more)."""
        if endpoint is None:
            if self.endpoints.pop(broker, None) is not None:
                self._endpoints_version += 1
        elif self.endpoints.get(broker) != endpoint:
            self.endpoints[broker] = endpoint
            self._endpoints_version += 1

    def freeze(self, broker: int, image: MetadataImage | None) -> None:
        """``broker`` answers from ``image`` (it is cut off from the controller); None: from the current one."""
        if image is None:
            self._frozen.pop(broker, None)
        else:
            self._frozen[broker] = image

    # ------------------------------------------------------------------------------------- answering

    def answer(self, frame: bytes, origin: Origin, faulted: bool = False) -> Answer:
        """The answer to one request frame (see :mod:`controller.answers`); raises Close. ``faulted``: the
        request faults were asked about it already (it is answered as usual)."""
        try:
            header, offset = parse_request_header(frame, self.schemas)
        except DecodeError as exc:
            raise Close("malformed request header", str(exc)) from None
        faults = self.faults
        armed = faults.armed
        if frame.__class__ is not bytes and (armed or not self._in_place(header.api_key)):
            frame = bytes(frame)  # a big frame (a read-only view: controller.connection) as bytes
        if armed and not faulted:
            answer = faults.intercept(self, header, frame, offset, origin)
            if answer is not None:
                return answer
        space = origin.key_space if self._auto_key_space else self.forced_key_space
        routes = self._routes if space is None else self._routes_in(space)
        route = routes.get((header.api_key, header.api_version))
        if route is None:
            route = self._route(header.api_key, header.api_version, space)
        if route.cap_rules is not None and route.caps is None:  # its first request: compile the caps
            return self._with_caps(route, frame, origin)
        if route.fixed is not None:
            self.stats[route.counter] += 1
            return route.framed(header.correlation_id, route.fixed)
        decoded_first: _Decoded | None = None
        if route.learns is not None:  # the request says which key space the connection speaks from now
            decoded_first = _decode(route, frame, offset)
            if self._auto_key_space:
                origin.key_space = route.learns(self.controller.config, decoded_first[0], route.version)
        key: tuple[int, int, bytes] | None = None
        if route.kept is not None and origin.sasl is None and len(frame) - offset <= KEPT_REQUEST_BYTES:
            # (Not on SASL listeners: what ApiVersions offers there depends on the user.)
            key = (header.api_key, header.api_version, frame[offset:])
            kept = self._kept_answers(route, origin.broker)
            body = kept.answers.get(key) if kept is not None else None
            if body is not None:
                self.stats[route.counter] += 1
                if log.isEnabledFor(logging.DEBUG):
                    _log_request(origin.peer, header)
                return route.framed(header.correlation_id, body)
        broker, sasl, frozen = origin.broker, origin.sasl, self._frozen
        ctx = RequestContext(
            self.controller,
            self.handlers if space is None else self.handlers.in_space(space),
            header,
            origin.peer,
            broker,
            self.endpoints,
            frozen.get(broker) if frozen and broker is not None else None,
            sasl.user if sasl is not None else None,  # origin.principal
            sasl,
            self.authorizer,
        )
        if decoded_first is not None:
            return self._handle(ctx, route, *decoded_first, key)
        # (a request fault reads names with the project's key space: another's body is decoded here)
        read = faults.take_read(frame, offset) if armed and route.caps is None and space is None else None
        if read is not None:  # a request fault decoded it already (to read its names)
            return self._handle(ctx, route, *_decoded(route, frame, *read), key)
        if route.in_place is not None:
            decoded = _decode_in_place(route, frame, offset)
            if decoded is not None:
                return self._handle(ctx, route, *decoded, key)
        if len(frame) - offset > BIG_BODY:  # a big body is decoded off the event loop

            async def decoded() -> _Decoded:
                return await in_thread(_decode, route, frame, offset)

            def handled(result: _Decoded) -> Answer:
                return self._handle(ctx, route, *result)

            def undecodable(exc: Exception) -> Answer:
                raise Close("malformed request body", f"{type(exc).__name__}: {exc}")

            return Later(decoded(), handled, undecodable)
        return self._handle(ctx, route, *_decode(route, frame, offset), key)

    def in_place_decoder(self, api_key: int) -> DecodeFn | None:
        """The handler's own decoder of ``api_key``'s bodies, for the request faults to read a body with
        (:meth:`Faults.take_read` hands it back); None when the codec decodes them or caps apply."""
        handler = self.handlers.get(api_key)
        if handler is None or handler.decode_caps is not None:
            return None
        return handler.decode

    def _in_place(self, api_key: int) -> bool:
        """Whether requests of ``api_key`` are read in place (its handler's ``decode``): a big frame, which
        the connection gives as a read-only view, goes to it as it is; to every other API as bytes."""
        handler = self.handlers.get(api_key)
        return handler is not None and handler.decode is not None

    def error_answer(
        self,
        frame: bytes,
        offset: int,
        header: RequestHeader,
        code: int,
        message: str,
        origin: Origin | None = None,
    ) -> bytes:
        """The request answered with ``code`` (a request fault): its handler's error response, which
        carries the code per topic or partition where the answer has them, top-level otherwise (in the
        key space ``origin``'s connection speaks)."""
        space = self.forced_key_space
        if self._auto_key_space:
            space = origin.key_space if origin is not None else None
        routes = self._routes if space is None else self._routes_in(space)
        route = routes.get((header.api_key, header.api_version)) or self._route(
            header.api_key, header.api_version, space
        )
        if route.fixed is not None or route.response is None:
            return route.framed(header.correlation_id, route.fixed or b"")
        request = _decode(route, frame, offset)[0]
        self.stats[route.counter] += 1
        error_response = route.handler.error_response
        data = (
            error_response(request, route.version, code, message)
            if error_response is not None
            else {"ErrorCode": code, "ErrorMessage": message}
        )
        return route.framed(header.correlation_id, route.response.encode(_fit_strings(data), route.version))

    def _routes_in(self, space: str) -> dict[tuple[int, int], _Route]:
        routes = self._space_routes.get(space)
        if routes is None:
            routes = self._space_routes[space] = {}
        return routes

    def _route(self, api_key: int, version: int, space: str | None = None) -> _Route:
        """How requests of one API version are served in key space ``space`` (kept); raises Close for an
        API the server does not serve and for an unsupported version its handler has no answer for."""
        handler = self.handlers.in_space(space).get(api_key)
        if handler is None:
            raise Close("unknown apiKey", f"apiKey {api_key}")
        schemas = self.schemas
        own = handler.key_space  # the handler's key space: None unless the key is two APIs
        if not handler.supports(version):
            if handler.unsupported is None:
                raise Close("unsupported version", f"apiKey {api_key} version {version}")
            answer, answer_version = handler.unsupported(version)
            route = _Route(
                handler,
                version,
                f"requests:{api_key}:unsupported",
                response_header_version(schemas, api_key, answer_version),
                fixed=schemas.response(api_key, own).encode(answer, answer_version),
            )
        else:
            request = schemas.request(api_key, own)
            rules = None
            if handler.decode_caps is not None:
                rules = dict(handler.decode_caps(self.controller.config)) or None
            response = schemas.response(api_key, own)
            route = _Route(
                handler,
                version,
                f"requests:{api_key}" if own is None else f"requests:{api_key}:{own}",
                1 if response.supports(version) and response.is_flexible(version) else 0,
                request,
                response,
                request.is_flexible(version),
                handler.answer_depends_on if self.authorizer is None else None,
                cap_rules=rules,
                # With caps, the codecs are compiled in a worker thread (_with_caps).
                decoder=request.codec(version).decode_from if rules is None else None,
                in_place=handler.decode if rules is None else None,
                learns=handler.connection_key_space,
            )
            if api_key == 18:  # ApiVersions: its response header is always v0 (Kafka's rule)
                route = replace(route, header_version=response_header_version(schemas, api_key, version))
        (self._routes if space is None else self._routes_in(space))[(api_key, version)] = route
        return route

    def _with_caps(self, route: _Route, frame: bytes, origin: Origin) -> Later:
        """The answer to the first request of a route with caps: its capped codec is compiled in a worker
        thread (tens of milliseconds each, for some forty versions: on the loop, a client's first
        requests held everyone up), then the request is answered as any other."""
        assert route.request is not None and route.cap_rules is not None
        rules = route.cap_rules
        limits = {path: cap.limit for path, cap in rules.items()}

        async def prepared() -> None:
            assert route.request is not None
            caps = await in_thread(route.request.prepare_caps, route.version, limits)
            applying = {path: rules[path] for path in caps.caps}
            key = (route.handler.api_key.value, route.version)
            space = origin.key_space if self._auto_key_space else self.forced_key_space
            (self._routes if space is None else self._routes_in(space))[key] = replace(
                route,
                caps=caps if applying else None,
                cap_rules=applying or None,
                decoder=caps.codec.decode_from,
                in_place=None if applying else route.handler.decode,
            )

        def answered(_: None) -> Answer:
            return self.answer(frame, origin, faulted=True)  # the faults were asked about it already

        def failed(exc: Exception) -> Answer:
            raise Close("internal error", f"caps: {type(exc).__name__}: {exc}")

        return Later(prepared(), answered, failed)

    def _kept_answers(self, route: _Route, broker: int | None) -> KeptAnswers | None:
        """Where the route's answers are kept now: the dispatcher's, or the image's the broker answers from
        (None while the current image is out of date: it is made by the next request that needs it). They
        serve every key space alike: an API key that is two APIs is routed to another handler, and its
        answers are kept under that handler's route or not at all."""
        if route.kept is AnswerDependsOn.REQUEST:
            return self._kept
        image = self._frozen.get(broker) if broker is not None else None
        if image is None:
            image = self.controller.current_image()
            if image is None:
                return None
        kept = image.derived.get(KeptAnswers)
        if not isinstance(kept, KeptAnswers) or kept.endpoints != self._endpoints_version:
            kept = image.derived[KeptAnswers] = KeptAnswers(self._endpoints_version)
        return kept

    def _handle(
        self,
        ctx: RequestContext,
        route: _Route,
        request: dict[str, Any],
        unknown: Sequence[str],
        trailing: bool,
        capped: Sequence[tuple[CapPath, Capped]],
        key: tuple[int, int, bytes] | None = None,
    ) -> Answer:
        """Calls the handler and answers with what it gives (keeping it, under ``key``, when it may); a
        request with arrays above their caps gets the handler's error answer instead."""
        header, handler = ctx.header, route.handler
        if capped:
            return self._refused(ctx, route, request, capped)
        if trailing:
            # Kafka ignores bytes after a request body (some clients send them), and so do we.
            self.stats["requests:trailing bytes"] += 1
        if unknown:
            self.stats["requests:unknown tagged fields"] += 1
            log.warning(
                "%s: apiKey %d v%d: unknown tagged field(s) ignored: %s",
                ctx.peer,
                handler.api_key,
                route.version,
                shown(", ".join(unknown)),
            )
        if log.isEnabledFor(logging.DEBUG):
            _log_request(ctx.peer, header)
        self.stats[route.counter] += 1
        correlation = header.correlation_id
        try:
            result = handler.handle(ctx, request, route.version)
        except Close:
            raise
        except Exception as exc:  # a bug in a handler: the request is still answered
            return self._failed(route, request, correlation, exc)
        keep = None if trailing or unknown or key is None else (key, ctx.listener_broker)
        return self._respond(route, request, correlation, result, keep)

    def _refused(
        self,
        ctx: RequestContext,
        route: _Route,
        request: dict[str, Any],
        capped: Sequence[tuple[CapPath, Capped]],
    ) -> bytes:
        """The answer to a request with arrays above their caps: the handler's error answer (those arrays
        read as empty), with the error of the first cap passed."""
        assert route.cap_rules is not None and route.handler.error_response is not None
        assert route.response is not None
        path, first = capped[0]
        cap = route.cap_rules[path]
        message = cap.message(path, first.count)
        self.stats[route.counter] += 1
        self.stats[f"requests:capped:{'.'.join(path)}"] += 1
        log.warning(
            "%s: apiKey %d v%d refused: %s", ctx.peer, route.handler.api_key, route.version, shown(message)
        )
        data = route.handler.error_response(request, route.version, cap.error, message)
        return route.framed(ctx.header.correlation_id, self._body(route, data))

    def _respond(
        self,
        route: _Route,
        request: dict[str, Any],
        correlation: int,
        result: Any,
        keep: tuple[tuple[int, int, bytes], int | None] | None = None,
    ) -> Answer:
        """The answer to a handler's result: a frame now, or work to wait for (its own, or encoding a big
        answer off the loop). An answer given now is kept under ``keep`` (its key and broker)."""
        kind = result.__class__
        if kind is dict or kind is bytes:  # the usual answers: data, or a body kept encoded
            pass
        elif result is NO_RESPONSE:
            return NO_FRAME
        elif kind is Pieces:
            return route.framed_pieces(correlation, result.pieces)
        elif kind is FUTURE:  # a future the handler completes (a commit waiting for the high watermark)
            return Later(
                result,
                lambda done: self._respond(route, request, correlation, done),
                lambda exc: self._failed(route, request, correlation, exc),
            )
        elif kind is Parked or (kind is not Sized and inspect.isawaitable(result)):
            return Later(
                result.work if kind is Parked else result,
                lambda done: self._respond(route, request, correlation, done),
                lambda exc: self._failed(route, request, correlation, exc),
                parked=kind is Parked,
            )
        elif isinstance(result, Sized):
            if result.size > BIG:

                async def encoded() -> bytes:
                    return await in_thread(self._framed_or_failed, route, request, correlation, result)

                return Later(encoded(), _as_is, lambda exc: self._failed(route, request, correlation, exc))
            result = result.made()
        if kind is bytes:
            body = result
        else:
            try:
                body = self._body(route, result)
            except EncodeError as exc:
                return self._failed(route, request, correlation, exc)
        if keep is not None:
            key, broker = keep
            kept = self._kept_answers(route, broker)
            if kept is not None:
                kept.keep(key, body)
        return route.framed(correlation, body)

    def _framed_or_failed(
        self, route: _Route, request: dict[str, Any], correlation: int, result: Sized
    ) -> bytes:
        """A big answer made and framed (in a worker thread)."""
        try:
            return route.framed(correlation, self._body(route, result.made()))
        except Exception as exc:
            return self._failed(route, request, correlation, exc)

    def _body(self, route: _Route, result: Any) -> bytes:
        """The encoded body of a handler's answer (data, or a body the handler keeps encoded), with its
        strings cut to fit their fields when they do not; raises EncodeError when even that fails."""
        if isinstance(result, (bytes, bytearray)):
            return bytes(result)
        assert route.response is not None
        try:
            return route.response.encode(result, route.version)
        except EncodeError as first:
            try:
                body = route.response.encode(_fit_strings(result), route.version)
            except EncodeError:
                raise first from None
            self.stats["responses:strings cut to fit"] += 1
            log.warning(
                "apiKey %d v%d: strings cut to fit their fields (%s)",
                route.handler.api_key,
                route.version,
                shown(first),
            )
            return body

    def _failed(self, route: _Route, request: dict[str, Any], correlation: int, exc: BaseException) -> bytes:
        """A handler that failed, or an answer that does not encode: a bug, logged, and the request is
        answered with its API's error response when the handler module provides one."""
        handler = route.handler
        self.stats["requests:internal error"] += 1
        log.error("apiKey %d v%d failed: %s", handler.api_key, route.version, shown(exc), exc_info=exc)
        if handler.error_response is None or route.response is None:
            raise Close("internal error", f"{type(exc).__name__}: {exc}")
        data = handler.error_response(
            request, route.version, ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}"
        )
        return route.framed(correlation, route.response.encode(_fit_strings(data), route.version))


def _as_is(frame: bytes) -> bytes:
    return frame


#: A decoded request: its body, its unknown tagged fields, whether bytes follow it, its capped arrays.
_Decoded = tuple[dict[str, Any], Sequence[str], bool, Sequence[tuple[CapPath, Capped]]]
#: No unknown tagged fields, no capped arrays (the usual request's).
_NONE: tuple[Any, ...] = ()


def _decode(route: _Route, frame: bytes, offset: int) -> _Decoded:
    """The request body, where it holds tagged fields its spec does not know, whether bytes follow it,
    and the arrays above their caps (each replaced by an empty list). Touches no shared state: big bodies
    are decoded in a worker thread. The decoders count the tag sections with unknown tags they find
    (per thread): only a body that had some is walked to say where."""
    assert route.request is not None
    found = UNKNOWN_TAGS_FOUND.count
    try:
        if route.decoder is not None:
            request, end = route.decoder(frame, offset)
        else:  # caps not prepared yet (a fault's error answer to a route's first request)
            request, end = route.request.decode_from(frame, offset, route.version)
    except DecodeError as exc:
        raise Close("malformed request body", str(exc)) from None
    capped = _capped(request, route.caps.caps) if route.caps is not None else _NONE
    unknown = _unknown_tags(request) if UNKNOWN_TAGS_FOUND.count != found else _NONE
    return request, unknown, end != len(frame), capped


def _decoded(route: _Route, frame: bytes, request: dict[str, Any], end: int, tagged: bool) -> _Decoded:
    """What :func:`_decode` (or :func:`_decode_in_place`) gives, for a body decoded already (without
    caps); ``tagged``: its decode found tagged fields the spec does not know."""
    unknown = _unknown_tags(request) if tagged else _NONE
    return request, unknown, end != len(frame), _NONE


def _decode_in_place(route: _Route, frame: bytes, offset: int) -> _Decoded | None:
    """The request body by the handler's own decoder (its hot path, on the event loop), or None when the
    handler has none, the route decodes with caps, or the decoder leaves this body to the codec."""
    decode = route.in_place
    if decode is None:
        return None
    decoded = decode(frame, offset, route.version)
    if decoded is None:
        return None
    request, end = decoded
    return request, _NONE, end != len(frame), _NONE


def _capped(request: dict[str, Any], caps: Any) -> list[tuple[CapPath, Capped]]:
    """The arrays of ``request`` that decoded to :class:`Capped` at the paths of ``caps``, shallowest
    first; each is replaced by an empty list (so that an error answer can be made from the request)."""
    found: list[tuple[CapPath, Capped]] = []
    for path in sorted(caps, key=len):
        parents: list[Any] = [request]
        for name in path[:-1]:
            inner: list[Any] = []
            for parent in parents:
                value = parent.get(name)
                if isinstance(value, list):
                    inner.extend(item for item in value if isinstance(item, dict))
                elif isinstance(value, dict):
                    inner.append(value)
            parents = inner
        name = path[-1]
        for parent in parents:
            value = parent.get(name)
            if value.__class__ is Capped:
                found.append((path, value))
                parent[name] = []
    return found


def _log_request(peer: str, header: RequestHeader) -> None:
    log.debug(
        "%s: apiKey %d v%d correlation %d from %s",
        peer,
        header.api_key,
        header.api_version,
        header.correlation_id,
        shown(header.client_id, 100),
    )


def _unknown_tags(value: Any, path: str = "") -> list[str]:
    """Where a decoded request holds tagged fields its spec does not know: ``path: tags``."""
    found: list[str] = []
    if isinstance(value, dict):
        tags = value.get(UNKNOWN_TAGGED_FIELDS)
        if tags:
            found.append(f"{path or 'body'}: tag(s) {sorted(tags)}")
        for key, item in value.items():
            if key != UNKNOWN_TAGGED_FIELDS and isinstance(item, (dict, list)):
                found.extend(_unknown_tags(item, f"{path}.{key}" if path else key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                found.extend(_unknown_tags(item, f"{path}[{index}]"))
    return found


def _fit_strings(value: Any) -> Any:
    """A response with every string cut to what a string field carries (32,767 bytes of UTF-8)."""
    if isinstance(value, str):
        data = value.encode("utf-8")
        if len(data) <= _MAX_STRING:
            return value
        note = f"... (cut from {len(data):,} bytes)"
        return data[: _MAX_STRING - len(note)].decode("utf-8", "ignore") + note
    if isinstance(value, dict):
        return {k: _fit_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fit_strings(v) for v in value]
    return value


#: A connection's answer function: request frame in, answer out.
AnswerFn = Callable[[bytes], Answer]
