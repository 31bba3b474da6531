"""Raw-socket requests and responses, for tests that must control every byte on the wire."""

from __future__ import annotations

import socket
import struct

from protocol import load_schemas
from protocol.client import parse_bootstrap
from protocol.framing import encode_request

SCHEMAS = load_schemas()


def raw_connect(bootstrap: str, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(parse_bootstrap(bootstrap), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def request_frame(api_key: int, version: int, data: dict, correlation_id: int = 1) -> bytes:
    body = SCHEMAS.request(api_key).encode(data, version)
    return encode_request(SCHEMAS, api_key, version, correlation_id, "raw-test", body)


def read_response(sock: socket.socket) -> bytes | None:
    """One response frame (without its size), or None when the server closed the connection."""
    header = recv_exactly(sock, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">i", header)
    return recv_exactly(sock, size)


def recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None when the server closed the connection first."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            return None
        got += k
    return bytes(buf)


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the connection (EOF or reset) without sending anything."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
