"""Regular expressions of subscriptions (``SubscribedTopicRegex``): RE2 syntax and semantics, as Kafka's
coordinator compiles them with RE2/J (``com.google.re2j.Pattern``), through Google's RE2 library
(``google-re2``). A topic matches when the whole name matches (RE2/J's ``matches``)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import re2

__all__ = ["check", "matching"]

#: RE2's error texts as RE2/J words them (``PatternSyntaxException.getDescription``).
_RE2J_WORDS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "bad repetition operator": "invalid nested repetition operator",
    "missing argument to repetition operator": "missing argument to repetition operator",
    "bad repetition argument": "invalid repeat count",
    "invalid named capture group": "invalid named capture",
    "trailing \\\\": "trailing backslash at end of expression",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would log each bad pattern on stderr


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re2._Regexp:  # type: ignore[name-defined]
    return re2.compile(pattern, _OPTIONS)


def check(pattern: str) -> str | None:
    """Kafka's message (for INVALID_REGULAR_EXPRESSION) when ``pattern`` does not compile, else None."""
    try:
        _compile(pattern)
    except re2.error as exc:
        return f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {_description(exc)}."
    return None


def _description(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    what, _, _ = str(text).partition(":")
    return _RE2J_WORDS.get(what.strip(), what.strip())


def matching(pattern: str, names: Iterable[str]) -> list[str]:
    """The names the whole of which ``pattern`` matches (none when it does not compile)."""
    try:
        compiled = _compile(pattern)
    except re2.error:
        return []
    return [name for name in names if compiled.fullmatch(name) is not None]
