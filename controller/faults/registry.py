"""The faults a server holds, and what a request that one of them fires on gets.

Faults are kept in the order they were added. A request is checked against them in that order: every
fault it matches counts the call (``calls``), and the first whose trigger fires (``fired``) acts; the
faults after it do not see the request. A probability is drawn from a generator of the fault's own,
seeded from the server's seed and the fault's id: the same seed and the same calls fire the same way.

Cheap when nothing matches: the faults a request's header matches (API key and version, listener, client
id) are worked out once per header and kept, so that a request no fault names costs one lookup. Faults
naming a topic, partition or group look into the request's body, and only when its header matches one:
a fault whose topic or group is not in the body's bytes cannot match it (names are sent as they are),
so the body is read only when some such fault could match. Then the answer for a small body is kept
(the same request again costs a lookup); a big one is read each time. Reading walks only the fields
that lead to names (worked out once per API).

Registration is thread-safe (``ServerThread.faults`` is used from the test's thread); matching runs on
the server's event loop.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from controller.answers import Answer, Close, Closing, Later
from controller.faults.spec import FaultSpec, api_key_of, parse_faults
from protocol import UNKNOWN_TAGS_FOUND, DecodeError
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.clock import Clock, Timer
    from protocol.codec import DecodeFn, Message
    from protocol.framing import RequestHeader
    from protocol.registry import Schemas
    from protocol.spec import FieldSpec

__all__ = ["MAX_FAULTS", "Fault", "FaultHost", "Faults"]

#: The most faults a server holds.
MAX_FAULTS = 10_000
#: Requests whose matching faults are kept (client ids and bodies are the client's to choose): past this
#: many, the cache starts again ...
_CACHED_REQUESTS = 4096
#: ... and bodies are part of the key up to this size (a bigger one is read again each time) ...
_CACHED_BODY_BYTES = 4096
#: ... unless this many bodies in a row with that header were new.
_BODY_MISSES = 256
#: Request fields that name partitions (with ``entityType`` topicName and groupId for the others); Produce's
#: is ``Index`` (Kafka's ProduceRequest.json).
_PARTITION_FIELDS = frozenset(
    {"Partition", "Partitions", "PartitionIndex", "PartitionIndexes", "PartitionId", "PartitionIds", "Index"}
)


class _ByHeader:
    """The faults a header matches, in order, and how to tell which of those that look into the body a
    body matches: ``pattern`` finds their topics and groups in its bytes (None: some names neither and
    every body is read), ``by_topic`` holds them by topic (None: naming none) with their partition and
    group."""

    __slots__ = ("bodies", "by_topic", "faults", "misses", "pattern", "plain")

    def __init__(self, faults: tuple[Fault, ...]) -> None:
        self.faults = faults
        #: Bodies read in a row that were not kept already (past :data:`_BODY_MISSES`, its bodies are
        #: not kept: they do not repeat, as a producer's batches do not).
        self.misses = 0
        #: The faults that do not look into the body: what a body none of the others matches gets.
        self.plain = tuple(f for f in faults if not f.spec.needs_body)
        self.by_topic: dict[str | None, list[tuple[Fault, int, str | None, str | None]]] = {}
        words: set[bytes] = set()
        always = False
        for f in faults:
            spec = f.spec
            if not spec.needs_body:
                continue
            self.by_topic.setdefault(spec.topic, []).append(
                (f, spec.partition, spec.group, spec.transactional_id)
            )
            named = spec.topic if spec.topic is not None else spec.group
            named = named if named is not None else spec.transactional_id
            if named is None:
                always = True
            else:
                words.add(named.encode())
        self.pattern: re.Pattern[bytes] | None = None
        if words and not always:
            self.pattern = re.compile(b"|".join(re.escape(w) for w in sorted(words)))
        #: Whether some of the faults look into the body.
        self.bodies = bool(self.by_topic)


class _State(NamedTuple):
    faults: tuple[Fault, ...]
    #: By header (API key, version, listener's broker, client id).
    by_header: dict[tuple[Any, ...], _ByHeader]
    #: By header and body, for small bodies some fault had to read.
    by_body: dict[tuple[Any, ...], tuple[Fault, ...]]


class Origin(Protocol):
    """Who sent a request (:class:`controller.dispatch.Origin`): the listener's broker, None the bootstrap."""

    @property
    def broker(self) -> int | None: ...

    @property
    def key_space(self) -> str | None: ...


