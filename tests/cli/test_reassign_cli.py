"""``placement-sim reassign`` against a running server over a real socket (a virtual clock, driven through
the control API): --generate with the server's placer, --execute with and without --throttle, --verify
while in progress and done, --cancel, --list, and the file checks, in kafka-reassign-partitions.sh's
wording."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main
from protocol.client import BlockingClient


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    brokers = [(0, "a"), (1, "b"), (2, "c"), (3, "a")]
    properties = {"simulator.placer.legacy.fixed.start.index": "0", "auto.leader.rebalance.enable": "false"}
    with ServerThread.start(
        placer="legacy", brokers=brokers, properties=properties, seed=1, clock="virtual"
    ) as s:
        yield s


def run(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--bootstrap-server", server.bootstrap, "--timeout", "10"])
    out, err = capsys.readouterr()
    return code, out, err


def replicas(server: ServerThread, topic: str) -> list[list[int]]:
    return server.call(
        lambda: [p.replicas for p in server.server.controller.cluster.topics[topic].partitions]
    )


def rates(server: ServerThread) -> dict[int, float | None]:
    return server.call(
        lambda: {b.id: b.copy_rate for b in server.server.controller.cluster.broker_states.values()}
    )


def reassignment(*entries: tuple[str, int, list[int]]) -> str:
    partitions = [
        {"topic": t, "partition": p, "replicas": rs, "log_dirs": ["any"] * len(rs)} for t, p, rs in entries
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def test_generate_execute_verify(capsys, server, tmp_path: Path) -> None:
    code, _, err = run(
        capsys, server, "topics", "create", "re-a", "--partitions", "2", "--replication-factor", "2"
    )
    assert (code, err) == (0, "")
    current = replicas(server, "re-a")
    code, out, err = run(capsys, server, "reassign", "--generate", "--topics", "re-a", "--broker-ids", "2,3")
    assert (code, err) == (0, "")
    # The server's placer on brokers 2 and 3: what CreateReplicaPlacement gives for the topic.
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        placed = client.create_replica_placement(2, 2, node_ids=[2, 3], topic="re-a")
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[1] == reassignment(("re-a", 0, current[0]), ("re-a", 1, current[1]))
    assert lines[2] == ""
    assert lines[3] == "Proposed partition reassignment configuration"
    assert lines[4] == reassignment(("re-a", 0, placed[0]), ("re-a", 1, placed[1]))
    assert len(lines) == 5
    plan = json.loads(lines[4])
    file = tmp_path / "plan.json"
    file.write_text(lines[4])
    server.set_log_end_offset("re-a", 0, current[0][0], 2048)
    server.set_log_end_offset("re-a", 1, current[1][0], 2048)
    server.advance(100)
    code, out, err = run(capsys, server, "reassign", "--execute", str(file), "--throttle", "1048576")
    assert (code, err) == (0, "")
    assert out == (
        "Current partition replica assignment\n\n"
        f"{reassignment(('re-a', 0, current[0]), ('re-a', 1, current[1]))}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback\n"
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.\n"
        "The inter-broker throttle limit was set to 1048576 B/s\n"
        "Successfully started partition reassignments for re-a-0,re-a-1\n"
    )
    gaining = {r for p in plan["partitions"] for r in p["replicas"]} - {r for rs in current for r in rs}
    assert gaining and all(rates(server)[b] == 1024.0 for b in gaining)
    code, out, err = run(capsys, server, "reassign", "--execute", str(file))
    assert (code, out) == (1, "")
    assert err.startswith("placement-sim: Cannot execute because there is an existing partition assignment.")
    code, out, _ = run(capsys, server, "reassign", "--list")
    assert code == 0 and out.startswith("Current partition reassignments:\nre-a-0: replicas: ")
    # kafka-topics.sh's describe during a reassignment: the union of replicas, what is added and removed,
    # and the replication factor without the adding replicas.
    code, out, _ = run(capsys, server, "topics", "describe", "re-a")
    lines = out.splitlines()
    assert lines[0].endswith("\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: min.insync.replicas=1")
    for i, line in enumerate(lines[1:]):
        target, now = plan["partitions"][i]["replicas"], current[i]
        adding = [r for r in target if r not in now]
        removing = sorted(r for r in now if r not in target)
        assert line == (
            f"\tTopic: re-a\tPartition: {i}\tLeader: {now[0]}\tReplicas: {','.join(map(str, target + removing))}\t"
            f"Isr: {','.join(map(str, now))}\tAdding Replicas: {','.join(map(str, sorted(adding)))}\t"
            f"Removing Replicas: {','.join(map(str, removing))}"
        )
    code, out, err = run(capsys, server, "reassign", "--verify", str(file))
    assert (code, err) == (0, "")
    assert out == (
        "Status of partition reassignment:\n"
        "Reassignment of partition re-a-0 is still in progress.\n"
        "Reassignment of partition re-a-1 is still in progress.\n\n"
    )
    server.advance(2100)  # 1024 records a second: 2048 records copied
    code, out, err = run(capsys, server, "reassign", "--verify", str(file))
    assert (code, err) == (0, "")
    assert out == (
        "Status of partition reassignment:\n"
        "Reassignment of partition re-a-0 is completed.\n"
        "Reassignment of partition re-a-1 is completed.\n\n"
        "Clearing broker-level throttles on brokers 0,1,2,3\n"
    )
    assert replicas(server, "re-a") == [p["replicas"] for p in plan["partitions"]]
    assert set(rates(server).values()) == {None}
    assert run(capsys, server, "reassign", "--list")[1] == "No partition reassignments found.\n"


def test_cancel_and_a_replica_set_left_otherwise(capsys, server, tmp_path: Path) -> None:
    code, _, _ = run(
        capsys, server, "topics", "create", "re-b", "--partitions", "1", "--replication-factor", "1"
    )
    assert code == 0
    [[leader]] = replicas(server, "re-b")
    other = next(b for b in (0, 1, 2, 3) if b != leader)
    server.set_log_end_offset("re-b", 0, leader, 100)
    server.advance(100)
    server.set_replication(other, records_per_s=0)
    file = tmp_path / "b.json"
    file.write_text(reassignment(("re-b", 0, [other])))
    assert run(capsys, server, "reassign", "--execute", str(file))[0] == 0
    code, out, err = run(capsys, server, "reassign", "--cancel", str(file), "--preserve-throttles")
    assert (code, err) == (0, "")
    assert out == (
        "Successfully cancelled partition reassignment for: re-b-0\n"
        "None of the specified partition moves are active.\n"
    )
    assert replicas(server, "re-b") == [[leader]]
    assert rates(server)[other] == 0.0
    code, out, _ = run(capsys, server, "reassign", "--cancel", str(file))
    assert out == (
        "None of the specified partition reassignments are active.\n"
        "None of the specified partition moves are active.\n"
        "Clearing broker-level throttles on brokers 0,1,2,3\n"
    )
    assert rates(server)[other] is None
    code, out, err = run(capsys, server, "reassign", "--verify", str(file))
    assert out == (
        "Status of partition reassignment:\n"
        f"There is no active reassignment of partition re-b-0, but replica set is {leader} rather than {other}.\n\n"
        "Clearing broker-level throttles on brokers 0,1,2,3\n"
    )


def test_bad_files_and_refusals(capsys, server, tmp_path: Path) -> None:
    def execute(text: str) -> tuple[int, str, str]:
        file = tmp_path / "x.json"
        file.write_text(text)
        return run(capsys, server, "reassign", "--execute", str(file))

    assert execute('{"version":1,"partitions":[]}')[1:] == (
        "",
        "placement-sim: Partition reassignment list cannot be empty\n",
    )
    assert execute(reassignment(("re-a", 0, [1, 1]), ("re-a", 1, [2]), ("re-a", 1, [3])))[2] == (
        "placement-sim: Partition reassignment contains duplicate topic partitions: re-a-1\n"
    )
    assert execute(reassignment(("re-a", 0, [1, 1, 2])))[2] == (
        "placement-sim: Partition replica lists may not contain duplicate entries: re-a-0 contains multiple "
        "entries for 1\n"
    )
    assert execute(reassignment(("re-a", 0, [1, 9])))[2] == "placement-sim: Unknown broker id 9\n"
    code, out, err = execute(reassignment(("re-a", 7, [1, 2])))
    assert code == 1 and out.endswith(
        "Save this to use as the --reassignment-json-file option during rollback\n"
    )
    assert err == (
        "placement-sim: Error reassigning partition(s):\n"
        "re-a-7: UNKNOWN_TOPIC_OR_PARTITION (3): Unable to find partition re-a:7.\n"
    )
    assert execute("[1, 2]")[2].endswith('x.json: expected {"version": 1, "partitions": [...]}\n')
    code, _, err = run(capsys, server, "reassign", "--generate", "--topics", "nope", "--broker-ids", "0,1")
    assert (code, err) == (
        1,
        "placement-sim: topic nope: UNKNOWN_TOPIC_OR_PARTITION (3): This server does not host this topic-partition.\n",
    )
    code, _, err = run(capsys, server, "reassign", "--generate", "--topics", "re-a", "--broker-ids", "0,0")
    assert (code, err) == (1, "placement-sim: Broker list contains duplicate entries: 0\n")


def test_kafkas_spellings_for_generate(capsys, server, tmp_path: Path) -> None:
    code, _, _ = run(
        capsys, server, "topics", "create", "re-c", "--partitions", "1", "--replication-factor", "1"
    )
    assert code == 0
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "re-c"}], "version": 1}))
    by_file = run(
        capsys,
        server,
        "reassign",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1",
    )
    by_name = run(capsys, server, "reassign", "--generate", "--topics", "re-c", "--broker-ids", "1")
    assert by_file == by_name
    assert by_file[0] == 0 and by_file[1].splitlines()[-1] == reassignment(("re-c", 0, [1]))
    code, _, err = run(capsys, server, "reassign", "--generate", "--topics", "re-c")
    assert (code, err) == (1, "placement-sim: --generate needs --broker-ids\n")
    code, _, err = run(capsys, server, "reassign", "--verify", str(tmp_path / "missing.json"))
    assert (code, err) == (
        1,
        f"placement-sim: cannot read {tmp_path / 'missing.json'}: No such file or directory\n",
    )
