"""The reference cluster's own controls: its command line starts one and prints its bootstrap, start time
and memory; a paused node answers nothing until resumed; a killed node comes back on its address."""

from __future__ import annotations

import subprocess
import sys

from harness.jvm import ROOT
from harness.kafka_cluster import DEFAULT_FEATURES, KafkaCluster


def test_the_command_line_starts_a_cluster_and_prints_its_bootstrap() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.kafka_cluster", "--exit"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("bootstrap: 127.0.0.1:")
    assert any("Apache Kafka 4.4.0 'single' (1 JVMs)" in line and "RSS" in line for line in lines), lines


def test_a_paused_node_answers_nothing_until_resumed(kafka_single: KafkaCluster) -> None:
    node = kafka_single.node(0)
    assert kafka_single.metadata_brokers(node) == {0}
    kafka_single.pause(0)
    try:
        try:
            kafka_single.metadata_brokers(node, timeout=1.0)
            answered = True
        except TimeoutError:
            answered = False
        assert not answered
    finally:
        kafka_single.resume(0)
    kafka_single.wait_ready(60)
    assert kafka_single.metadata_brokers(node) == {0}
    assert kafka_single.memory()[0] > 50 * 2**20


def test_the_reference_is_formatted_with_eligible_leader_replicas_off(kafka_single: KafkaCluster) -> None:
    """As the simulator's default (simulator.eligible.leader.replicas.version=0): Kafka 3.x's ISR rules on
    both sides. A finalized level 0 is not listed (formatted with level 1, the list holds it at 1, as a new
    Kafka 4.4 cluster's does)."""
    from protocol.client import BlockingClient

    assert kafka_single.features == DEFAULT_FEATURES == {"eligible.leader.replicas.version": "0"}
    with BlockingClient.connect(kafka_single.bootstrap, request_timeout=30) as client:
        answer = client.send(
            "ApiVersionsRequest",
            {"ClientSoftwareName": "placement-sim-tests", "ClientSoftwareVersion": "1"},
            version=3,
        )
    finalized = {f["Name"]: f["MaxVersionLevel"] for f in answer["FinalizedFeatures"]}
    assert finalized.get("eligible.leader.replicas.version", 0) == 0
    assert finalized["transaction.version"] == 2
