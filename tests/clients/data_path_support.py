"""What the real-client data path tests share: a cluster on the real clock that replicates every 10 ms and
fences a crashed broker after a short session (so that a failover happens within a test), topics placed
by hand, and the records a partition holds read back through the project's own client."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from controller.embedded import ServerThread
from controller.records.batch import Compression, iter_batches
from controller.records.records import iter_records
from protocol.client import BlockingClient

#: The cluster of the data path tests: three brokers, the replication model ticking every 10 ms, a broker
#: fenced 1.5 s after it was last heard of (heartbeats every 300 ms).
PROPERTIES = {
    "simulator.replication.tick.ms": 10,
    "broker.session.timeout.ms": 1500,
    "broker.heartbeat.interval.ms": 300,
    "auto.leader.rebalance.enable": "false",
}
BROKERS = [(0, None), (1, None), (2, None)]

_names = (f"dp{i}" for i in itertools.count())


def start_cluster(**extra: object) -> ServerThread:
    return ServerThread.start(brokers=BROKERS, properties={**PROPERTIES, **extra})  # type: ignore[dict-item]


def new_topic(server: ServerThread, replicas: list[list[int]], **configs: str) -> str:
    """A topic with these replica lists (leader first), created through the project's own client."""
    name = next(_names)
    with BlockingClient.connect(server.bootstrap, request_timeout=10.0) as client:
        response = client.send(
            "CreateTopicsRequest",
            {
                "Topics": [
                    {
                        "Name": name,
                        "NumPartitions": -1,
                        "ReplicationFactor": -1,
                        "Assignments": [
                            {"PartitionIndex": i, "BrokerIds": rs} for i, rs in enumerate(replicas)
                        ],
                        "Configs": [{"Name": k.replace("_", "."), "Value": v} for k, v in configs.items()],
                    }
                ],
                "timeoutMs": 10_000,
            },
            version=5,
        )
    [topic] = response["Topics"]
    assert topic["ErrorCode"] == 0, topic
    return name


def readable(
    server: ServerThread, topic: str, partition: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record below the high watermark of the partition's leader log."""

    def read() -> list[tuple[int, bytes | None, bytes | None]]:
        controller = server.server.controller
        p = controller.cluster.partition(topic, partition)
        log = controller.data_path.log_of(p, p.leader)
        out = []
        for batch in log.read(log.log_start_offset, p.high_watermark, 1 << 40):
            out += [(r.offset, r.key, r.value) for r in iter_records(batch.render())]
        return out

    result: list[tuple[int, bytes | None, bytes | None]] = server.call(read)
    return result


def pairs(
    records: Iterator[tuple[int, bytes | None, bytes | None]] | list,
) -> list[tuple[bytes | None, bytes | None]]:
    return [(key, value) for _, key, value in records]


#: The cluster of the truncation tests: a follower that stops copying leaves the ISR after 400 ms, and a
#: leader without an in-sync follower may be replaced by one outside the ISR.
UNCLEAN = {"replica.lag.time.max.ms": 400}


def wait_until_the_leader_alone_commits(server: ServerThread, topic: str, end: int) -> None:
    """A follower that stopped copying leaves the ISR of ``topic``-0 (it lacks records for
    replica.lag.time.max.ms), and the leader alone moves the high watermark to ``end``."""
    server.wait_until(lambda: len(server.partition_state(topic, 0).isr) == 1, timeout=10)
    server.wait_until(lambda: server.partition_state(topic, 0).high_watermark == end, timeout=10)


def crash_leader_until(server: ServerThread, topic: str, leader: int, successor: int) -> None:
    """The leader of ``topic``-0 crashes; returns once ``successor`` leads (fenced after the session)."""
    server.stop_broker(leader, "crash")
    server.wait_until(lambda: server.partition_state(topic, 0).leader == successor, timeout=10)


def end_offset_for_epoch(server: ServerThread, topic: str, epoch: int) -> tuple[int, int, int]:
    """(error code, leader epoch, end offset) the leader of ``topic``-0 answers OffsetForLeaderEpoch for
    ``epoch`` with (what a consumer validating its position after a leader change is told)."""
    state = server.partition_state(topic, 0)
    with BlockingClient.connect(server.brokers[state.leader], request_timeout=10.0) as client:
        response = client.send(
            "OffsetForLeaderEpochRequest",
            {
                "ReplicaId": -1,
                "Topics": [
                    {
                        "Topic": topic,
                        "Partitions": [
                            {"Partition": 0, "CurrentLeaderEpoch": state.leader_epoch, "LeaderEpoch": epoch}
                        ],
                    }
                ],
            },
            version=4,
        )
    [p] = response["Topics"][0]["Partitions"]
    return p["ErrorCode"], p["LeaderEpoch"], p["EndOffset"]


def lost_offsets(server: ServerThread, topic: str) -> list[int]:
    """The offsets of ``topic``-0 that lost_records() reports, in order."""
    return [
        o
        for r in server.lost_records()
        if (r.topic, r.partition) == (topic, 0)
        for o in range(r.first_offset, r.last_offset + 1)
    ]


#: The bulk round trips: this many records over PARTITIONS partitions, each with a key and two headers.
BULK = 10_000
PARTITIONS = 4
#: Where the bulk topics' partitions live (leader first), spread over the three brokers.
BULK_REPLICAS = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]]
#: Every client here compresses with gzip and with one of lz4, zstd and snappy (all installed for each).
CODECS = ["gzip", "lz4", "zstd", "snappy"]


