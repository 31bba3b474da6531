"""Size-prefixed frames and the request/response headers, by Kafka's rules.

A frame is an int32 size followed by that many bytes: a header, then the body. Request headers are
version 2 when the request's version is flexible, version 1 otherwise (version 0 only for
ControlledShutdown v0); the header still parses when the API key or version is unknown, because
ClientId always keeps its int16 length. Response headers are version 1 when the response's version
is flexible, version 0 otherwise, and always version 0 for ApiVersions.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from protocol.codes import ApiKey
from protocol.exceptions import DecodeError
from protocol.registry import Schemas
from protocol.wire import read_unknown_tags

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAME: Final = 104857600
"""Kafka's default ``socket.request.max.bytes``."""

#: ControlledShutdown v0 (a ZooKeeper-era broker API, without a spec here) has a v0 request header.
CONTROLLED_SHUTDOWN: Final = 7
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_KEY_VERSION_CORRELATION_LENGTH = struct.Struct(">hhih")
_INT16 = struct.Struct(">h")
_SIZE_AND_CORRELATION = struct.Struct(">ii")


class FrameError(Exception):
    """A frame size prefix that is not positive or is above the maximum; the body is not read."""

    def __init__(self, size: int, max_size: int) -> None:
        self.size, self.max_size = size, max_size
        super().__init__(f"invalid frame size {size} (must be between 1 and {max_size})")


async def read_frame(reader: asyncio.StreamReader, max_size: int = DEFAULT_MAX_FRAME) -> bytes | None:
    """The next frame's content (without its size prefix), or None on a clean end of stream.

    Raises FrameError for a bad size before reading the body, and ``asyncio.IncompleteReadError``
    when the stream ends inside a frame.
    """
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    (size,) = _SIZE.unpack(prefix)
    if size <= 0 or size > max_size:
        raise FrameError(size, max_size)
    return await reader.readexactly(size)


@dataclass(slots=True)
class RequestHeader:
    """A parsed request header. ``tagged_fields`` holds the header's tagged fields (tag -> raw bytes)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    tagged_fields: dict[int, bytes] = field(default_factory=dict)


def request_header_version(schemas: Schemas, api_key: int, api_version: int) -> int:
    """The request header version for this API and version (1 when either is unknown)."""
    return _header_versions(schemas, api_key, api_version)[0]


def response_header_version(schemas: Schemas, api_key: int, api_version: int) -> int:
    """The response header version for this API and version (ApiVersions: always 0)."""
    return _header_versions(schemas, api_key, api_version)[1]


@functools.lru_cache(maxsize=4096)
def _header_versions(schemas: Schemas, api_key: int, api_version: int) -> tuple[int, int]:
    """Kafka's rule for both headers of one API version, worked out once (every request asks)."""
    # The request of that version: the project's own, or (an API key that is two APIs, one in Kafka's key
    # space: protocol.registry.Schemas) the other's where only it has the version; both agree where both do.
    request = next((m for m in schemas.requests_of(api_key) if m.supports(api_version)), None)
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        request_version = 0
    elif request is None:
        request_version = 1
    else:
        request_version = 2 if request.is_flexible(api_version) else 1
    if api_key == ApiKey.API_VERSIONS:
        return request_version, 0
    if request is not None and schemas.has_response(api_key):
        message = schemas.response(api_key, request.key_space)
    elif schemas.has_response(api_key):
        message = schemas.response(api_key)
    elif schemas.has_request(api_key):
        message = schemas.request(api_key)
    else:
        return request_version, 0
    return request_version, 1 if message.supports(api_version) and message.is_flexible(api_version) else 0


