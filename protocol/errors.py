"""Kafka error codes: the :class:`ErrorCode` enum (generated from ``schemas/errors.json`` into
:mod:`protocol.codes`), the one type every layer refuses with (:class:`Refusal`), and the table's
loader, which the generator and the tests read."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from protocol.codes import ErrorCode
from protocol.exceptions import SpecError
from protocol.resources import project_schemas
from protocol.spec import strip_comments

log = logging.getLogger(__name__)

ERRORS_FILE = "errors.json"


@dataclass(frozen=True)
class KafkaError:
    """One error code: Kafka's number and name, whether a client may retry, and the default message."""

    code: int
    name: str
    retriable: bool
    message: str


class Refusal(Exception):
    """A request, or one item of it, refused with a Kafka error: the code and the message the client is
    told (None: the client gets no message, and logs show the code's default one)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message if message is not None else code.message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"Refusal({self.code.name}, {self.message!r})"


class UnknownErrorName(LookupError):
    """No error with that name in the table."""


@dataclass(frozen=True)
class _Table:
    by_code: dict[int, KafkaError]
    by_name: dict[str, KafkaError]


def error_by_code(code: int) -> KafkaError:
    """The error with this code (what a client makes of a code it reads). A code the table does not know
    (a newer Kafka's, say) gives a non-retriable ``UNKNOWN_ERROR_<code>`` entry that keeps the code,
    rather than an exception."""
    try:
        known = ErrorCode(code)
    except ValueError:
        log.debug("error code %d is not in %s", code, ERRORS_FILE)
        return KafkaError(code, f"UNKNOWN_ERROR_{code}", False, f"Unknown error code {code}.")
    return KafkaError(known.value, known.name, known.retriable, known.message)


def error_by_name(name: str) -> KafkaError:
    """The error with this name, e.g. ``error_by_name("INVALID_PARTITIONS").code == 37`` (for tests and
    tools: the project's code names errors as ``ErrorCode`` members)."""
    try:
        known = ErrorCode[name]
    except KeyError:
        raise UnknownErrorName(f"no error named {name!r} in {ERRORS_FILE}") from None
    return KafkaError(known.value, known.name, known.retriable, known.message)


def all_errors() -> list[KafkaError]:
    """Every error in the table, by code."""
    return sorted(_table().by_code.values(), key=lambda e: e.code)


@functools.cache
def _table() -> _Table:
    entry = project_schemas().joinpath(ERRORS_FILE)
    return parse_error_table(entry.read_text(encoding="utf-8"), str(entry))


def parse_error_table(text: str, source: str) -> _Table:
    """Parse and check an error table: codes are int16 and unique, names unique, all keys typed."""
    import json  # the table is read when first needed (a message of an error code), not at import

    try:
        document = json.loads(strip_comments(text))
    except json.JSONDecodeError as exc:
        raise SpecError(source, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    entries = document.get("errors") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise SpecError(source, 'expected an object with an "errors" list')
    by_code: dict[int, KafkaError] = {}
    by_name: dict[str, KafkaError] = {}
    for index, entry in enumerate(entries):
        where = f"errors[{index}]"
        if not isinstance(entry, dict) or set(entry) != {"code", "name", "retriable", "message"}:
            raise SpecError(source, "needs exactly the keys code, name, retriable and message", where)
        code, name, retriable, message = entry["code"], entry["name"], entry["retriable"], entry["message"]
        if type(code) is not int or not -(2**15) <= code < 2**15:
            raise SpecError(source, f"code must be an int16, not {code!r}", where)
        if not isinstance(name, str) or not name.isupper() or not name.replace("_", "").isalnum():
            raise SpecError(source, f"name must be UPPER_SNAKE_CASE, not {name!r}", where)
        if not isinstance(retriable, bool) or not isinstance(message, str):
            raise SpecError(source, "retriable must be true/false and message a string", where)
        if code in by_code or name in by_name:
            raise SpecError(source, f"{name} ({code}) repeats a code or a name", where)
        by_code[code] = by_name[name] = KafkaError(code, name, retriable, message)
    return _Table(by_code, by_name)
