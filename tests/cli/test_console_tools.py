"""``produce`` and ``consume`` with Kafka's console tools' habits (issue 29, items 1-4): a line is sent as
it is typed and Ctrl-C sends what was read before exiting 130; keys land where Kafka's Java-compatible
partitioner puts them; retriable errors (a crashed leader, an injected fault) are waited out with fresh
metadata and ``-v`` says what for; the consumer waits for new records on every partition, and joins a
group and commits with ``--group``. Each record is read back as a consumer gets it."""

from __future__ import annotations

import io
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from controller.embedded import ServerThread
from placement_sim.cli.main import main
from protocol.codes import ApiKey, ErrorCode
from protocol.partitioner import partition_for_key

CLI = [sys.executable, "-m", "placement_sim.cli.main"]
FAST_FAILOVER = {
    "simulator.replication.tick.ms": 10,
    "broker.session.timeout.ms": 1500,
    "broker.heartbeat.interval.ms": 300,
    "group.initial.rebalance.delay.ms": 0,
}


@pytest.fixture
def cluster() -> Iterator[ServerThread]:
    with ServerThread.start(
        brokers=[(0, "a"), (1, "b"), (2, "c")], properties=FAST_FAILOVER, seed=1
    ) as server:
        yield server


def _lines(stream: io.TextIOBase) -> queue.Queue[str | None]:
    """A process's output lines as they come (None at its end)."""
    found: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stream:
            found.put(line.rstrip("\n"))
        found.put(None)

    threading.Thread(target=read, daemon=True).start()
    return found


def _next(lines: queue.Queue[str | None], timeout: float = 20.0) -> str | None:
    return lines.get(timeout=timeout)


def _read_back(
    server: ServerThread, topic: str, partitions: int
) -> dict[int, list[tuple[bytes | None, bytes]]]:
    """Every record of ``topic`` as kafka-python's consumer reads it, by partition."""
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap, consumer_timeout_ms=3000, request_timeout_ms=10000
    )
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        found: dict[int, list[tuple[bytes | None, bytes]]] = {}
        for message in consumer:
            found.setdefault(message.partition, []).append((message.key, message.value))
        return found
    finally:
        consumer.close()


# ------------------------------------------------------------------------------------------ producing


