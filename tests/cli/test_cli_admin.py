"""``placement-sim topics ...`` and ``placement-sim cluster describe`` against a running server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    """Brokers 0-2 in racks a-c plus broker 3 (rack a) fenced; the legacy placer with a fixed start."""
    brokers = [(0, "a"), (1, "b"), (2, "c"), (3, "a", True)]
    properties = {"simulator.placer.legacy.fixed.start.index": "0"}
    with ServerThread.start(placer="legacy", brokers=brokers, properties=properties, seed=1) as started:
        yield started


def run(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--bootstrap", server.bootstrap, "--timeout", "10"])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, data: object) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def partition_lines(out: str, topic: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.startswith(f"\tTopic: {topic}\t")]


def test_create_prints_kafkas_describe_layout(capsys, server):
    code, out, err = run(
        capsys, server, "topics", "create", "cli-orders", "--partitions", "3", "--replication-factor", "2"
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Created topic cli-orders."
    assert lines[1].startswith("Topic: cli-orders\tTopicId: ")
    # min.insync.replicas is a cluster-level config with eligible leader replicas on, as Kafka 4.1+ sets it
    assert lines[1].endswith("\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: min.insync.replicas=1")
    placed = cli_replicas(server, "cli-orders")
    assert partition_lines(out, "cli-orders") == [
        f"Topic: cli-orders\tPartition: {i}\tLeader: {rs[0]}\tReplicas: {','.join(map(str, rs))}\t"
        f"Isr: {','.join(str(r) for r in rs if r != 3)}" + ("\tOffline: 3" if 3 in rs else "")
        for i, rs in enumerate(placed)
    ]


def cli_replicas(server: ServerThread, topic: str) -> list[list[int]]:
    return server.call(
        lambda: [p.replicas for p in server.server.controller.cluster.topics[topic].partitions]
    )


def test_validate_only_creates_nothing(capsys, server):
    code, out, _ = run(
        capsys,
        server,
        "topics",
        "create",
        "cli-dry",
        "--partitions",
        "4",
        "--replication-factor",
        "3",
        "--validate-only",
    )
    assert code == 0
    assert (
        out
        == "Topic cli-dry is valid: 4 partition(s), replication factor 3 (validate only: nothing was created).\n"
    )
    code, _, err = run(capsys, server, "topics", "describe", "cli-dry")
    assert code == 1
    assert err == (
        "placement-sim: topic cli-dry: UNKNOWN_TOPIC_OR_PARTITION (3): This server does not host this topic-partition.\n"
    )


def test_replica_assignment_file(capsys, server, tmp_path):
    good = write(tmp_path / "good.json", [{"id": 0, "replicas": [0, 1]}, {"id": 1, "replicas": [3, 2]}])
    code, out, _ = run(capsys, server, "topics", "create", "cli-manual", "--replica-assignment", good)
    assert code == 0
    assert partition_lines(out, "cli-manual") == [
        "Topic: cli-manual\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1",
        "Topic: cli-manual\tPartition: 1\tLeader: 2\tReplicas: 3,2\tIsr: 2\tOffline: 3",
    ]
    gap = write(tmp_path / "gap.json", [{"id": 0, "replicas": [0]}, {"id": 2, "replicas": [1]}])
    code, out, err = run(capsys, server, "topics", "create", "cli-gap", "--replica-assignment", gap)
    assert (code, out) == (1, "")
    assert err == (
        "placement-sim: topic cli-gap: INVALID_REPLICA_ASSIGNMENT (39): partitions should be a consecutive "
        "0-based integer sequence\n"
    )
    unknown = write(tmp_path / "unknown.json", [{"id": 0, "replicas": [0, 8]}])
    _, _, err = run(capsys, server, "topics", "create", "cli-unknown", "--replica-assignment", unknown)
    assert err.endswith(
        "INVALID_REPLICA_ASSIGNMENT (39): The manual partition assignment includes broker 8, but no such broker "
        "is registered.\n"
    )


def test_bad_assignment_files_and_option_mixes_are_usage_errors(capsys, server, tmp_path):
    empty = write(tmp_path / "empty.json", [])
    code, _, err = run(capsys, server, "topics", "create", "cli-x", "--replica-assignment", empty)
    assert (code, err) == (2, f"placement-sim: {empty}: no assigned partitions found\n")
    shape = write(tmp_path / "shape.json", [{"id": 0, "brokers": [1]}])
    code, _, err = run(capsys, server, "topics", "create", "cli-x", "--replica-assignment", shape)
    assert code == 2 and 'entry 0: expected {"id": N, "replicas": [...]}' in err
    code, _, err = run(
        capsys, server, "topics", "create", "cli-x", "--replica-assignment", shape, "--partitions", "2"
    )
    assert (code, err) == (
        2,
        "placement-sim: --replica-assignment cannot be combined with --partitions or --replication-factor\n",
    )


def test_server_errors_are_reported_with_kafkas_wording(capsys, server):
    code, _, err = run(
        capsys, server, "topics", "create", "cli-big", "--partitions", "1", "--replication-factor", "5"
    )
    assert code == 1
    assert err == (
        "placement-sim: topic cli-big: INVALID_REPLICATION_FACTOR (38): Unable to replicate the partition 5 time(s): "
        "Replication factor: 5 larger than available brokers: 3.\n"
    )


def test_describe_all_and_delete(capsys, server):
    run(capsys, server, "topics", "create", "cli-b", "--partitions", "1", "--replication-factor", "1")
    run(capsys, server, "topics", "create", "cli-a", "--partitions", "2", "--replication-factor", "1")
    code, out, _ = run(capsys, server, "topics", "describe")
    headers = [line.split("\t")[0] for line in out.splitlines() if line.startswith("Topic: ")]
    assert code == 0 and headers == sorted(headers) and {"Topic: cli-a", "Topic: cli-b"} <= set(headers)
    assert run(capsys, server, "topics", "delete", "cli-a")[:2] == (0, "Deleted topic cli-a.\n")
    code, _, err = run(capsys, server, "topics", "delete", "cli-a")
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION (3)" in err


def test_cluster_describe(capsys, server):
    code, out, _ = run(capsys, server, "cluster", "describe")
    addresses = server.brokers
    assert code == 0
    assert out.splitlines() == [
        "Cluster ID: placement-sim",
        "Controller: 0",
        "Brokers: 4",
        f"\tBroker: 0\tAddress: {addresses[0]}\tRack: a",
        f"\tBroker: 1\tAddress: {addresses[1]}\tRack: b",
        f"\tBroker: 2\tAddress: {addresses[2]}\tRack: c",
        f"\tBroker: 3\tAddress: {addresses[3]}\tRack: a\tfenced",
    ]


def test_no_server(capsys):
    code = main(["cluster", "describe", "--bootstrap", "127.0.0.1:1", "--timeout", "2"])
    assert code == 1
    assert (
        capsys.readouterr().err
        == "placement-sim: connection to 127.0.0.1:1 refused: is the server running?\n"
    )


def test_kafka_topics_spellings_create_describe_and_delete(capsys, server):
    """kafka-topics.sh's action flags and --topic (Kafka's TopicCommand) do what the action words do."""
    code, out, _ = run(capsys, server, "topics", "--create", "--topic", "cli-kafka", "-p", "2", "-r", "2")
    assert code == 0 and out.startswith("Created topic cli-kafka.\nTopic: cli-kafka\t")
    assert run(capsys, server, "topics", "--describe", "--topic", "cli-kafka")[1] == out.split("\n", 1)[1]
    assert run(capsys, server, "topics", "--list")[1].split().count("cli-kafka") == 1
    code, out, _ = run(capsys, server, "topics", "--alter", "--topic", "cli-kafka", "--partitions", "3")
    assert code == 0 and out.startswith("Topic cli-kafka now has 3 partition(s).\n")
    assert run(capsys, server, "topics", "--delete", "--topic", "cli-kafka")[:2] == (
        0,
        "Deleted topic cli-kafka.\n",
    )


def test_if_not_exists_and_if_exists_make_the_missing_or_existing_topic_no_error(capsys, server):
    run(capsys, server, "topics", "create", "cli-once", "-p", "1", "-r", "1")
    code, _, err = run(capsys, server, "topics", "create", "cli-once", "-p", "1", "-r", "1")
    assert code == 1 and "TOPIC_ALREADY_EXISTS (36)" in err
    assert run(capsys, server, "topics", "create", "--topic", "cli-once", "-p", "1", "--if-not-exists") == (
        0,
        "",
        "",
    )
    assert run(capsys, server, "topics", "delete", "--topic", "cli-never", "--if-exists") == (0, "", "")
    assert run(capsys, server, "topics", "alter", "cli-never", "-p", "2", "--if-exists") == (0, "", "")
    code, _, err = run(capsys, server, "topics", "alter", "cli-never", "-p", "2")
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION (3)" in err


def test_describe_filters_under_replicated_and_unavailable_partitions(capsys, tmp_path):
    """Kafka's describe filters print the matching partition lines alone: after broker 2 crashes and is
    fenced, two-1 (on 1 and 2) is under-replicated and one-1 (on 2 alone) has no leader; with eligible
    leader replicas (KIP-966, on by default as in Kafka 4.1+) its ISR is empty (broker 2 moves to the ELR),
    so it is under-replicated too (Kafka's TopicCommand: replicas - ISR > 0)."""
    brokers = [(0, "a"), (1, "b"), (2, "c")]
    with ServerThread.start(brokers=brokers, clock="virtual", seed=1) as crashing:
        path = write(tmp_path / "a.json", [{"id": 0, "replicas": [0, 1]}, {"id": 1, "replicas": [1, 2]}])
        assert run(capsys, crashing, "topics", "create", "two", "--replica-assignment", path)[0] == 0
        path = write(tmp_path / "b.json", [{"id": 0, "replicas": [0]}, {"id": 1, "replicas": [2]}])
        assert run(capsys, crashing, "topics", "create", "one", "--replica-assignment", path)[0] == 0
        crashing.stop_broker(2, "crash")
        crashing.advance(9000)  # broker.session.timeout.ms: fenced

        def partitions(*argv: str) -> list[list[str]]:
            code, out, _ = run(capsys, crashing, "topics", "describe", *argv)
            assert code == 0
            return [line.split("\t")[1:3] for line in out.splitlines()]

        under = partitions("--under-replicated-partitions")
        unavailable = partitions("--unavailable-partitions")
        assert partitions("--topic", "two", "--unavailable-partitions") == []
    assert under == [["Topic: one", "Partition: 1"], ["Topic: two", "Partition: 1"]]
    assert unavailable == [["Topic: one", "Partition: 1"]]


def test_a_topic_named_twice_or_not_at_all_is_a_usage_error(capsys, server):
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, server, "topics", "delete", "cli-a", "--topic", "cli-b")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith("error: two topic names: cli-a and --topic cli-b\n")
    with pytest.raises(SystemExit):
        run(capsys, server, "topics", "create", "-p", "1")
    err = capsys.readouterr().err
    assert err.startswith("usage: placement-sim topics create ")
    assert err.endswith("error: a topic is needed: NAME or --topic NAME\n")
