"""A reassignment of every partition of a big topic does not hold up other clients: AlterPartitionReassignments
is worked through in turns of the event loop and slices of the election service, its answer and
ListPartitionReassignments' encoded off the loop. Another client's ApiVersions is answered within 50 ms
meanwhile (the test waits on a socket, so the server thread has the interpreter)."""

from __future__ import annotations

import pytest

from controller.embedded import ServerThread
from tests.controller.server.test_fairness import STALL, create_topics
from tests.support.probe import LatencyProbe
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

#: Measures how long other clients wait: run after the rest of the suite, with nothing beside it.
pytestmark = pytest.mark.alone

PARTITIONS = 30_000


def test_reassigning_every_partition_of_a_big_topic_does_not_stall_others() -> None:
    properties = {"simulator.max.partitions": "200000", "simulator.placement.max.replicas": "1000000"}
    with ServerThread.start(seed=1, clock="virtual", properties=properties) as server:
        topics = [{"Name": "wide", "NumPartitions": PARTITIONS, "ReplicationFactor": 3}]
        assert {t["ErrorCode"] for t in create_topics(server.bootstrap, topics)["Topics"]} == {0}
        current = server.call(
            lambda: [list(p.replicas) for p in server.server.controller.cluster.topics["wide"].partitions]
        )
        brokers = sorted({b for rs in current for b in rs})
        # Each partition's last replica goes to a broker it does not have: one adding, one removing.
        targets = [rs[:-1] + [next(b for b in brokers if b not in rs)] for rs in current]
        request = {
            "TimeoutMs": 60_000,
            "AllowReplicationFactorChange": True,
            "Topics": [
                {
                    "Name": "wide",
                    "Partitions": [{"PartitionIndex": i, "Replicas": t} for i, t in enumerate(targets)],
                }
            ],
        }
        sock = raw_connect(server.bootstrap, timeout=120)
        with LatencyProbe(server.bootstrap) as probe:
            sock.sendall(request_frame(45, 1, request, correlation_id=1))
            altered = read_response(sock)
            sock.sendall(request_frame(46, 0, {"TimeoutMs": 60_000, "Topics": None}, correlation_id=2))
            listed = read_response(sock)
        sock.close()
    assert altered is not None and listed is not None
    answer = SCHEMAS.response(45).decode(altered[5:], 1)
    [topic] = answer["Responses"]
    assert {p["ErrorCode"] for p in topic["Partitions"]} == {0} and len(topic["Partitions"]) == PARTITIONS
    ongoing = SCHEMAS.response(46).decode(listed[5:], 0)
    [listing] = ongoing["Topics"]
    assert [p["PartitionIndex"] for p in listing["Partitions"]] == list(range(PARTITIONS))
    assert all(
        p["Replicas"] == t + [rs[-1]] and p["AddingReplicas"] == [t[-1]] and p["RemovingReplicas"] == [rs[-1]]
        for p, t, rs in zip(listing["Partitions"], targets, current, strict=True)
    )
    probe.assert_served(within=STALL)
