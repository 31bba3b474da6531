"""The wire layer: Kafka-format spec files, construct codecs compiled from them, framing and errors.

>>> from protocol import load_schemas
>>> schemas = load_schemas()
>>> request = schemas.request(68)
>>> body = request.encode({"NumPartitions": 3, "ReplicationFactor": 2}, 0)
>>> request.decode(body, 0)["timeoutMs"]
60000

It knows nothing about placement.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from protocol.bytecode import keep_dataclass_code

keep_dataclass_code()  # before any class of the project is made (controller imports this package first)

if TYPE_CHECKING:
    from protocol.codec import DecodeCaps, Message, UnsupportedVersion, VersionCodec
    from protocol.exceptions import CapsError, DecodeError, EncodeError, ProtocolError, SpecError
    from protocol.registry import Schemas, UnknownMessage, load_schemas
    from protocol.wire import UNKNOWN_TAGGED_FIELDS, UNKNOWN_TAGS_FOUND, ZERO_UUID, Capped

#: Where each name of the package lives: imported when first asked for, so that a module that needs only
#: the enums of :mod:`protocol.codes` (the command line's ``--help``) does not load the codecs.
_HOMES = {
    "DecodeCaps": "protocol.codec",
    "Message": "protocol.codec",
    "UnsupportedVersion": "protocol.codec",
    "VersionCodec": "protocol.codec",
    "CapsError": "protocol.exceptions",
    "DecodeError": "protocol.exceptions",
    "EncodeError": "protocol.exceptions",
    "ProtocolError": "protocol.exceptions",
    "SpecError": "protocol.exceptions",
    "Schemas": "protocol.registry",
    "UnknownMessage": "protocol.registry",
    "load_schemas": "protocol.registry",
    "UNKNOWN_TAGGED_FIELDS": "protocol.wire",
    "UNKNOWN_TAGS_FOUND": "protocol.wire",
    "ZERO_UUID": "protocol.wire",
    "Capped": "protocol.wire",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "UNKNOWN_TAGGED_FIELDS",
    "UNKNOWN_TAGS_FOUND",
    "ZERO_UUID",
    "CapsError",
    "Capped",
    "DecodeCaps",
    "DecodeError",
    "EncodeError",
    "Message",
    "ProtocolError",
    "Schemas",
    "SpecError",
    "UnknownMessage",
    "UnsupportedVersion",
    "VersionCodec",
    "load_schemas",
]
