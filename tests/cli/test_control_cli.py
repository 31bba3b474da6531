"""``placement-sim broker|partitions|elect|events|faults|clock`` against a running simulator: a failover
driven from the command line alone (separate processes, real sockets) gives the event log the same steps
give in-process, and each command prints and exits as documented."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from placement_sim.cli.main import main
from protocol.client import BlockingClient
from tests.support.serve import ROOT, served

PROPERTIES = {
    "simulator.clock": "virtual",
    "simulator.brokers": "0:a,1:b,2:c",
    "replica.placer.class.name": "legacy",
}
CREATE = ("topics", "create", "orders", "--partitions", "3", "--replication-factor", "3")


def command(bootstrap: str, *argv: str) -> tuple[int, str, str]:
    """The command in a process of its own, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "placement_sim.cli.main", *argv, "--bootstrap", bootstrap, "--timeout", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_failover_from_the_command_line_logs_what_the_same_steps_log_in_process():
    with served(PROPERTIES) as bootstrap:
        assert command(bootstrap, *CREATE)[0] == 0
        assert command(bootstrap, "broker", "stop", "0", "--mode", "crash") == (
            0,
            "Broker 0 stopped (crash).\n",
            "",
        )
        assert command(bootstrap, "clock", "advance", "9000") == (0, "Clock at 9000 ms.\n", "")
        code, table, _ = command(bootstrap, "partitions", "describe")
        assert code == 0
        code, log, _ = command(bootstrap, "events")
        assert code == 0
    with ServerThread.start(properties=PROPERTIES, seed=1) as server:
        assert main([*CREATE, "--bootstrap", server.bootstrap]) == 0
        server.stop_broker(0, "crash")
        server.advance(9000)
        assert log.splitlines() == [str(e) for e in server.events()]
        states = [server.partition_state("orders", p) for p in range(3)]
    assert "broker 0 fenced: no heartbeat for broker.session.timeout.ms=9000" in log
    assert table.splitlines() == [
        "TOPIC   PARTITION  LEADER  EPOCH  REPLICAS   ISR     STATUS  HW  LEO  FOLLOWER OFFSETS",
        *(
            f"orders  {s.partition}          {s.leader}       {s.leader_epoch}/{s.partition_epoch}    "
            f"[{', '.join(map(str, s.replicas))}]  [{', '.join(map(str, s.isr))}]  Online  0   0    "
            f"[{', '.join(f'{b}:0' for b in s.replicas if b != s.leader)}]"
            for s in states
        ),
    ]
    assert all(s.leader not in (0, -1) and 0 not in s.isr for s in states)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(properties=PROPERTIES, seed=1) as started:
        with BlockingClient.connect(started.bootstrap, request_timeout=10) as client:
            client.send(
                "CreateTopicsRequest",
                {
                    "Topics": [
                        {
                            "Name": "orders",
                            "NumPartitions": 3,
                            "ReplicationFactor": 3,
                            "Assignments": [],
                            "Configs": [],
                        }
                    ],
                    "timeoutMs": 5000,
                    "validateOnly": False,
                },
            )
        yield started


def run(capsys: pytest.CaptureFixture[str], server: ServerThread, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--bootstrap-server", server.bootstrap, "--timeout", "10"])
    out, err = capsys.readouterr()
    return code, out, err


def test_brokers_come_and_go(capsys, server):
    assert run(capsys, server, "broker", "add", "5", "--rack", "d") == (0, "Broker 5 added on rack d.\n", "")
    assert run(capsys, server, "broker", "stop", "5", "--mode", "hang") == (
        0,
        "Broker 5 stopped (hang).\n",
        "",
    )
    assert server.call(lambda: server.server.controller.cluster.broker_state(5).process.value) == "hung"
    assert run(capsys, server, "broker", "start", "5") == (0, "Broker 5 started.\n", "")
    assert run(capsys, server, "broker", "remove", "5") == (0, "Broker 5 removed.\n", "")
    assert run(capsys, server, "broker", "remove", "5") == (
        1,
        "",
        "placement-sim: BROKER_NOT_AVAILABLE (8): no broker 5 is registered\n",
    )


def test_elect_reports_each_partition(capsys, server):
    code, out, err = run(capsys, server, "elect", "--preferred", "orders:1", "nope:0")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "orders-1: no election needed",
        "nope-0: UNKNOWN_TOPIC_OR_PARTITION (3): No such topic as nope",
    ]
    assert run(capsys, server, "elect", "--unclean", "orders") == (
        0,
        "orders-0: no election needed\norders-1: no election needed\norders-2: no election needed\n",
        "",
    )


