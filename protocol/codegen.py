"""Writes :mod:`protocol.codes` (the ``ApiKey`` and ``ErrorCode`` enums) from the project's ``schemas/``.

``python -m protocol.codegen`` rewrites ``protocol/codes.py``; ``python -m protocol.codegen --check``
exits 1 when the file is not what the schemas give (the test suite checks the same). The enums are
code, not tables read at start: every layer names errors and API keys through them, a misspelt name is
an ``AttributeError`` where it is written, and the server imports no JSON to know them.
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

__all__ = ["CODES_FILE", "api_key_name", "generate"]

CODES_FILE = Path(__file__).with_name("codes.py")

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.codegen", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if protocol/codes.py is out of date")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = CODES_FILE.read_text(encoding="utf-8") if CODES_FILE.exists() else ""
        if current != text:
            print(f"{CODES_FILE} is out of date: run python -m protocol.codegen", file=sys.stderr)
            return 1
        return 0
    CODES_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