def test_each_line_is_sent_as_it_is_typed_and_ctrl_c_sends_the_rest_and_exits_130(cluster) -> None:
    cluster.create_topic("typed", 1, 3)
    command = [*CLI, "produce", "typed", "--linger-ms", "20", "--bootstrap", cluster.bootstrap]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    out = _lines(process.stdout)
    for number, text in enumerate(["first", "second"]):
        process.stdin.write(text + "\n")
        process.stdin.flush()  # input still open: each line goes on its own
        assert _next(out) == f"typed-0: offset {number}"
    # A long linger holds the next lines back: Ctrl-C sends them, prints their offsets, exits 130.
    # -vv: the tool says (DEBUG) when it holds a line; Ctrl-C goes once it holds both, not after a guess.
    held = subprocess.Popen(
        [*CLI, "produce", "typed", "--linger-ms", "600000", "-vv", "--bootstrap", cluster.bootstrap],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert held.stdin is not None and held.stdout is not None and held.stderr is not None
    held_out, held_log = _lines(held.stdout), _lines(held.stderr)
    held.stdin.write("third\nfourth\n")
    held.stdin.flush()
    log: list[str] = []
    while not any("line 2: typed-0, 2 record(s) held" in line for line in log):
        line = _next(held_log, timeout=60)
        assert line is not None, log
        log.append(line)
    assert cluster.partition_state("typed", 0).high_watermark == 2  # nothing sent before Ctrl-C
    held.send_signal(signal.SIGINT)
    assert held.wait(timeout=30) == 130
    stdout = list(iter(held_out.get, None))
    log.extend(iter(held_log.get, None))
    assert stdout == ["typed-0: offsets 2-3"]
    assert [line for line in log if " DEBUG " not in line] == []  # no warning, no error, no traceback
    process.stdin.close()
    assert process.wait(timeout=30) == 0 and process.stderr is not None and process.stderr.read() == ""
    assert _read_back(cluster, "typed", 1) == {
        0: [(None, v) for v in (b"first", b"second", b"third", b"fourth")]
    }


def test_keys_land_where_the_java_compatible_partitioners_put_them(cluster, capsys, monkeypatch) -> None:
    """librdkafka's murmur2_random and kafka-python's default partitioner are Kafka's Java partitioner."""
    for topic in ("by-cli", "by-librdkafka", "by-kafka-python"):
        cluster.create_topic(topic, 7, 2)
    keys = [f"user-{i}" for i in range(60)]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{k}:{i}\n" for i, k in enumerate(keys))))
    assert main(["produce", "by-cli", "-k", ":", "--linger-ms", "5", "--bootstrap", cluster.bootstrap]) == 0
    librdkafka = Producer(
        {"bootstrap.servers": cluster.bootstrap, "partitioner": "murmur2_random", "socket.timeout.ms": 5000}
    )
    for i, key in enumerate(keys):
        librdkafka.produce("by-librdkafka", key=key.encode(), value=str(i).encode())
    assert librdkafka.flush(20) == 0
    del librdkafka
    kafka_python = KafkaProducer(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    for i, key in enumerate(keys):
        kafka_python.send("by-kafka-python", key=key.encode(), value=str(i).encode())
    kafka_python.flush(20)
    kafka_python.close()
    placed = {}
    for topic in ("by-cli", "by-librdkafka", "by-kafka-python"):
        records = _read_back(cluster, topic, 7)
        placed[topic] = {key: p for p, found in records.items() for key, _ in found}
        assert len(placed[topic]) == len(keys)
    expected = {key.encode(): partition_for_key(key.encode(), 7) for key in keys}
    assert placed["by-cli"] == placed["by-librdkafka"] == placed["by-kafka-python"] == expected
    assert len(set(expected.values())) == 7


def test_records_without_a_key_stick_to_one_partition_chosen_by_the_seed(cluster, capsys) -> None:
    cluster.create_topic("sticky", 5, 1)
    records = [arg for i in range(10) for arg in ("--record", f"v{i}")]
    command = ["produce", "sticky", *records, "--seed", "4", "--bootstrap", cluster.bootstrap]
    assert main(command) == 0
    [line] = capsys.readouterr().out.splitlines()  # 10 small records: one batch, one partition
    partition = int(line.split(":")[0].rpartition("-")[2])
    assert line == f"sticky-{partition}: offsets 0-9"
    assert (
        main(["produce", "sticky", "--record", "again", "--seed", "4", "--bootstrap", cluster.bootstrap]) == 0
    )
    assert capsys.readouterr().out == f"sticky-{partition}: offset 10\n"  # the same seed, the same choice


# ------------------------------------------------------------------------------------------ retries


def test_consume_and_produce_wait_out_a_crashed_leader(cluster, capsys) -> None:
    cluster.create_topic("orders", assignments=[[1, 0, 2]])
    produce = ["produce", "orders", "--linger-ms", "0", "--bootstrap", cluster.bootstrap]
    assert main([*produce, "--record", "a", "--record", "b"]) == 0
    cluster.wait_until(lambda: cluster.partition_state("orders", 0).high_watermark == 2, timeout=10)
    assert main(["broker", "stop", "1", "--mode", "crash", "--bootstrap", cluster.bootstrap]) == 0
    capsys.readouterr()
    read = ["consume", "orders", "-p", "0", "--from-beginning", "--max-messages", "3", "-v"]
    with ThreadPoolExecutor(1) as pool:
        consumer = pool.submit(main, [*read, "--bootstrap", cluster.bootstrap])
        assert main([*produce, "--record", "c", "-v"]) == 0  # written once broker 0 leads
        assert consumer.result(timeout=60) == 0
    out, err = capsys.readouterr()
    assert [line for line in out.splitlines() if not line.startswith("orders-")] == ["a", "b", "c"]
    assert "orders-0: offset 2" in out.splitlines()
    # -v: what each waited for (the crashed leader's refused connection), once each.
    waits = [line for line in err.splitlines() if "waiting" in line]
    assert waits and all("orders-0: waiting: broker 1: connection to 127.0.0.1:" in w for w in waits)
    assert cluster.partition_state("orders", 0).leader == 0
    assert [r.cause for r in cluster.lost_records()] == []


def test_injected_retriable_faults_are_retried_and_other_errors_are_reported_per_line(
    cluster, capsys
) -> None:
    cluster.create_topic("faulty", 1, 3)
    produce = ["produce", "faulty", "--linger-ms", "0", "--bootstrap", cluster.bootstrap]
    fault = cluster.faults.inject_error(
        ApiKey.PRODUCE, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="faulty"
    ).times(3)
    assert main([*produce, "--record", "one", "-v"]) == 0
    out, err = capsys.readouterr()
    assert (out, fault.fired) == ("faulty-0: offset 0\n", 3)
    assert "faulty-0: waiting: NOT_LEADER_OR_FOLLOWER (6): injected by fault #1" in err
    fetch_fault = cluster.faults.inject_error(
        ApiKey.FETCH, ErrorCode.LEADER_NOT_AVAILABLE, topic="faulty"
    ).times(2)
    read = ["consume", "faulty", "--from-beginning", "--max-messages", "1", "--bootstrap", cluster.bootstrap]
    assert main(read) == 0
    assert (capsys.readouterr().out, fetch_fault.fired) == ("one\n", 2)
    cluster.faults.inject_error(ApiKey.PRODUCE, ErrorCode.INVALID_RECORD, topic="faulty").once()
    assert main([*produce, "-k", ":", "--record", "k:two", "--record", "k:three"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"placement-sim: line {n}: error when sending to faulty-0 (key: k, value: {size} bytes): INVALID_RECORD "
        "(87): injected by fault #3: error=INVALID_RECORD api=Produce topic=faulty once"
        for n, size in ((1, 3), (2, 5))
    ]
    assert main([*produce, "--record", "four"]) == 0  # the producer starts again afterwards
    assert _read_back(cluster, "faulty", 1) == {0: [(None, b"one"), (None, b"four")]}


# ------------------------------------------------------------------------------------------ consuming


def _until_done(future: Future[int], act: object, timeout: float = 30.0) -> int:
    """Calls ``act()`` until ``future`` is done (the consumer got what it waited for)."""
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, "the consumer never got its records"
        act()  # type: ignore[operator]
        time.sleep(0.2)
    return future.result()


def test_consume_waits_for_new_records_on_every_partition(cluster, capsys) -> None:
    cluster.create_topic("live", 3, 2)
    keys = {partition_for_key(f"k{i}".encode(), 3): f"k{i}" for i in range(20)}  # a key for each partition
    produce = ["produce", "live", "-k", ":", "--linger-ms", "0", "--bootstrap", cluster.bootstrap]
    read = ["consume", "live", "--max-messages", "3", "--property", "print.partition=true"]
    with ThreadPoolExecutor(1) as pool:
        consumer = pool.submit(main, [*read, "--bootstrap", cluster.bootstrap])
        time.sleep(1.0)
        assert not consumer.done()  # nothing yet: it waits (from the end, as Kafka's)
        records = [arg for p in range(3) for arg in ("--record", f"{keys[p]}:new-{p}")]
        assert _until_done(consumer, lambda: main([*produce, *records])) == 0
    out, err = capsys.readouterr()
    printed = [line for line in out.splitlines() if line.startswith("Partition:")]
    assert len(printed) == 3 and err.endswith("Processed a total of 3 messages\n")
    assert {line.split("\t")[0] for line in printed} <= {"Partition:0", "Partition:1", "Partition:2"}

    # An offset past the end starts at the end (auto.offset.reset=latest) and waits there.
    past = ["consume", "live", "-p", "0", "--offset", "500", "--max-messages", "1", "--offsets"]
    with ThreadPoolExecutor(1) as pool:
        consumer = pool.submit(main, [*past, "--bootstrap", cluster.bootstrap])
        assert _until_done(consumer, lambda: main([*produce, "--record", f"{keys[0]}:later"])) == 0
    out, _ = capsys.readouterr()
    [line] = [line for line in out.splitlines() if not line.startswith("live-")]
    assert line.endswith(": later") and int(line.split(":")[0]) < 500

    # --timeout-ms: nothing came for that long.
    started = time.monotonic()
    assert main(["consume", "live", "--timeout-ms", "500", "--bootstrap", cluster.bootstrap]) == 0
    assert capsys.readouterr() == ("", "Processed a total of 0 messages\n")
    assert time.monotonic() - started < 15


def test_a_group_shares_the_partitions_and_commits_its_position(cluster, capsys) -> None:
    cluster.create_topic("shared", 4, 2)
    read = ["consume", "shared", "--group", "app", "--from-beginning", "--timeout-ms", "8000"]
    read += ["--property", "print.partition=true", "--bootstrap", cluster.bootstrap]
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(main, read)
        second = pool.submit(main, read)

        def two_members() -> bool:
            state = cluster.group_state("app") or {}
            return state.get("state") == "Stable" and len(state.get("members", {})) == 2

        cluster.wait_until(two_members, timeout=60)
        lines = "".join(f"key-{i}:value-{i}\n" for i in range(40))
        produce = ["produce", "shared", "-k", ":", "--linger-ms", "5", "--bootstrap", cluster.bootstrap]
        stdin = sys.stdin
        sys.stdin = io.StringIO(lines)
        try:
            assert main(produce) == 0
        finally:
            sys.stdin = stdin
        assert first.result(timeout=90) == 0 and second.result(timeout=90) == 0
    out, _ = capsys.readouterr()
    printed = [line for line in out.splitlines() if line.startswith("Partition:")]
    assert sorted(line.split("\t")[1] for line in printed) == sorted(f"value-{i}" for i in range(40))
    ends = {p: cluster.partition_state("shared", p).high_watermark for p in range(4)}
    assert cluster.committed_offsets("app") == {("shared", p): end for p, end in ends.items()}
    assert cluster.group_state("app")["state"] == "Empty"  # both left
    # Joining again starts at the commits: nothing left to read.
    again = ["consume", "shared", "--group", "app", "--from-beginning", "--timeout-ms", "1500"]
    assert main([*again, "--bootstrap", cluster.bootstrap]) == 0
    assert capsys.readouterr() == ("", "Processed a total of 0 messages\n")


def test_ctrl_c_stops_a_group_consumer_after_committing(cluster) -> None:
    cluster.create_topic("stopped", 2, 2)
    cluster.produce_load("stopped", 20)
    command = [
        *CLI,
        "consume",
        "stopped",
        "--group",
        "quit",
        "--from-beginning",
        "--bootstrap",
        cluster.bootstrap,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    out = _lines(process.stdout)
    assert _next(out) is not None  # reading
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert stderr.startswith("Processed a total of ") and stderr.count("\n") == 1
    committed = cluster.committed_offsets("quit")
    assert set(committed) == {("stopped", 0), ("stopped", 1)} and sum(committed.values()) > 0