class FaultHost(Protocol):
    """What a fault needs from the dispatch (:class:`controller.dispatch.Dispatcher`)."""

    def answer(self, frame: bytes, origin: Any, faulted: bool = False) -> Answer: ...

    def error_answer(
        self,
        frame: bytes,
        offset: int,
        header: RequestHeader,
        code: int,
        message: str,
        origin: Origin | None = None,
    ) -> bytes:
        """The request's API's error response with ``code`` (in the key space ``origin`` speaks)."""
        ...

    def in_place_decoder(self, api_key: int) -> DecodeFn | None:
        """The API's own decoder of its bodies (the handler's ``decode``), None when the codec decodes them."""
        ...


class Fault:
    """A registered fault: its :attr:`spec`, counts, and the trigger methods of Kafka's fault proxy
    (each returns the fault, so ``faults.inject_error(...).once()`` reads as Kafka's)."""

    def __init__(self, fault_id: int, spec: FaultSpec, seed: int) -> None:
        self.id = fault_id
        self.spec = spec
        #: Requests it matched, and how many of them it acted on.
        self.calls = 0
        self.fired = 0
        self._random = random.Random(f"{seed}/{fault_id}")

    # ------------------------------------------------------------------------------------- arming

    def once(self) -> Fault:
        return self._arm("once")

    def on_call(self, n: int) -> Fault:
        """Fires on the n-th matching call only."""
        return self._arm("on-call", count=n)

    def times(self, n: int) -> Fault:
        """Fires on the first n matching calls."""
        return self._arm("times", count=n)

    def every_time(self) -> Fault:
        """Fires on every matching call (the ``always`` trigger)."""
        return self._arm("always")

    def with_probability(self, p: float) -> Fault:
        return self._arm("probability", probability=p)

    def _arm(self, trigger: str, count: int = 0, probability: float = 0.0) -> Fault:
        self.spec = self.spec.with_trigger(trigger, count, probability)
        return self

    # ------------------------------------------------------------------------------------- firing

    def fires(self) -> bool:
        """Counts a matching call; whether the fault acts on it."""
        self.calls += 1
        spec = self.spec
        trigger = spec.trigger
        if trigger == "always":
            fire = True
        elif trigger == "once":
            fire = self.fired == 0
        elif trigger == "times":
            fire = self.fired < spec.count
        elif trigger == "on-call":
            fire = self.calls == spec.count
        else:
            fire = self._random.random() < spec.probability
        if fire:
            self.fired += 1
        return fire

    def __repr__(self) -> str:
        return f"Fault(#{self.id} {self.spec}, calls={self.calls}, fired={self.fired})"


