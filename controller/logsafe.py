"""Client-supplied text in log lines: escaped and shortened, so that a client cannot forge log lines or
flood the log (topic names, client ids, peers and messages a client can influence go through here)."""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]

#: How many characters of a client-supplied value a log line shows.
LIMIT = 200


def shown(value: Any, limit: int = LIMIT) -> str:
    """``value`` as text safe for one log line: control characters (newlines included) escaped as
    ``\\xNN``/``\\uNNNN``, and cut after ``limit`` characters with the original length said."""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] if c != "'" else c for c in text)
    return f"{text}... ({len(value) if isinstance(value, str) else 'more'} characters)" if cut else text