def bulk_record(i: int) -> tuple[int, bytes, bytes, list[tuple[str, bytes]]]:
    """Record i of a bulk round trip: (partition, key, value, headers); values vary in size (1 to 300 bytes)."""
    return (
        i % PARTITIONS,
        b"key-%d" % i,
        (b"value-%d-" % i) * (1 + i % 23),
        [("seq", b"%d" % i), ("kind", b"odd" if i % 2 else b"even")],
    )


def expected_by_partition() -> dict[int, list[tuple[bytes, bytes, list[tuple[str, bytes]]]]]:
    """What each partition must hold, in order: (key, value, headers) of every record sent to it."""
    out: dict[int, list[tuple[bytes, bytes, list[tuple[str, bytes]]]]] = {p: [] for p in range(PARTITIONS)}
    for i in range(BULK):
        partition, key, value, headers = bulk_record(i)
        out[partition].append((key, value, headers))
    return out


def by_partition(
    got: list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]]]],
) -> dict[int, list[tuple[bytes, bytes, list[tuple[str, bytes]]]]]:
    """(partition, offset, key, value, headers) as read, grouped per partition in the order they arrived;
    asserts that each partition's offsets are 0, 1, 2, ... in that order (no gap, no duplicate)."""
    out: dict[int, list[tuple[bytes, bytes, list[tuple[str, bytes]]]]] = {p: [] for p in range(PARTITIONS)}
    offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    for partition, offset, key, value, headers in got:
        out[partition].append((key, value, list(headers)))
        offsets[partition].append(offset)
    for partition, seen in offsets.items():
        assert seen == list(range(len(seen))), f"partition {partition} read out of order"
    return out


def codecs_stored(server: ServerThread, topic: str) -> set[str]:
    """The codec names (lower case, as the clients spell them) of every batch the topic's leaders hold."""

    def read() -> set[str]:
        controller = server.server.controller
        found = set()
        for partition in range(PARTITIONS):
            p = controller.cluster.partition(topic, partition)
            log = controller.data_path.log_of(p, p.leader)
            for batch in log.read(log.log_start_offset, p.high_watermark, 1 << 40):
                found |= {Compression(h.compression_id).name.lower() for h, _ in iter_batches(batch.render())}
        return found

    result: set[str] = server.call(read)
    return result