def test_faults_from_the_command_line(capsys, server):
    code, out, err = run(
        capsys,
        server,
        "faults",
        "add",
        "error=NOT_CONTROLLER",
        "api=CreateTopics",
        "once;",
        "drop",
        "client=x",
    )
    assert (code, err) == (0, "")
    first, second = (f.id for f in server.faults)
    assert (
        out
        == f"Added fault {first}: error=NOT_CONTROLLER api=CreateTopics once\nAdded fault {second}: drop client=x\n"
    )
    code, out, _ = run(capsys, server, "topics", "create", "late", "-p", "1", "-r", "1")
    assert code == 1
    assert run(capsys, server, "faults", "list") == (
        0,
        "  ID   FIRED   CALLS  FAULT\n"
        f"{first:>4}       1       1  error=NOT_CONTROLLER api=CreateTopics once\n"
        f"{second:>4}       0       0  drop client=x\n",
        "",
    )
    assert run(capsys, server, "faults", "clear", str(second)) == (0, "Cleared 1 fault(s).\n", "")
    assert run(capsys, server, "faults", "clear") == (0, "Cleared 1 fault(s).\n", "")
    assert run(capsys, server, "faults", "add", "drop", "p=7") == (
        2,
        "",
        "placement-sim: fault 1: a probability is between 0 and 1, not 7.0\n",
    )


def test_events_follow_new_events_as_they_come(server):
    start = server.events()[-1].seq
    follower = subprocess.Popen(
        [sys.executable, "-m", "placement_sim.cli.main", "events", "--follow", "--since", str(start),
         "--interval", "0.05", "--bootstrap", server.bootstrap],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        server.add_broker(6)
        server.advance(2000)
        expected = [str(e) for e in server.events(start)]
        assert len(expected) >= 2
        assert follower.stdout is not None
        assert [follower.stdout.readline().rstrip("\n") for _ in expected] == expected
    finally:
        follower.terminate()
        follower.wait(timeout=30)
    server.remove_broker(6)


def test_clock_on_a_real_clock_is_refused(capsys):
    with ServerThread.start(placer="legacy", seed=1) as real:
        assert run(capsys, real, "clock", "advance", "5") == (
            1,
            "",
            "placement-sim: INVALID_REQUEST (42): advance() needs simulator.clock=virtual; a real clock moves by itself\n",
        )


def test_describe_shows_the_eligible_leader_replicas_and_the_last_known_leader(capsys):
    """With eligible leader replicas on, a partition whose replicas all crashed shows its ELR and its
    last known leader (the last known ELR); once that leader is back and elected, both empty and the two
    columns go."""
    properties = {
        **PROPERTIES,
        "simulator.brokers": "0:a,1:b",
        "simulator.eligible.leader.replicas.version": "1",
    }
    with ServerThread.start(properties=properties, seed=1) as server:
        argv = ("topics", "create", "solo", "--partitions", "1", "--replication-factor", "2")
        assert main([*argv, "--bootstrap", server.bootstrap]) == 0
        leader = server.partition_state("solo", 0).leader
        other = 1 - leader
        server.stop_broker(other, "crash")
        server.stop_broker(leader, "crash")
        server.advance(20_000)
        capsys.readouterr()
        code, out, _ = run(capsys, server, "partitions", "describe", "solo")
        header, row = out.splitlines()
        assert code == 0
        assert header.split("  ")[-2:] == ["ELR", "LAST KNOWN ELR"]
        assert row.startswith("solo   0          none")
        assert row.endswith(f"[{leader}]  [{leader}]")
        server.start_broker(leader)
        server.advance(5_000)
        code, out, _ = run(capsys, server, "partitions", "describe", "solo")
        header, row = out.splitlines()
        assert (code, header.split()[-2:], row.split()[2]) == (0, ["FOLLOWER", "OFFSETS"], str(leader))