class Faults:
    """The server's request faults (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        schemas: Schemas,
        seed: int | None = None,
        specs: Iterable[FaultSpec] = (),
    ) -> None:
        self._clock = clock
        self._schemas = schemas
        self._seed = 0 if seed is None else seed
        self._lock = threading.Lock()
        self._next_id = 1
        #: The faults and the faults requests matched (by header, and by body where it was read): replaced
        #: as one, so that a request is matched against one set of faults while another thread adds or
        #: clears them.
        self._state = _State((), {}, {})
        #: Per API key, how its bodies are read for their names: the host asked for its decoder, the
        #: request's codec, what reads the names of a decoded request (see :func:`_reader`), and the
        #: host's own decoder of those bodies (None: the codec's).
        self._readers: dict[int, tuple[FaultHost, Message, _Reader, DecodeFn | None]] = {}
        #: The last body read for its names: (frame, offset, decoded body, where it ended), for the
        #: dispatch to answer from rather than decode it again (:meth:`take_read`).
        self._read: tuple[bytes, int, dict[str, Any], int, bool] | None = None
        #: Whether any fault is registered: the dispatch asks nothing more when not.
        self.armed = False
        self.add_all(specs)

    # ------------------------------------------------------------------------------------- registering

    def add(self, spec: FaultSpec) -> Fault:
        [fault] = self.add_all([spec])
        return fault

    def add_all(self, specs: Iterable[FaultSpec]) -> list[Fault]:
        """Registers faults after the others, in order; ValueError past :data:`MAX_FAULTS` (none is added)."""
        specs = list(specs)
        with self._lock:
            held = self._state.faults
            if len(held) + len(specs) > MAX_FAULTS:
                raise ValueError(
                    f"at most {MAX_FAULTS} faults are held; {len(held)} are, {len(specs)} more asked for"
                )
            added = []
            for spec in specs:
                added.append(Fault(self._next_id, spec, self._seed))
                self._next_id += 1
            self._set(held + tuple(added))
        return added

    def add_text(self, text: str) -> list[Fault]:
        """Faults in the compact syntax of ``simulator.faults``."""
        return self.add_all(parse_faults(text))

    def clear(self, ids: Iterable[int] | None = None) -> int:
        """Removes the faults with these ids (None: every fault); how many were removed."""
        with self._lock:
            held = self._state.faults
            gone = None if ids is None else set(ids)
            self._set(() if gone is None else tuple(f for f in held if f.id not in gone))
            return len(held) - len(self._state.faults)

    def _set(self, faults: tuple[Fault, ...]) -> None:
        self._state = _State(faults, {}, {})
        self.armed = bool(faults)

    def __iter__(self) -> Iterator[Fault]:
        return iter(self._state.faults)

    def __len__(self) -> int:
        return len(self._state.faults)

    def __getitem__(self, index: int) -> Fault:
        return self._state.faults[index]

    # ------------------------------------------------------------------------------------- Kafka's names

    def inject_error(self, api_key: int | str, error: int | str, **match: Any) -> Fault:
        """Answers matching requests with ``error`` (per topic or partition where the answer has them)."""
        code = error if isinstance(error, int) else ErrorCode[error]
        return self.add(FaultSpec("error", error=int(code), api_key=int(api_key_of(api_key)), **match))

    def disconnect_on(self, api_key: int | str, after: bool = False, **match: Any) -> Fault:
        """Closes the connection of a matching request before it is handled (``after``: once it was)."""
        action = "close-after" if after else "close-before"
        return self.add(FaultSpec(action, api_key=int(api_key_of(api_key)), **match))

    def delay_on(self, api_key: int | str, delay_ms: int, **match: Any) -> Fault:
        """Holds the answer to a matching request ``delay_ms`` on the server's clock."""
        return self.add(FaultSpec("delay", delay_ms=delay_ms, api_key=int(api_key_of(api_key)), **match))

    def drop_on(self, api_key: int | str, **match: Any) -> Fault:
        """Never answers a matching request (the connection's later requests wait behind it)."""
        return self.add(FaultSpec("drop", api_key=int(api_key_of(api_key)), **match))

    def blackhole_client(self, client_id: str, **match: Any) -> Fault:
        """Never answers a request whose client id contains ``client_id``."""
        return self.add(FaultSpec("blackhole", client=client_id, **match))

    # ------------------------------------------------------------------------------------- matching

    def intercept(
        self, host: FaultHost, header: RequestHeader, frame: bytes, offset: int, origin: Origin
    ) -> Answer | None:
        """The answer a fault gives this request, or None when no fault fires (answered as usual)."""
        state = self._state
        key = (header.api_key, header.api_version, origin.broker, header.client_id)
        by_header = state.by_header.get(key)
        if by_header is None:
            by_header = self._match_header(state, key)
        matched = by_header.faults
        if by_header.bodies:
            matched = self._match_body(host, state, key, by_header, frame, offset)
        if not matched:
            return None
        for fault in matched:
            if fault.fires():
                return self._act(fault, host, header, frame, offset, origin)
        return None

    def _match_header(self, state: _State, key: tuple[Any, ...]) -> _ByHeader:
        api_key, version, broker, client_id = key
        found = tuple(f for f in state.faults if f.spec.matches_header(api_key, version, broker, client_id))
        by_header = state.by_header
        if len(by_header) >= _CACHED_REQUESTS:
            by_header.clear()
        by_header[key] = entry = _ByHeader(found)
        return entry

    def _match_body(
        self,
        host: FaultHost,
        state: _State,
        key: tuple[Any, ...],
        by_header: _ByHeader,
        frame: bytes,
        offset: int,
    ) -> tuple[Fault, ...]:
        """The header's faults that this body matches too (those that do not look into it, always)."""
        pattern = by_header.pattern
        if pattern is not None and pattern.search(frame, offset) is None:
            return by_header.plain  # no topic or group a fault names is in the body's bytes
        kept_body = len(frame) - offset <= _CACHED_BODY_BYTES and by_header.misses < _BODY_MISSES
        if kept_body:
            body_key = (*key, frame[offset:])
            kept = state.by_body.get(body_key)
            if kept is not None:
                by_header.misses = 0
                return kept
            by_header.misses += 1
        topics: set[str] = set()
        partitions: set[int] = set()
        groups: set[str] = set()
        txns: set[str] = set()
        self._read_names(host, key[0], key[1], frame, offset, topics, partitions, groups, txns)
        hits = {
            f
            for topic in (None, *topics)
            for f, partition, group, txn in by_header.by_topic.get(topic, ())
            if (partition == -1 or partition in partitions)
            and (group is None or group in groups)
            and (txn is None or txn in txns)
        }
        found = (
            tuple(f for f in by_header.faults if f in hits or not f.spec.needs_body)
            if hits
            else by_header.plain
        )
        if kept_body:
            by_body = state.by_body
            if len(by_body) >= _CACHED_REQUESTS:
                by_body.clear()
            by_body[body_key] = found
        return found

    def _read_names(
        self,
        host: FaultHost,
        api_key: int,
        version: int,
        frame: bytes,
        offset: int,
        topics: set[str],
        partitions: set[int],
        groups: set[str],
        txns: set[str],
    ) -> None:
        """Adds the names the request's body holds to these sets."""
        reading = self._readers.get(api_key)
        if reading is None or reading[0] is not host:
            if not self._schemas.has_request(api_key):
                return
            message = self._schemas.request(api_key)
            read = _reader(_name_fields(message.spec.fields))
            reading = self._readers[api_key] = (host, message, read, host.in_place_decoder(api_key))
        _, message, read, decode = reading
        decoded = decode(frame, offset, version) if decode is not None else None
        tagged = False  # the API's own decoder reports no unknown tagged fields
        if decoded is None:
            found = UNKNOWN_TAGS_FOUND.count
            try:
                decoded = message.decode_from(frame, offset, version)
            except (DecodeError, ValueError):
                return  # the usual path closes the connection for it
            tagged = UNKNOWN_TAGS_FOUND.count != found
        request, end = decoded
        read(request, topics, partitions, groups, txns)
        self._read = (frame, offset, request, end, tagged)

    def take_read(self, frame: bytes, offset: int) -> tuple[dict[str, Any], int, bool] | None:
        """The body of this very frame (the same object), decoded without caps when the faults read its
        names, where it ended, and whether the codec found tagged fields the spec does not know in it (the
        API's own decoder reports none); None when they did not read it. Taken once: the dispatch answers
        from it."""
        read = self._read
        if read is None or read[0] is not frame or read[1] != offset:
            return None
        self._read = None
        return read[2], read[3], read[4]

    def _act(
        self,
        fault: Fault,
        host: FaultHost,
        header: RequestHeader,
        frame: bytes,
        offset: int,
        origin: Origin,
    ) -> Answer:
        spec = fault.spec
        action = spec.action
        if action == "error":
            return host.error_answer(
                frame, offset, header, spec.error, f"injected by fault #{fault.id}: {spec}", origin
            )
        if action in ("drop", "blackhole"):
            return Later(_forever(), _never, _never)
        if action == "close-before":
            raise Close("fault", f"fault #{fault.id} ({spec}) closed the connection before handling")
        if action == "close-after":
            close = Close("fault", f"fault #{fault.id} ({spec}) closed the connection after handling")
            handled = host.answer(frame, origin, faulted=True)
            if isinstance(handled, Later):
                return Later(handled.run(), lambda _: Closing(None, close), lambda _: Closing(None, close))
            return Closing(None, close)
        # delay: handled now, answered later
        handled = host.answer(frame, origin, faulted=True)
        if isinstance(handled, Closing):
            return handled
        done = asyncio.get_running_loop().create_future()
        timer = self._clock.call_later(spec.delay_ms, lambda: _wake(done), "delayed answer (request fault)")
        return Later(_held(handled, done, timer), _as_is, _raise)


