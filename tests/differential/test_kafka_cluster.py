"""The reference cluster's own controls: its command line starts one and prints its bootstrap, start time
and memory; a paused node answers nothing until resumed; a killed node comes back on its address."""

from __future__ import annotations

import subprocess
import sys

from harness.jvm import ROOT
from harness.kafka_cluster import KafkaCluster


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
