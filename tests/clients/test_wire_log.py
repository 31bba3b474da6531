"""The check the client tests rely on: a request carrying a tagged field our specs do not know is caught."""

from __future__ import annotations

import socket
import struct

import pytest

from controller.embedded import ServerThread
from protocol import load_schemas
from protocol.client import parse_bootstrap
from protocol.framing import encode_request
from tests.clients.conftest import OWN_CLIENT_ID, WireLog

CLIENT = "unknown-tag probe"
SCHEMAS = load_schemas()


def _metadata_with_unknown_tag(correlation_id: int) -> bytes:
    """A Metadata v12 request whose body's tagged-field section holds tag 99 (one zero byte)."""
    body = SCHEMAS.request(3).encode({"Topics": None}, 12)
    assert body.endswith(b"\x00")  # no tagged fields
    body = body[:-1] + bytes([1, 99, 1, 0])  # one field: tag 99, size 1, data 0x00
    return encode_request(SCHEMAS, 3, 12, correlation_id, OWN_CLIENT_ID, body)


def _ask(server: ServerThread, frame: bytes) -> int:
    with socket.create_connection(parse_bootstrap(server.bootstrap), timeout=10) as sock:
        sock.sendall(frame)
        header = b""
        while len(header) < 8:
            chunk = sock.recv(8 - len(header))
            assert chunk, "the server closed the connection"
            header += chunk
    return struct.unpack_from(">i", header, 4)[0]


def test_an_unknown_tagged_field_fails_the_clean_wire_check(cluster: ServerThread, wire_log: WireLog):
    assert _ask(cluster, _metadata_with_unknown_tag(41)) == 41  # answered: the field is ignored
    assert [w for w in wire_log.warnings if "unknown tagged field" in w and "99" in w]
    assert cluster.stats["requests:unknown tagged fields"] == 1
    with pytest.raises(AssertionError):
        wire_log.assert_clean(cluster)