def _wake(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


async def _held(handled: bytes | Later, done: asyncio.Future[None], timer: Timer) -> bytes | Closing:
    """The answer once ``timer`` (set when the request came, on the server's clock) has fired; the
    request's work, if any, done meanwhile."""
    try:
        answer = await handled.run() if isinstance(handled, Later) else handled
        await done
    finally:
        timer.cancel()
    return answer


#: What a field names: a struct's (0) hold fields that name something, else topics (1), partitions (2),
#: groups (3) or transactional ids (4).
_STRUCT, _TOPICS, _PARTITIONS, _GROUPS, _TXNS = 0, 1, 2, 3, 4
#: A request's fields that lead to names: (field name, what it names, the struct's fields).
_NameFields = tuple[tuple[str, int, "_NameFields"], ...]


def _name_fields(fields: tuple[FieldSpec, ...]) -> _NameFields:
    """The fields that name topics, partitions, groups or transactional ids, and the structs that hold them
    (no others)."""
    kept: list[tuple[str, int, _NameFields]] = []
    for field in fields:
        if field.fields:
            inner = _name_fields(field.fields)
            if inner:
                kept.append((field.name, _STRUCT, inner))
        elif field.entity_type == "topicName":
            kept.append((field.name, _TOPICS, ()))
        elif field.entity_type == "groupId":
            kept.append((field.name, _GROUPS, ()))
        elif field.entity_type == "transactionalId":
            kept.append((field.name, _TXNS, ()))
        elif field.name in _PARTITION_FIELDS:
            kept.append((field.name, _PARTITIONS, ()))
    return tuple(kept)


#: Reads the names a decoded request holds into (topics, partitions, groups, transactional ids).
_Reader = Callable[[Mapping[str, Any], set[str], set[int], set[str], set[str]], None]


def _reader(fields: _NameFields) -> _Reader:
    """A function that walks ``fields`` of a decoded request (made once per API key: a plain loop per
    array, no recursion, as the codecs of ``protocol.codec`` are made)."""
    lines = ["def read(d0, topics, partitions, groups, txns):"]
    into = {_TOPICS: "topics", _PARTITIONS: "partitions", _GROUPS: "groups", _TXNS: "txns"}

    def walk(fields: _NameFields, depth: int, indent: str) -> None:
        for name, names, inner in fields:
            value = f"v{len(lines)}"
            lines.append(f"{indent}{value} = d{depth}.get({name!r})")
            lines.append(f"{indent}if {value} is not None:")
            if names == _STRUCT:
                item = f"d{depth + 1}"
                lines.append(f"{indent}    for {item} in {value} if type({value}) is list else ({value},):")
                # A decoded struct is a dict: the ABC check (slow) only for other mappings.
                lines.append(f"{indent}        if type({item}) is dict or isinstance({item}, Mapping):")
                walk(inner, depth + 1, indent + "            ")
            else:
                target = into[names]
                lines.append(f"{indent}    if type({value}) is list:")
                lines.append(f"{indent}        {target}.update({value})")
                lines.append(f"{indent}    else:")
                lines.append(f"{indent}        {target}.add({value})")

    walk(fields, 0, "    ")
    lines.append("    return None")
    namespace: dict[str, Any] = {"Mapping": Mapping}
    exec(compile("\n".join(lines), "<fault names reader>", "exec"), namespace)
    return namespace["read"]  # type: ignore[no-any-return]


def _as_is(answer: bytes | Closing) -> bytes | Closing:
    return answer


async def _forever() -> None:
    await asyncio.get_running_loop().create_future()


def _never(_: object) -> Answer:  # pragma: no cover - a dropped request is never answered
    raise Close("fault", "a dropped request was answered")


def _raise(exc: Exception) -> Answer:
    raise exc
