"""franz-go (Go: ``kgo`` 1.22, ``kadm`` 1.20, as harness/go/go.mod pins them) against the simulator.

``harness/go/cmd/franzcheck`` is a small Go program that `make reference` builds; each test runs one of
its commands against a cluster of its own (three brokers on the real clock, fenced 1.5 s after their last
heartbeat, as the data path tests have it), crashes a broker when the program asks for it, and checks
what the program was told and read against the cluster itself: every acknowledged record is in the
leader's log at the offset the client was told, and comes back to a consumer.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from controller.embedded import ServerThread
from harness.golang import run_driven
from protocol.client import BlockingClient
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import new_topic, readable, start_cluster

CLIENT = "franz-go 1.22 (kgo, kadm 1.20)"
#: The Go program's own bound, and the test's (a little longer: the program reports its own time-out).
GO_TIMEOUT = "90s"
TIMEOUT = 120.0
#: Records per half of a run (before and after the crash), spread over the topic's three partitions.
RECORDS = 300
LAYOUT = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]


@pytest.fixture
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster(**{"group.initial.rebalance.delay.ms": 0}) as started:
        yield started
        wire_log.assert_clean(started)


def franzcheck(server: ServerThread, command: str, *args: str, on_wait: dict | None = None) -> dict[str, Any]:
    argv = ["-bootstrap", server.bootstrap, "-timeout", GO_TIMEOUT, *args, command]
    return run_driven("franzcheck", argv, on_wait or {}, timeout=TIMEOUT)


def records(listed: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return [(r["p"], r["o"], r["v"]) for r in listed]


def assert_in_the_logs(server: ServerThread, topic: str, acked: list[tuple[int, int, str]]) -> None:
    """The leader's log of each partition holds exactly the acknowledged records, at their offsets."""
    for partition in range(len(LAYOUT)):
        logged = [(offset, value) for offset, _, value in readable(server, topic, partition)]
        told = sorted((o, v.encode()) for p, o, v in acked if p == partition)
        assert logged == told, partition
    assert server.lost_records() == []


