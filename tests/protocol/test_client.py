"""protocol.client: clear exceptions and version negotiation."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from protocol.client import (
    ConnectError,
    ConnectionClosedError,
    ErrorResponse,
    KafkaClient,
    RequestTimedOutError,
)
from tests.support.rawwire import SCHEMAS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_connection_refused_is_a_connect_error():
    with pytest.raises(ConnectError, match="refused"):
        await KafkaClient.connect(f"127.0.0.1:{free_port()}")


async def _serve(handler) -> tuple[asyncio.base_events.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_server_closing_the_connection_is_reported():
    async def close_at_once(reader, writer):
        await reader.read(4)
        writer.close()

    server, bootstrap = await _serve(close_at_once)
    async with server:
        with pytest.raises(ConnectionClosedError):
            await KafkaClient.connect(bootstrap)


async def test_no_answer_is_a_timeout():
    async def never_answer(reader, writer):
        await reader.read(1 << 16)
        await asyncio.sleep(5)

    server, bootstrap = await _serve(never_answer)
    async with server:
        with pytest.raises(RequestTimedOutError):
            await KafkaClient.connect(bootstrap, request_timeout=0.3)


async def test_negotiation_falls_back_to_the_servers_newest_api_versions():
    seen_versions = []

    async def old_server(reader, writer):
        while True:
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
            except asyncio.IncompleteReadError:
                return
            frame = await reader.readexactly(size)
            api_key, version, correlation = struct.unpack_from(">hhi", frame)
            seen_versions.append(version)
            message = SCHEMAS.response(18)
            if version > 2:
                body = message.encode(
                    {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 2}]}, 0
                )
            else:
                keys = [
                    {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 2},
                    {"ApiKey": 68, "MinVersion": 0, "MaxVersion": 0},
                ]
                body = message.encode({"ErrorCode": 0, "ApiKeys": keys, "ThrottleTimeMs": 0}, version)
            writer.write(struct.pack(">ii", len(body) + 4, correlation) + body)

    server, bootstrap = await _serve(old_server)
    async with server:
        async with await KafkaClient.connect(bootstrap) as client:
            assert client.api_versions == {18: (0, 2), 68: (0, 0)}
    assert seen_versions == [4, 2]


async def test_error_response_carries_code_name_and_message(placement_sim):
    with pytest.raises(ErrorResponse) as info:
        await placement_sim.client.create_replica_placement(2, 9)
    error = info.value
    assert (error.code, error.name) == (38, "INVALID_REPLICATION_FACTOR")
    assert "9" in error.message and "INVALID_REPLICATION_FACTOR (38)" in str(error)


async def test_send_by_name_and_pipelining(placement_sim):
    client = placement_sim.client
    responses = await client.send_many(
        [
            ("CreateReplicaPlacementRequest", {"NumPartitions": n, "ReplicationFactor": 1})
            for n in range(1, 21)
        ]
    )
    assert [len(r["ReplicaPlacement"]) for r in responses] == list(range(1, 21))
