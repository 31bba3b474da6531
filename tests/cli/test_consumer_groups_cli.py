"""``placement-sim consumer-groups`` as ``kafka-consumer-groups.sh`` (issue 29, item 5): --list, --describe
(offsets and lag, --members, --state), --reset-offsets (a dry run unless --execute; each scenario; offsets
past the ends set to the ends) and --delete; what it changes is what kafka-python's admin client and a
consumer of the group then see."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from kafka import KafkaAdminClient, KafkaConsumer

from controller.embedded import ServerThread
from placement_sim.cli.main import main

PROPERTIES = {"simulator.replication.tick.ms": 10, "group.initial.rebalance.delay.ms": 0}
HEADER = (
    "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
    "HOST            CLIENT-ID"
)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=[(0, "a"), (1, "b"), (2, "c")], properties=PROPERTIES, seed=1) as running:
        running.create_topic("orders", assignments=[[0, 1], [1, 2]])
        lines = "".join(f"{'a' if i % 2 else 'b'}{i}:v{i}\n" for i in range(20))
        saved, sys.stdin = sys.stdin, io.StringIO(lines)
        try:
            assert (
                main(["produce", "orders", "-k", ":", "--linger-ms", "5", "--bootstrap", running.bootstrap])
                == 0
            )
        finally:
            sys.stdin = saved
        yield running


def run(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["consumer-groups", *argv, "--bootstrap", server.bootstrap])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def consume(server: ServerThread, group: str, *extra: str) -> int:
    return main(["consume", "orders", "--group", group, *extra, "--bootstrap", server.bootstrap])


def _ends(server: ServerThread) -> dict[int, int]:
    return {p: server.partition_state("orders", p).high_watermark for p in (0, 1)}


def test_list_describe_and_the_lag_of_an_empty_group(server, capsys) -> None:
    assert consume(server, "app", "--from-beginning", "--max-messages", "3") == 0
    capsys.readouterr()
    committed = server.committed_offsets("app")
    assert sum(committed.values()) == 3
    assert run(capsys, server, "--list")[:2] == (0, "app\n")
    code, out, _ = run(capsys, server, "--list", "--state")
    assert (code, out.splitlines()) == (
        0,
        ["GROUP                     STATE", "app                       Empty"],
    )
    code, _, err = run(capsys, server, "--list", "--state", "stable,sleepy")
    assert code == 2 and "Invalid state list 'stable,sleepy'" in err
    code, out, err = run(capsys, server, "--describe", "--group", "app")
    ends = _ends(server)
    rows = [
        f"app             orders          {p}          {committed[('orders', p)]:<15} {ends[p]:<15} "
        f"{ends[p] - committed[('orders', p)]:<15} -               -               -"
        for p in (0, 1)
    ]
    assert code == 0 and out.splitlines() == ["", HEADER, *rows]
    assert err == "\nConsumer group 'app' has no active members.\n"
    code, _, err = run(capsys, server, "--describe", "--group", "nosuch")
    assert (code, err) == (1, "placement-sim: Consumer group 'nosuch' does not exist.\n")


def test_describe_shows_the_members_and_what_each_has(server, capsys) -> None:
    with ThreadPoolExecutor(1) as pool:
        reading = pool.submit(consume, server, "live", "--timeout-ms", "6000")
        server.wait_until(lambda: (server.group_state("live") or {}).get("state") == "Stable", timeout=30)
        [member] = server.group_state("live")["members"]
        code, out, _ = run(capsys, server, "--describe", "--group", "live", "--members")
        assert code == 0
        assert re.fullmatch(
            rf"\nGROUP +CONSUMER-ID +HOST +CLIENT-ID +#PARTITIONS +ASSIGNMENT\n"
            rf"live +{re.escape(member)} +/127\.0\.0\.1 +console-consumer +2 +orders\(0,1\)\n",
            out,
        )
        code, out, _ = run(capsys, server, "--describe", "--group", "live")
        assert code == 0 and [line.split()[6] for line in out.splitlines()[2:]] == [member, member]
        code, out, _ = run(capsys, server, "--describe", "--group", "live", "--state")
        assert code == 0 and re.search(r"\nlive +127\.0\.0\.1:\d+ \(\d\) +range +Stable +1\n$", out)
        code, _, err = run(
            capsys, server, "--reset-offsets", "--group", "live", "--all-topics", "--to-latest"
        )
        assert (code, err) == (
            1,
            "placement-sim: Assignments can only be reset if the group 'live' is inactive, but the current "
            "state is Stable.\n",
        )
        code, _, err = run(capsys, server, "--delete", "--group", "live")
        assert code == 1 and "NON_EMPTY_GROUP (68): The group is not empty." in err
        assert reading.result(timeout=60) == 0
    capsys.readouterr()


def test_reset_offsets_is_a_dry_run_unless_executed_and_consumers_start_there(server, capsys) -> None:
    assert consume(server, "reset", "--from-beginning", "--max-messages", "20") == 0
    capsys.readouterr()
    before = server.committed_offsets("reset")
    ends = _ends(server)
    assert before == {("orders", p): end for p, end in ends.items()}
    code, out, err = run(
        capsys, server, "--reset-offsets", "--group", "reset", "--topic", "orders", "--to-earliest"
    )
    assert code == 0 and out.splitlines()[1:] == [
        "GROUP                          TOPIC                          PARTITION  NEW-OFFSET",
        "reset                          orders                         0          0",
        "reset                          orders                         1          0",
    ]
    assert "no offsets were changed" in err and server.committed_offsets("reset") == before
    code, out, err = run(
        capsys,
        server,
        "--reset-offsets",
        "--group",
        "reset",
        "--topic",
        "orders:1",
        "--to-offset",
        "999",
        "--execute",
    )
    assert code == 0 and err == (
        f"New offset (999) is higher than latest offset for topic partition orders-1. Value will be set to {ends[1]}\n"
    )
    code, _, _ = run(
        capsys, server, "--reset-offsets", "--group", "reset", "--all-topics", "--shift-by", "-2", "--execute"
    )
    assert code == 0
    assert server.committed_offsets("reset") == {("orders", p): end - 2 for p, end in ends.items()}
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:  # kafka-python's admin client reads the same commits
        [listed] = admin.list_group_offsets("reset").values()
        assert {(tp.topic, tp.partition): o.offset for tp, o in listed.items()} == {
            ("orders", p): end - 2 for p, end in ends.items()
        }
    finally:
        admin.close()
    # A consumer of the group starts at the new offsets: the last two records of each partition.
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=server.bootstrap,
        group_id="reset",
        consumer_timeout_ms=5000,
        request_timeout_ms=10000,
    )
    try:
        got = sorted((m.partition, m.offset) for m in consumer)
    finally:
        consumer.close()
    assert got == sorted((p, o) for p, end in ends.items() for o in (end - 2, end - 1))
    capsys.readouterr()  # kafka-python's own log lines
    code, _, err = run(
        capsys, server, "--reset-offsets", "--group", "nobody", "--topic", "orders", "--shift-by", "1"
    )
    assert (code, err) == (
        1,
        "placement-sim: Cannot shift offset for partition orders-0 since there is no current committed offset\n",
    )


def test_delete_groups(server, capsys) -> None:
    assert consume(server, "gone", "--from-beginning", "--max-messages", "1") == 0
    capsys.readouterr()
    code, out, err = run(capsys, server, "--delete", "--group", "gone", "--group", "never")
    assert (code, out) == (1, "Deletion of requested consumer groups ('gone') was successful.\n")
    assert err.splitlines() == [
        "placement-sim: Deletion of some consumer groups failed:",
        "* Group 'never' could not be deleted due to: GROUP_ID_NOT_FOUND (69): The group id does not exist.",
    ]
    assert server.committed_offsets("gone") == {}
    assert "gone" not in run(capsys, server, "--list")[1].split()


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--describe"], "Option --group or --all-groups is required with this action"),
        (["--reset-offsets", "--group", "g", "--all-topics"], "requires one of the following scenarios"),
        (["--reset-offsets", "--group", "g", "--to-latest"], "takes one of --topic or --all-topics"),
        (["--describe", "--group", "g", "--execute"], "go with --reset-offsets"),
    ],
)
def test_option_mistakes_are_usage_errors(server, capsys, argv, problem) -> None:
    code, _, err = run(capsys, server, *argv)
    assert code == 2 and problem in err and "Traceback" not in err


def test_a_group_of_the_consumer_group_protocol_is_described_reset_and_deleted(server, capsys) -> None:
    """A librdkafka consumer with ``group.protocol=consumer`` (KIP-848): described as Kafka's tool does
    through ConsumerGroupDescribe (its assignor, members and assignment), then, once it has left, its
    offsets reset and the group deleted."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": "next",
            "group.protocol": "consumer",
            "client.id": "kip848-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
        }
    )
    try:
        consumer.subscribe(["orders"])
        read: list[object] = []

        def four_read() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.append(message)
            return len(read) >= 4

        server.wait_until(four_read, timeout=30)
        consumer.commit(asynchronous=False)
        server.wait_until(lambda: (server.group_state("next") or {}).get("state") == "Stable", timeout=30)
        [member] = server.group_state("next")["members"]
        code, out, _ = run(capsys, server, "--describe", "--group", "next", "--state")
        assert code == 0 and re.search(r"\nnext +127\.0\.0\.1:\d+ \(\d\) +uniform +Stable +1\n$", out)
        code, out, _ = run(capsys, server, "--describe", "--group", "next", "--members")
        assert code == 0
        assert re.fullmatch(
            rf"\nGROUP +CONSUMER-ID +HOST +CLIENT-ID +#PARTITIONS +ASSIGNMENT\n"
            rf"next +{re.escape(member)} +/127\.0\.0\.1 +kip848-reader +2 +orders\(0,1\)\n",
            out,
        )
    finally:
        consumer.close()
    committed = server.committed_offsets("next")
    assert sum(committed.values()) >= 4
    server.wait_until(lambda: (server.group_state("next") or {}).get("state") == "Empty", timeout=30)
    code, out, err = run(capsys, server, "--describe", "--group", "next")
    ends = _ends(server)
    assert code == 0 and "Consumer group 'next' has no active members." in err
    assert [line.split()[:5] for line in out.splitlines()[2:]] == [
        ["next", "orders", str(p), str(committed[("orders", p)]), str(ends[p])]
        for p in sorted(p for _, p in committed)
    ]
    code, out, _ = run(
        capsys, server, "--reset-offsets", "--group", "next", "--all-topics", "--to-earliest", "--execute"
    )
    assert code == 0 and server.committed_offsets("next") == {tp: 0 for tp in committed}
    code, out, _ = run(capsys, server, "--delete", "--group", "next")
    assert (code, out) == (0, "Deletion of requested consumer groups ('next') was successful.\n")
    assert server.group_state("next") is None and server.committed_offsets("next") == {}
