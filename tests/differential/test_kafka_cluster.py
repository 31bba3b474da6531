"""The reference cluster's own controls: its command line starts one and prints its bootstrap, start time
and memory; a paused node answers nothing until resumed; a killed node comes back on its address."""

from __future__ import annotations

import subprocess
import sys

from harness.differential.machine import SIM_PROPERTIES
from harness.jvm import ROOT
from harness.kafka_cluster import DEFAULT_FEATURES, ELR_DEFAULT_LEVEL, ELR_FEATURE, KafkaCluster, elr_level


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


def test_the_reference_runs_eligible_leader_replicas_as_kafka_44_by_default(
    kafka_single: KafkaCluster,
) -> None:
    """Formatted without feature overrides, the reference runs Kafka 4.4's own levels: eligible leader
    replicas on (level 1, finalized in ApiVersions), as the simulator's default. With
    ``REFERENCE_ELR_VERSION=0`` both sides run at 0 (a finalized level 0 is not listed)."""
    from protocol.client import BlockingClient

    assert kafka_single.features == DEFAULT_FEATURES
    assert DEFAULT_FEATURES == ({} if elr_level() == ELR_DEFAULT_LEVEL else {ELR_FEATURE: elr_level()})
    assert SIM_PROPERTIES["simulator.eligible.leader.replicas.version"] == elr_level()
    with BlockingClient.connect(kafka_single.bootstrap, request_timeout=30) as client:
        answer = client.send(
            "ApiVersionsRequest",
            {"ClientSoftwareName": "placement-sim-tests", "ClientSoftwareVersion": "1"},
            version=3,
        )
    finalized = {f["Name"]: f["MaxVersionLevel"] for f in answer["FinalizedFeatures"]}
    assert finalized.get(ELR_FEATURE, 0) == int(elr_level())
    assert finalized["transaction.version"] == 2