def test_admin_calls(server: ServerThread) -> None:
    r = franzcheck(server, "admin")

    with BlockingClient.connect(server.bootstrap, request_timeout=10.0) as client:
        metadata = client.send("MetadataRequest", {"Topics": [{"Name": "go-admin"}]}, version=12)
    topic_id = metadata["Topics"][0]["TopicId"]
    assert r["create_topics"]["go-admin"] == {
        "err": "",
        "partitions": 3,
        "replication_factor": 3,
        "id": base64.b64encode(topic_id.bytes).decode(),
    }
    assert r["create_topics"]["go-admin-2"]["err"] == ""
    assert r["create_existing"] == "TOPIC_ALREADY_EXISTS"
    assert r["create_rf_7"] == "INVALID_REPLICATION_FACTOR"
    assert r["brokers"] == [{"id": b, "rack": ""} for b in range(3)]
    assert r["describe_cluster"] == {
        "err": "",
        "cluster_id": "placement-sim",
        "controller": 0,
        "brokers": [0, 1, 2],
    }

    # Metadata as kadm read it after CreatePartitions added two: every partition healthy, led by its
    # first replica at epoch 0; go-admin's partitions 1-4 (which nothing moved since) as the cluster has them.
    assert r["create_partitions"] == ""
    assert sorted(r["topics"]) == ["go-admin", "go-admin-2"]
    assert sorted(r["topics"]["go-admin"], key=int) == ["0", "1", "2", "3", "4"]
    assert sorted(r["topics"]["go-admin-2"], key=int) == ["0", "1", "2"]
    for partitions in r["topics"].values():
        for view in partitions.values():
            assert view["err"] == "" and view["epoch"] == 0
            assert view["leader"] == view["replicas"][0] and sorted(view["isr"]) == sorted(view["replicas"])
    for p in range(1, 5):
        state = server.partition_state("go-admin", p)
        view = r["topics"]["go-admin"][str(p)]
        assert (view["leader"], view["epoch"], tuple(view["replicas"]), tuple(view["isr"])) == (
            state.leader,
            state.leader_epoch,
            state.replicas,
            state.isr,
        )

    assert r["configs"] == {
        "err": "",
        "retention.ms": {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"},
        "retention.bytes": {"value": "-1", "source": "DEFAULT_CONFIG"},
    }
    assert r["alter_configs"] == ""
    assert r["configs_altered"]["retention.bytes"] == {"value": "1048576", "source": "DYNAMIC_TOPIC_CONFIG"}

    assert r["produced_offsets"] == list(range(10))
    assert r["start_offsets"] == {str(p): 0 for p in range(5)}
    assert r["end_offsets"] == {"0": 10, **{str(p): 0 for p in range(1, 5)}}
    assert r["delete_records"] == {"err": "", "low_watermark": 4}
    assert r["start_offsets_after_delete"] == {"0": 4, **{str(p): 0 for p in range(1, 5)}}
    [producer] = r["producers"]
    assert (producer["partition"], producer["epoch"], producer["last_sequence"]) == (0, 0, 9)

    assert r["elect_preferred"] == {
        "go-admin-0": "ELECTION_NOT_NEEDED",
        "go-admin-1": "ELECTION_NOT_NEEDED",
        "go-none-0": "UNKNOWN_TOPIC_OR_PARTITION",
    }
    assert r["reassign"]["err"] == ""
    assert r["replicas_after_reassign"] == r["reassign"]["target"]
    assert list(server.partition_state("go-admin", 0).replicas) == r["reassign"]["target"]
    assert r["log_dir_holders"] == [0, 1, 2]

    assert r["commit"] == "" and r["fetched_offset"] == 7
    assert r["groups"] == ["go-admin-group"]
    assert r["group_state"] == {"err": "", "state": "Empty", "members": 0}
    assert r["delete_group"] == ""
    assert server.group_state("go-admin-group") is None
    assert r["delete_topics"] == "" and r["topics_after_delete"] == ["go-admin"]


def test_a_leader_crash_loses_no_acknowledged_record_and_a_consumer_reads_each_once(
    server: ServerThread,
) -> None:
    topic = new_topic(server, LAYOUT)
    crashed: list[int] = []

    def crash(message: dict[str, Any]) -> None:
        assert message["leaders"] == {"0": 0, "1": 1, "2": 2}
        server.stop_broker(0, "crash")
        crashed.append(0)

    args = ("-topic", topic, "-partitions", "3", "-records", str(RECORDS))
    r = franzcheck(server, "failover", *args, on_wait={"crash": crash})
    assert crashed == [0]
    assert r["produce_errors"] == [] and r["fetch_errors"] == []
    acked = records(r["acked"])
    assert sorted(v for _, _, v in acked) == sorted(f"v{i}" for i in range(2 * RECORDS))
    # Partition 0 failed over to the next in-sync replica, one epoch up; the others kept their leaders.
    assert r["leaders_after"] == {"0": 1, "1": 1, "2": 2}
    assert server.partition_state(topic, 0).leader_epoch == 1
    assert_in_the_logs(server, topic, acked)
    # The consumer (assigned partitions, reading through the crash) got each record once, in order.
    consumed = records(r["consumed"])
    assert sorted(consumed) == sorted(acked)
    for partition in range(3):
        offsets = [o for p, o, _ in consumed if p == partition]
        assert offsets == sorted(offsets) and len(offsets) == len(set(offsets))


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_goes_on_through_a_coordinator_crash(server: ServerThread, protocol: str) -> None:
    """``consumer``: franz-go's KIP-848 group (kgo's ServerSideBalancer), the coordinator assigning."""
    topic = new_topic(server, LAYOUT)
    group = f"franz-group-{protocol}"
    crashed: list[int] = []

    def crash(message: dict[str, Any]) -> None:
        assert message["read"] >= RECORDS // 2
        server.stop_broker(message["coordinator"], "crash")
        crashed.append(message["coordinator"])

    r = franzcheck(
        server,
        "group",
        *("-topic", topic, "-partitions", "3", "-records", str(RECORDS), "-group", group),
        *(["-server-side"] if protocol == "consumer" else []),
        on_wait={"crash-coordinator": crash},
    )
    assert crashed == [r["coordinator_before"]] and r["coordinator_after"] != r["coordinator_before"]
    assert r["produce_errors"] == []
    acked = records(r["acked"])
    assert sorted(v for _, _, v in acked) == sorted(f"g{i}" for i in range(2 * RECORDS))
    assert_in_the_logs(server, topic, acked)

    events = sorted(r["events"], key=lambda e: e["seq"])
    reads = {(e["p"], e["o"], e["v"]) for e in events if e["kind"] == "read"}
    assert reads == set(acked)  # every acknowledged record was read, and nothing else
    # At least once: a record may be read again only if no successful commit had covered it yet.
    covered: dict[int, int] = {}
    read_again_after_commit = []
    for e in events:
        if e["kind"] == "commit":
            covered[e["p"]] = max(covered.get(e["p"], 0), e["o"])
        elif e["kind"] == "read" and e["o"] < covered.get(e["p"], 0):
            read_again_after_commit.append(e)
    assert read_again_after_commit == []
    ends = {str(p): max(o for q, o, _ in acked if q == p) + 1 for p in range(3)}
    assert r["committed"] == ends
    assert server.committed_offsets(group) == {(topic, p): ends[str(p)] for p in range(3)}
    assert server.lost_commits() == []
    state = server.group_state(group)
    assert state is not None and state.get("type", "classic") == protocol