def parse_request_header(
    frame: bytes | bytearray | memoryview, schemas: Schemas
) -> tuple[RequestHeader, int]:
    """Parse the header at the start of a frame; returns it and the offset where the body starts.

    The layout is the RequestHeader spec's (``schemas/RequestHeader.json``), read here without the
    generic decoder: every request goes through this."""
    size = len(frame)
    if size >= 10:  # the usual header: the ClientId's length read with the rest
        api_key, api_version, correlation_id, length = _KEY_VERSION_CORRELATION_LENGTH.unpack_from(frame, 0)
    elif size >= 8:
        api_key, api_version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(frame, 0)
        length = None
    else:
        raise DecodeError(f"{size} bytes is too short for a request header", message="RequestHeader")
    version = _header_versions(schemas, api_key, api_version)[0]
    if version == 0:
        return RequestHeader(api_key, api_version, correlation_id, None, 0), 8
    if length is None:
        raise DecodeError(
            "the ClientId length is cut off", message="RequestHeader", version=version, offset=8
        )
    end = 10
    client_id: str | None = None
    if length >= 0:
        end += length
        if end > size:
            raise DecodeError(
                f"ClientId of {length} bytes overruns the frame",
                message="RequestHeader",
                version=version,
                offset=8,
            )
        try:
            raw = frame[10:end]
            client_id = (raw if raw.__class__ is bytes else bytes(raw)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(
                f"ClientId is not UTF-8 ({exc.reason})", message="RequestHeader", version=version, offset=10
            ) from None
    elif length != -1:
        raise DecodeError(f"ClientId length {length}", message="RequestHeader", version=version, offset=8)
    if version == 1:
        return RequestHeader(api_key, api_version, correlation_id, client_id, 1), end
    if end < size and frame[end] == 0:  # no tagged fields: the common case
        return RequestHeader(api_key, api_version, correlation_id, client_id, 2), end + 1
    try:
        tags, end = read_unknown_tags(frame, end, size)
    except (IndexError, ValueError) as exc:
        raise DecodeError(
            f"bad tag section ({exc})", message="RequestHeader", version=2, offset=end
        ) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id, 2, dict(tags or {})), end


def encode_request(
    schemas: Schemas, api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: bytes
) -> bytes:
    """A whole request frame: size prefix, header (version by Kafka's rule), body."""
    version = request_header_version(schemas, api_key, api_version)
    header: dict[str, Any] = {
        "RequestApiKey": api_key,
        "RequestApiVersion": api_version,
        "CorrelationId": correlation_id,
    }
    if version >= 1:
        header["ClientId"] = client_id
    out = bytearray(4)
    schemas.message("RequestHeader").encode_into(header, version, out)
    out += body
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response(correlation_id: int, header_version: int, body: bytes) -> bytes:
    """A whole response frame: size prefix, header v0 (correlation id) or v1 (plus an empty tag section), body."""
    if header_version not in (0, 1):
        raise ValueError(f"response header version must be 0 or 1, not {header_version}")
    header_size = 4 + header_version
    prefix = _SIZE_AND_CORRELATION.pack(header_size + len(body), correlation_id)
    return prefix + (b"\x00" if header_version else b"") + body


class FramePieces:
    """A response frame as its pieces, in order (the size prefix and header, then the body's pieces: a Fetch
    answer's records are the logs' own bytes). Nothing is joined: the connection hands the pieces to the
    transport, which writes them as they are (a vectored write), so the records are not copied on their
    way to the socket. ``len()`` is the frame's size in bytes; ``bytes()`` joins it (for tests)."""

    __slots__ = ("pieces", "size")

    def __init__(self, pieces: list[bytes | memoryview], size: int) -> None:
        self.pieces = pieces
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.pieces)


def encode_response_pieces(
    correlation_id: int, header_version: int, pieces: Sequence[bytes | memoryview]
) -> FramePieces:
    """:func:`encode_response` for a body in pieces (a Fetch answer's records are the logs' own bytes):
    the frame's prefix and header before the body's pieces, none of them copied."""
    if header_version not in (0, 1):
        raise ValueError(f"response header version must be 0 or 1, not {header_version}")
    size = 4 + header_version + sum(len(piece) for piece in pieces)
    prefix = _SIZE_AND_CORRELATION.pack(size, correlation_id) + (b"\x00" if header_version else b"")
    return FramePieces([prefix, *pieces], size + 4)


def encode_response_frame(
    schemas: Schemas, api_key: int, api_version: int, correlation_id: int, data: Mapping[str, Any]
) -> bytearray:
    """Encode a response body straight into its frame (no intermediate copy of the body)."""
    header_version = response_header_version(schemas, api_key, api_version)
    out = bytearray(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    if header_version:
        out.append(0)
    schemas.response(api_key).encode_into(data, api_version, out)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return out


def parse_response_header(frame: bytes | bytearray | memoryview, header_version: int) -> tuple[int, int]:
    """The correlation id of a response frame's content and the offset where the body starts."""
    if len(frame) < 4:
        raise DecodeError(f"{len(frame)} bytes is too short for a response header", message="ResponseHeader")
    (correlation_id,) = _SIZE.unpack_from(frame, 0)
    if header_version == 0:
        return correlation_id, 4
    try:
        _, end = read_unknown_tags(frame, 4, len(frame))
    except (IndexError, ValueError) as exc:
        raise DecodeError(f"bad tag section ({exc})", message="ResponseHeader", version=1, offset=4) from None
    return correlation_id, end
