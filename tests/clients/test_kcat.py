"""``kcat -L`` (librdkafka's command-line client) lists the simulator's brokers, topics and partitions."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest

from controller.embedded import ServerThread
from protocol.client import KafkaClient

CLIENT = "kcat"


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    assert path is not None, "kcat is not installed: `make system-deps` installs the Debian package"
    return path


@pytest.fixture(scope="module")
def topics(cluster: ServerThread) -> dict[str, list[list[int]]]:
    """Two topics, created over the wire; topic -> replicas per partition as the server placed them."""

    async def create() -> None:
        async with await KafkaClient.connect(cluster.bootstrap) as client:
            request = {
                "Topics": [
                    {
                        "Name": "kc-orders",
                        "NumPartitions": 3,
                        "ReplicationFactor": 3,
                        "Assignments": [],
                        "Configs": [],
                    },
                    {
                        "Name": "kc-events",
                        "NumPartitions": 2,
                        "ReplicationFactor": 1,
                        "Assignments": [],
                        "Configs": [],
                    },
                ],
                "timeoutMs": 5000,
            }
            response = await client.send("CreateTopicsRequest", request)
            assert [t["ErrorCode"] for t in response["Topics"]] == [0, 0]

    asyncio.run(create())
    found = cluster.call(lambda: dict(cluster.server.controller.cluster.topics))
    return {name: [p.replicas for p in found[name].partitions] for name in ("kc-orders", "kc-events")}


def run_kcat(kcat: str, bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        [kcat, "-L", "-b", bootstrap, "-m", "10", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_lists_brokers_topics_and_partitions(kcat: str, cluster: ServerThread, topics):
    listing = json.loads(run_kcat(kcat, cluster.bootstrap, "-J"))
    assert {b["id"]: b["name"] for b in listing["brokers"]} == cluster.brokers
    assert listing["controllerid"] == 0
    listed = {t["topic"]: t for t in listing["topics"]}
    for name, replicas in topics.items():
        partitions = sorted(listed[name]["partitions"], key=lambda p: p["partition"])
        assert [
            (p["leader"], [r["id"] for r in p["replicas"]], [r["id"] for r in p["isrs"]]) for p in partitions
        ] == [(rs[0], rs, rs) for rs in replicas]


def test_plain_listing_from_any_broker(kcat: str, cluster: ServerThread, topics):
    for address in (cluster.brokers[3], cluster.bootstrap):
        text = run_kcat(kcat, address)
        assert " 6 brokers:" in text
        for broker_id, broker_address in cluster.brokers.items():
            assert f"broker {broker_id} at {broker_address}" in text
        assert 'topic "kc-orders" with 3 partitions:' in text
        replicas = ",".join(map(str, topics["kc-orders"][0]))
        assert (
            f"partition 0, leader {topics['kc-orders'][0][0]}, replicas: {replicas}, isrs: {replicas}" in text
        )


def test_every_request_decoded_cleanly(cluster, wire_log):
    """Runs last: everything kcat sent decoded without unknown tagged fields."""
    wire_log.assert_clean(cluster)
