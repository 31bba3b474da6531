"""The wire layer: Kafka-format spec files, construct codecs compiled from them, framing and errors.

>>> from protocol import load_schemas
>>> schemas = load_schemas()
>>> request = schemas.request(68)
>>> body = request.encode({"NumPartitions": 3, "ReplicationFactor": 2}, 0)
>>> request.decode(body, 0)["timeoutMs"]
60000

It knows nothing about placement.
"""

from protocol.codec import DecodeCaps, Message, UnsupportedVersion, VersionCodec
from protocol.exceptions import CapsError, DecodeError, EncodeError, ProtocolError, SpecError
from protocol.registry import Schemas, UnknownMessage, load_schemas
from protocol.wire import UNKNOWN_TAGGED_FIELDS, UNKNOWN_TAGS_FOUND, ZERO_UUID, Capped

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
