"""The faults a server holds, and what a request that one of them fires on gets.

Faults are kept in the order they were added. A request is checked against them in that order: every
fault it matches counts the call (``calls``), and the first whose trigger fires (``fired``) acts; the
faults after it do not see the request. A probability is drawn from a generator of the fault's own,
seeded from the server's seed and the fault's id: the same seed and the same calls fire the same way.

Cheap when nothing matches: the faults a request matches are worked out once per header (API key and
version, listener, client id) and kept, so that a request no fault names costs one lookup. Faults naming
a topic, partition or group look into the request's body: while one is registered, a small body is part
of the key (the same request again costs a lookup too) and a big one is read each time.

Registration is thread-safe (``ServerThread.faults`` is used from the test's thread); matching runs on
the server's event loop.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from controller.answers import Answer, Close, Closing, Later
from controller.faults.spec import FaultSpec, api_key_of, parse_faults
from protocol import DecodeError
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.clock import Clock, Timer
    from protocol.framing import RequestHeader
    from protocol.registry import Schemas
    from protocol.spec import FieldSpec

__all__ = ["MAX_FAULTS", "Fault", "FaultHost", "Faults"]

#: The most faults a server holds.
MAX_FAULTS = 10_000
#: Requests whose matching faults are kept (client ids and bodies are the client's to choose): past this
#: many, the cache starts again ...
_CACHED_REQUESTS = 4096
#: ... and bodies are part of the key up to this size (a bigger one is read again each time).
_CACHED_BODY_BYTES = 4096
#: Request fields that name partitions (with ``entityType`` topicName and groupId for the others); Produce's
#: is ``Index`` (Kafka's ProduceRequest.json).
_PARTITION_FIELDS = frozenset(
    {"Partition", "Partitions", "PartitionIndex", "PartitionIndexes", "PartitionId", "PartitionIds", "Index"}
)


class _State(NamedTuple):
    faults: tuple[Fault, ...]
    matched: dict[tuple[Any, ...], tuple[Fault, ...]]
    bodies: bool


class Origin(Protocol):
    """Who sent a request (:class:`controller.dispatch.Origin`): the listener's broker, None the bootstrap."""

    @property
    def broker(self) -> int | None: ...


class FaultHost(Protocol):
    """What a fault needs from the dispatch (:class:`controller.dispatch.Dispatcher`)."""

    def answer(self, frame: bytes, origin: Any, faulted: bool = False) -> Answer: ...

    def error_answer(
        self, frame: bytes, offset: int, header: RequestHeader, code: int, message: str
    ) -> bytes:
        """The request's API's error response with ``code``."""
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
        return self._arm("every")

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
        if trigger == "every":
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
        #: The faults, the faults requests matched (by API key, version, listener's broker, client id, and
        #: the body while some fault looks into bodies), and whether some does: replaced as one, so that a
        #: request is matched against one set of faults while another thread adds or clears them.
        self._state = _State((), {}, False)
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
        self._state = _State(faults, {}, any(f.spec.needs_body for f in faults))
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
        key: tuple[Any, ...]
        if state.bodies and len(frame) - offset <= _CACHED_BODY_BYTES:
            key = (header.api_key, header.api_version, origin.broker, header.client_id, frame[offset:])
        else:
            key = (header.api_key, header.api_version, origin.broker, header.client_id)
        matched = state.matched.get(key)
        if matched is None:
            matched = self._match(state, key, frame, offset)
        if not matched:
            return None
        for fault in matched:
            if fault.fires():
                return self._act(fault, host, header, frame, offset, origin)
        return None

    def _match(self, state: _State, key: tuple[Any, ...], frame: bytes, offset: int) -> tuple[Fault, ...]:
        """The faults a request matches, kept by its header (and its body, when faults look into bodies
        and it is small: a big one is read each time)."""
        api_key, version, broker, client_id = key[:4]
        found = tuple(f for f in state.faults if f.spec.matches_header(api_key, version, broker, client_id))
        if any(f.spec.needs_body for f in found):
            names = self._read_names(api_key, version, frame, offset)
            found = tuple(f for f in found if not f.spec.needs_body or names.match(f.spec))
            if len(key) == 4:
                return found
        matched = state.matched
        if len(matched) >= _CACHED_REQUESTS:
            matched.clear()
        matched[key] = found
        return found

    def _read_names(self, api_key: int, version: int, frame: bytes, offset: int) -> _Names:
        names = _Names()
        if not self._schemas.has_request(api_key):
            return names
        message = self._schemas.request(api_key)
        try:
            request, _ = message.decode_from(frame, offset, version)
        except (DecodeError, ValueError):
            return names  # the usual path closes the connection for it
        names.collect(message.spec.fields, request)
        return names

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
                frame, offset, header, spec.error, f"injected by fault #{fault.id}: {spec}"
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


class _Names:
    """The topics, partitions and groups a request names (read through its spec's entity types)."""

    __slots__ = ("groups", "partitions", "topics")

    def __init__(self) -> None:
        self.topics: set[str] = set()
        self.partitions: set[int] = set()
        self.groups: set[str] = set()

    def match(self, spec: FaultSpec) -> bool:
        return (
            (spec.topic is None or spec.topic in self.topics)
            and (spec.partition == -1 or spec.partition in self.partitions)
            and (spec.group is None or spec.group in self.groups)
        )

    def collect(self, fields: tuple[FieldSpec, ...], data: Mapping[str, Any]) -> None:
        for field in fields:
            value = data.get(field.name)
            if value is None:
                continue
            if field.fields:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, Mapping):
                        self.collect(field.fields, item)
            elif field.entity_type == "topicName":
                self.topics.update(value if isinstance(value, list) else [value])
            elif field.entity_type == "groupId":
                self.groups.update(value if isinstance(value, list) else [value])
            elif field.name in _PARTITION_FIELDS:
                self.partitions.update(value if isinstance(value, list) else [value])


def _as_is(answer: bytes | Closing) -> bytes | Closing:
    return answer


async def _forever() -> None:
    await asyncio.get_running_loop().create_future()


def _never(_: object) -> Answer:  # pragma: no cover - a dropped request is never answered
    raise Close("fault", "a dropped request was answered")


def _raise(exc: Exception) -> Answer:
    raise exc
