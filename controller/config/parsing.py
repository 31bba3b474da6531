"""Properties files: Java's ``key=value`` syntax, read from a file, and ``KEY=VALUE`` from a command line."""

from __future__ import annotations

import re
from pathlib import Path

from controller.plugins.properties import ConfigError

__all__ = ["key_value", "parse_properties", "read_properties"]

_LINE_CONTINUATION = re.compile(r"(?<!\\)(\\\\)*\\$")


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parses Java properties text: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations."""
    props: dict[str, str] = {}
    pending = ""
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if _LINE_CONTINUATION.search(line):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        match = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            if re.fullmatch(r"(?:[^=:\s\\]|\\.)+", line):
                props[_unescape(line)] = ""
                continue
            raise ConfigError(f"{source}:{lineno}: cannot parse line {raw!r} (expected key=value)")
        props[_unescape(match.group(1))] = _unescape(match.group(2).rstrip())
    if pending:
        raise ConfigError(f"{source}: file ends inside a line continuation")
    return props


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), s)


def read_properties(path: str | Path) -> dict[str, str]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not UTF-8 text: {exc}") from exc
    return parse_properties(text, str(path))


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair (command-line ``--set``); ValueError when it is not that."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
