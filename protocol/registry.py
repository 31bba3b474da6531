"""A set of message specs (a folder of spec files) and its lookups by name and API key."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from protocol._spec_index import SPECS
from protocol.codec import Message
from protocol.errors import ERRORS_FILE
from protocol.exceptions import SpecError
from protocol.resources import project_schemas
from protocol.spec import SpecHeader, Versions, parse_spec

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

log = logging.getLogger(__name__)


class UnknownMessage(LookupError):
    """No spec with that name or API key in this set."""


class Schemas:
    """Messages loaded from one folder: look them up by name, or requests/responses by API key.

    An API key is one request and one response, but for a key that the project took for an API of its own
    before Kafka gave it to another (apiKey 68: CreateReplicaPlacement here, ConsumerGroupHeartbeat in
    Kafka): the spec of Kafka's API names its key space (``"keySpace": "kafka"``) and is looked up with it
    (``request(68, "kafka")``); without a key space, a lookup gives the project's own. Both are framed
    alike: where their versions overlap they must agree on which are flexible, so that a request header
    reads the same whichever a connection speaks (:func:`protocol.framing.parse_request_header`).
    """

    def __init__(self, messages: Iterable[Message]) -> None:
        self._by_name: dict[str, Message] = {}
        self._requests: dict[int, Message] = {}
        self._responses: dict[int, Message] = {}
        #: Key space -> the requests and responses of its API keys.
        self._spaces: dict[str, tuple[dict[int, Message], dict[int, Message]]] = {}
        for message in messages:
            source = message.source
            if message.name in self._by_name:
                raise SpecError(
                    source,
                    f"message {message.name} is also defined in {self._by_name[message.name].source}",
                )
            self._by_name[message.name] = message
            space = message.key_space
            if space is None:
                requests, responses = self._requests, self._responses
            else:
                requests, responses = self._spaces.setdefault(space, ({}, {}))
            index = {"request": requests, "response": responses}.get(message.type)
            if index is not None and message.api_key is not None:
                if message.api_key in index:
                    other = index[message.api_key]
                    raise SpecError(
                        source, f"apiKey {message.api_key} is already the {message.type} {other.name}"
                    )
                index[message.api_key] = message
        for space, (requests, responses) in self._spaces.items():
            for api_key, message in [*requests.items(), *responses.items()]:
                own = (self._requests if message.type == "request" else self._responses).get(api_key)
                if own is None:
                    raise SpecError(
                        message.source,
                        f"keySpace {space}: apiKey {api_key} has no {message.type} of the project's own",
                    )

    @classmethod
    def from_files(cls, files: Iterable[Traversable | Path], *, deferred: bool = False) -> Schemas:
        """Parse spec files (``errors.json`` is not a message spec and is skipped).

        ``deferred`` reads only each file's top level now and the rest of a spec when its message is
        first used: for a set already known to be valid (the project's own, checked by its tests), it
        spares a process the parsing of specs it never uses.
        """
        messages = []
        for entry in sorted(files, key=lambda f: f.name):
            if not entry.name.endswith(".json") or entry.name == ERRORS_FILE:
                continue
            try:
                text = entry.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SpecError(str(entry), f"cannot read the file: {exc}") from exc
            source = str(entry)
            messages.append(Message(SpecHeader.read(text, source) if deferred else parse_spec(text, source)))
        log.debug("loaded %d message specs", len(messages))
        return cls(messages)

    def message(self, name: str) -> Message:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownMessage(f"no message named {name!r}") from None

    def request(self, api_key: int, key_space: str | None = None) -> Message:
        """The request of ``api_key`` (in ``key_space`` where it has one there, else the project's own)."""
        if key_space is not None:
            found = self._spaces.get(key_space, ({}, {}))[0].get(api_key)
            if found is not None:
                return found
        try:
            return self._requests[api_key]
        except KeyError:
            raise UnknownMessage(f"no request with apiKey {api_key}") from None

    def response(self, api_key: int, key_space: str | None = None) -> Message:
        """The response of ``api_key`` (in ``key_space`` where it has one there, else the project's own)."""
        if key_space is not None:
            found = self._spaces.get(key_space, ({}, {}))[1].get(api_key)
            if found is not None:
                return found
        try:
            return self._responses[api_key]
        except KeyError:
            raise UnknownMessage(f"no response with apiKey {api_key}") from None

    def requests_of(self, api_key: int) -> list[Message]:
        """Every request of ``api_key``: the project's own first, then those of the key spaces."""
        found = [self._requests[api_key]] if api_key in self._requests else []
        found += [spaces[0][api_key] for spaces in self._spaces.values() if api_key in spaces[0]]
        return found

    def key_spaces(self) -> tuple[str, ...]:
        """The key spaces some spec of this set names."""
        return tuple(sorted(self._spaces))

    def has_request(self, api_key: int) -> bool:
        return api_key in self._requests

    def has_response(self, api_key: int) -> bool:
        return api_key in self._responses

    def requests(self) -> list[Message]:
        """Every request, by API key (what an ApiVersions response advertises)."""
        return [self._requests[key] for key in sorted(self._requests)]

    def compile_all(self) -> None:
        """Compile every version of every message now rather than on first use."""
        for message in self:
            message.compile_all()

    def __iter__(self) -> Iterator[Message]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __repr__(self) -> str:
        return f"<Schemas {len(self)} messages>"


def load_schemas(path: str | os.PathLike[str] | None = None) -> Schemas:
    """The specs in folder ``path``, or the project's own ``schemas/`` when ``path`` is None.

    The project's set is loaded once and shared (its compiled codecs with it); a folder is read anew
    on every call.
    """
    if path is None:
        return _project_set()
    folder = Path(path)
    if not folder.is_dir():
        raise SpecError(str(folder), "not a folder of spec files")
    return Schemas.from_files(folder.glob("*.json"))


@functools.cache
def _project_set() -> Schemas:
    """The project's specs, known from the index :mod:`protocol._spec_index` without reading a file: each
    file is read when its message is first used. A file the index does not name (a spec added since the
    index was made: ``python -m protocol.codegen`` remakes it, and a test checks it) is read for its
    header now."""
    root = project_schemas()
    indexed = {row[0]: row for row in SPECS}
    messages = []
    others = []
    for entry in root.iterdir():
        row = indexed.get(entry.name)
        if row is None:
            others.append(entry)
            continue
        _file, name, kind, api_key, low, high, key_space, flexible_low, flexible_high = row
        messages.append(
            Message(
                SpecHeader(
                    name,
                    kind,
                    api_key,
                    Versions(low, high),
                    str(entry),
                    None,
                    functools.partial(entry.read_text, encoding="utf-8"),
                    key_space,
                    Versions(flexible_low, flexible_high),
                )
            )
        )
    if others:
        messages.extend(Schemas.from_files(others, deferred=True))
    return Schemas(sorted(messages, key=lambda m: m.source))
