"""Per-broker listeners: ephemeral by default, ``simulator.broker.port.base + id`` when configured."""

from __future__ import annotations

import asyncio
import socket

import pytest

from controller.embedded import ServerThread
from protocol.client import KafkaClient

BROKERS = [(0, "a"), (1, "b"), (2, "c")]


def free_base(count: int) -> int:
    """A port such that ``count`` consecutive ports from it are free right now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise AssertionError("no run of free ports found")


def test_default_ports_are_ephemeral_and_distinct():
    with ServerThread.start(brokers=BROKERS) as server:
        ports = {int(address.rsplit(":", 1)[1]) for address in server.brokers.values()}
        assert len(ports) == 3 and server.port not in ports


def test_port_base_gives_base_plus_broker_id():
    base = free_base(3)
    with ServerThread.start(brokers=BROKERS, properties={"simulator.broker.port.base": str(base)}) as server:
        assert server.brokers == {i: f"127.0.0.1:{base + i}" for i in range(3)}

        async def brokers_seen_from(address: str) -> list[tuple[int, int]]:
            async with await KafkaClient.connect(address) as client:
                response = await client.send("MetadataRequest", {"Topics": []})
            return [(b["NodeId"], b["Port"]) for b in response["Brokers"]]

        assert asyncio.run(brokers_seen_from(f"127.0.0.1:{base + 1}")) == [(i, base + i) for i in range(3)]


def test_a_taken_broker_port_stops_startup_and_names_the_broker():
    base = free_base(3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 2))
        taken.listen()
        with pytest.raises(OSError, match=rf"cannot listen for broker 2 on 127.0.0.1:{base + 2}"):
            ServerThread.start(brokers=BROKERS, properties={"simulator.broker.port.base": str(base)})


def test_a_port_base_too_high_for_the_broker_ids():
    with pytest.raises(
        OSError, match=r"broker 2: port 65536 \(simulator.broker.port.base 65534 \+ id\) is above 65535"
    ):
        ServerThread.start(brokers=BROKERS, properties={"simulator.broker.port.base": "65534"})


def test_same_seed_same_requests_same_topics():
    async def topics_of(server: ServerThread) -> list[dict]:
        async with await KafkaClient.connect(server.bootstrap) as client:
            request = {
                "Topics": [
                    {
                        "Name": f"seeded-{i}",
                        "NumPartitions": 4,
                        "ReplicationFactor": 2,
                        "Assignments": [],
                        "Configs": [],
                    }
                    for i in range(3)
                ],
                "timeoutMs": 5000,
            }
            await client.send("CreateTopicsRequest", request)
            return (await client.send("MetadataRequest", {"Topics": None}))["Topics"]

    answers = []
    for _ in range(2):
        with ServerThread.start(brokers=BROKERS, seed=11) as server:
            answers.append(asyncio.run(topics_of(server)))
    assert answers[0] == answers[1]
    assert len({t["TopicId"] for t in answers[0]}) == 3


def test_port_step_spaces_the_brokers_ports():
    """kafkajs's test cluster's layout: brokers 0, 1, 2 three ports apart (9092, 9095, 9098)."""
    base = free_base(7)
    properties = {"simulator.broker.port.base": str(base), "simulator.broker.port.step": "3"}
    with ServerThread.start(brokers=BROKERS, properties=properties) as server:
        assert server.brokers == {i: f"127.0.0.1:{base + 3 * i}" for i in range(3)}
    with pytest.raises(
        OSError, match=r"broker 1: port 65537 \(simulator.broker.port.base 65534 \+ 3 \* id\) is above 65535"
    ):
        ServerThread.start(brokers=BROKERS, properties={**properties, "simulator.broker.port.base": "65534"})
