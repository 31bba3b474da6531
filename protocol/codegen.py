"""Writes :mod:`protocol.codes` (the ``ApiKey`` and ``ErrorCode`` enums) and :mod:`protocol._spec_index`
(every spec file's name, message, type, API key and versions) from the project's ``schemas/``.

``python -m protocol.codegen`` rewrites both; ``python -m protocol.codegen --check`` exits 1 when either is
not what the schemas give (the test suite checks the same). The enums are code, not tables read at start:
every layer names errors and API keys through them, a misspelt name is an ``AttributeError`` where it is
written, and the server imports no JSON to know them. The index lets a process know the project's messages
without reading their files: a spec file is read when its message is first encoded or decoded.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from protocol.errors import ERRORS_FILE, parse_error_table
from protocol.resources import project_schemas
from protocol.spec import parse_spec

__all__ = ["CODES_FILE", "INDEX_FILE", "api_key_name", "generate", "generate_index"]

CODES_FILE = Path(__file__).with_name("codes.py")
INDEX_FILE = Path(__file__).with_name("_spec_index.py")

_INDEX_HEADER = '''"""The project's spec files: generated from ``schemas/`` by ``python -m protocol.codegen``.

Do not edit: change the spec files and run the generator again. One row per spec file: (file name, message
name, type, API key or None, lowest and highest valid version, key space or None, lowest and highest
flexible version).
"""

SPECS: tuple[tuple[str, str, str, int | None, int, int, str | None, int, int], ...] = (
'''

_HEADER = '''"""API keys and error codes as enums: generated from ``schemas/`` by ``python -m protocol.codegen``.

Do not edit: change the spec files or ``schemas/errors.json`` and run the generator again.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ApiKey", "ErrorCode"]
'''


def api_key_name(message_name: str) -> str:
    """``CreateReplicaPlacementRequest`` -> ``CREATE_REPLICA_PLACEMENT`` (Kafka's ``ApiKeys`` names)."""
    stem = message_name.removesuffix("Request")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).upper()


def generate() -> str:
    """The text of ``protocol/codes.py`` for the schemas as they are."""
    root = project_schemas()
    keys: dict[int, str] = {}
    #: API keys that are two APIs (protocol.registry.Schemas): Kafka's name of each, an alias of ours.
    aliases: list[tuple[int, str, str]] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith("Request.json"):
            continue
        spec = parse_spec(entry.read_text(encoding="utf-8"), str(entry))
        if spec.api_key is None:
            continue
        if spec.key_space is None:
            keys[spec.api_key] = api_key_name(spec.name)
        else:
            aliases.append((spec.api_key, api_key_name(spec.name), spec.key_space))
    errors_entry = root.joinpath(ERRORS_FILE)
    table = parse_error_table(errors_entry.read_text(encoding="utf-8"), str(errors_entry))
    errors = sorted(table.by_code.values(), key=lambda e: e.code)
    out = [_HEADER, "", "class ApiKey(IntEnum):", '    """The API keys the project has a spec for."""', ""]
    out += [f"    {name} = {key}" for key, name in sorted(keys.items())]
    if aliases:
        out += ["", "    # The same keys in another key space (an alias of the project's API of that key):"]
        out += [f"    {name} = {key}  # key space {space!r}" for key, name, space in sorted(aliases)]
    out += [
        "",
        "",
        "class ErrorCode(IntEnum):",
        '    """Kafka\'s error codes and the simulator\'s own (from 1000 up), with whether a client may retry',
        '    and the default message."""',
        "",
    ]
    out += [f"    {e.name} = {e.code}" for e in errors]
    out += [
        "",
        "    @property",
        "    def retriable(self) -> bool:",
        "        return self in _RETRIABLE",
        "",
        "    @property",
        "    def message(self) -> str:",
        "        return _MESSAGES[self]",
        "",
        "",
        "_RETRIABLE = frozenset(",
        "    {",
    ]
    out += [f"        ErrorCode.{e.name}," for e in errors if e.retriable]
    out += ["    }", ")", "", "_MESSAGES: dict[ErrorCode, str] = {"]
    out += [f"    ErrorCode.{e.name}: {json.dumps(e.message, ensure_ascii=False)}," for e in errors]
    out += ["}", ""]
    return "\n".join(out)


def generate_index() -> str:
    """The text of ``protocol/_spec_index.py`` for the schemas as they are."""
    lines = [_INDEX_HEADER.rstrip("\n")]
    root = project_schemas()
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json") or entry.name == ERRORS_FILE:
            continue
        spec = parse_spec(entry.read_text(encoding="utf-8"), str(entry))
        low, high = spec.valid_versions.lowest, spec.valid_versions.highest
        space = "None" if spec.key_space is None else f'"{spec.key_space}"'
        names = [f'"{entry.name}"', f'"{spec.name}"', f'"{spec.type}"']
        flexible = spec.flexible_versions
        items = [*names, str(spec.api_key), str(low), str(high), space]
        items += [str(flexible.lowest), str(flexible.highest)]
        line = f"    ({', '.join(items)}),"
        if len(line) > 110:  # as the formatter lays out a row too long for a line
            line = "    (\n" + "".join(f"        {item},\n" for item in items) + "    ),"
        lines.append(line)
    lines.append(")")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.codegen", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is out of date")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in ((CODES_FILE, generate()), (INDEX_FILE, generate_index())):
        if args.check:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                print(f"{path} is out of date: run python -m protocol.codegen", file=sys.stderr)
                stale = 1
        else:
            path.write_text(text, encoding="utf-8")
    return stale


if __name__ == "__main__":
    sys.exit(main())
