"""Metadata answers assembled from cached encoded entries: the same bytes as encoding the whole answer,
each topic's entry encoded once per topic image and version, and the cache following every change."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from controller.handlers import metadata
from protocol import load_schemas
from protocol.client import BlockingClient
from protocol.framing import parse_response_header, response_header_version
from tests.support.rawwire import raw_connect, read_response, request_frame

SCHEMAS = load_schemas()
RESPONSE = SCHEMAS.response(3)
BROKERS = [(i, f"rack-{i % 3}", i == 5) for i in range(6)]


def start() -> ServerThread:
    """6 brokers in 3 racks (broker 5 fenced), seed 3, a few topics: one with replicas on broker 5."""
    server = ServerThread.start(placer="striped", brokers=BROKERS, seed=3)
    topics = [{"Name": f"t{i}", "NumPartitions": 1 + i % 4, "ReplicationFactor": 1 + i % 3} for i in range(6)]
    manual = [{"PartitionIndex": 0, "BrokerIds": [5, 1]}, {"PartitionIndex": 1, "BrokerIds": [2, 5]}]
    topics.append({"Name": "manual", "NumPartitions": -1, "ReplicationFactor": -1, "Assignments": manual})
    with BlockingClient.connect(server.bootstrap) as client:
        request = {"Topics": [{"Assignments": [], "Configs": [], **t} for t in topics], "timeoutMs": 5000}
        assert {t["ErrorCode"] for t in client.send("CreateTopicsRequest", request)["Topics"]} == {0}
    return server


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with start() as started:
        yield started


def ask(server: ServerThread, version: int, request: dict, correlation: int = 7) -> bytes:
    """The answer's body, raw."""
    with raw_connect(server.bootstrap) as sock:
        sock.sendall(request_frame(3, version, request, correlation))
        frame = read_response(sock)
    assert frame is not None
    got, offset = parse_response_header(frame, response_header_version(SCHEMAS, 3, version))
    assert got == correlation
    return frame[offset:]


def requests(version: int, ids: dict[str, uuid.UUID]) -> list[dict]:
    names = [["t1"], ["t3", "nope", "t3", "manual"], ["manual", "t0", "t5"], []]
    out = [{"Topics": [{"Name": n} for n in group]} for group in names]
    if version >= 1:
        out.append({"Topics": None})
    if version >= 12:
        out.append(
            {"Topics": [{"Name": None, "TopicId": ids["t2"]}, {"Name": None, "TopicId": uuid.UUID(int=9)}]}
        )
    if version >= 4:
        out = [{**r, "AllowAutoTopicCreation": False} for r in out]
    return out


def topic_ids(server: ServerThread) -> dict[str, uuid.UUID]:
    return {t["Name"]: t["TopicId"] for t in RESPONSE.decode(ask(server, 12, {"Topics": None}), 12)["Topics"]}


@pytest.mark.parametrize("version", range(14))
def test_answers_are_the_encoding_of_what_they_say(server: ServerThread, version: int):
    for request in requests(version, topic_ids(server)):
        first = ask(server, version, request, correlation=1)
        assert ask(server, version, request, correlation=2) == first  # the second from the cache
        assert RESPONSE.encode(RESPONSE.decode(first, version), version) == first


#: Every operation of a topic (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS) and of the cluster (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS, IDEMPOTENT_WRITE), one bit per operation code.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


@pytest.mark.parametrize("version", [8, 9, 10, 11, 12, 13])
def test_authorized_operations_without_an_authorizer_are_every_operation(server: ServerThread, version: int):
    """Kafka without an authorizer answers every operation of the resource when asked, and its "not
    computed" marker when not; nothing else of the entries changes."""
    flags = {"IncludeTopicAuthorizedOperations": True}
    if version <= 10:
        flags["IncludeClusterAuthorizedOperations"] = True
    request = {"Topics": [{"Name": "t1"}, {"Name": "manual"}], "AllowAutoTopicCreation": False}
    asked = RESPONSE.decode(ask(server, version, {**request, **flags}), version)
    plain = RESPONSE.decode(ask(server, version, request), version)
    assert [t["TopicAuthorizedOperations"] for t in asked["Topics"]] == [TOPIC_OPERATIONS] * 2
    assert [t["TopicAuthorizedOperations"] for t in plain["Topics"]] == [-(2**31)] * 2
    if version <= 10:
        assert (asked["ClusterAuthorizedOperations"], plain["ClusterAuthorizedOperations"]) == (
            CLUSTER_OPERATIONS,
            -(2**31),
        )
    for topic in asked["Topics"]:
        topic["TopicAuthorizedOperations"] = -(2**31)
    asked.pop("ClusterAuthorizedOperations", None)
    plain.pop("ClusterAuthorizedOperations", None)
    assert asked == plain


@pytest.mark.parametrize("version", [12, 13])
def test_an_unknown_topic_id_has_no_authorized_operations(server: ServerThread, version: int):
    """Kafka computes the operations of the topics it resolved or was named (an unknown name has them too),
    not of an id it does not know: that entry keeps the "not computed" marker."""
    known = topic_ids(server)["t2"]
    request = {
        "Topics": [
            {"Name": None, "TopicId": known},
            {"Name": None, "TopicId": uuid.UUID(int=9)},
            {"Name": "no-such-topic"},
        ],
        "AllowAutoTopicCreation": False,
        "IncludeTopicAuthorizedOperations": True,
    }
    answer = RESPONSE.decode(ask(server, version, request), version)
    by_error = {(t["ErrorCode"], t["Name"]): t["TopicAuthorizedOperations"] for t in answer["Topics"]}
    assert by_error == {
        (0, "t2"): TOPIC_OPERATIONS,
        (100, None): -(2**31),
        (3, "no-such-topic"): TOPIC_OPERATIONS,
    }


def test_each_topic_is_encoded_once_per_image_and_version(monkeypatch: pytest.MonkeyPatch):
    encoded: Counter[tuple[str, int]] = Counter()
    encode = metadata._encoded_entry

    def counting(response, topic, alive, version, operations):  # type: ignore[no-untyped-def]
        encoded[topic.name, version] += 1
        return encode(response, topic, alive, version, operations)

    monkeypatch.setattr(metadata, "_encoded_entry", counting)
    with start() as server:
        for _ in range(3):
            for version in (0, 1, 9, 12):
                ask(server, version, {"Topics": None if version else []})
        assert set(encoded.values()) == {1} and len(encoded) == 7 * 4
        with BlockingClient.connect(server.bootstrap) as client:  # t1 changes: only it is encoded again
            request = {"Topics": [{"Name": "t1", "Count": 5, "Assignments": None}], "TimeoutMs": 5000}
            assert client.send("CreatePartitionsRequest", request)["Results"][0]["ErrorCode"] == 0
        answer = RESPONSE.decode(ask(server, 12, {"Topics": None}), 12)
        assert [len(t["Partitions"]) for t in answer["Topics"] if t["Name"] == "t1"] == [5]
        assert encoded[("t1", 12)] == 2 and encoded[("t2", 12)] == 1


def test_entries_and_brokers_follow_broker_changes():
    with start() as server:
        before = RESPONSE.decode(ask(server, 12, {"Topics": None}), 12)
        v0 = RESPONSE.decode(ask(server, 0, {"Topics": []}), 0)
        server.stop_broker(1, "crash")
        server.wait_until(lambda: server.broker_state(1) != "running", timeout=10)
        after = RESPONSE.decode(ask(server, 12, {"Topics": None}), 12)
        v0_after = RESPONSE.decode(ask(server, 0, {"Topics": []}), 0)
        server.add_broker(6, "rack-0")
        server.wait_until(lambda: server.broker_state(6) == "running", timeout=10)
        added = RESPONSE.decode(ask(server, 12, {"Topics": None}), 12)
    assert [b["NodeId"] for b in before["Brokers"]] == [0, 1, 2, 3, 4]
    assert [b["NodeId"] for b in after["Brokers"]] == [0, 2, 3, 4]
    assert [(b["NodeId"], b["Rack"]) for b in added["Brokers"]][-1] == (6, "rack-0")
    assert added["Topics"] == after["Topics"]
    [manual] = [t for t in after["Topics"] if t["Name"] == "manual"]
    assert [p["OfflineReplicas"] for p in manual["Partitions"]] == [[5, 1], [5]]
    [manual_v0] = [t for t in v0["Topics"] if t["Name"] == "manual"]
    [manual_v0_after] = [t for t in v0_after["Topics"] if t["Name"] == "manual"]
    assert [(p["ErrorCode"], p["LeaderId"], p["ReplicaNodes"]) for p in manual_v0["Partitions"]] == [
        (9, 1, [1]),  # REPLICA_NOT_AVAILABLE: v0 leaves the fenced broker out
        (9, 2, [2]),
    ]
    assert [(p["ErrorCode"], p["LeaderId"]) for p in manual_v0_after["Partitions"]] == [(5, -1), (9, 2)]


def test_entries_encoded_off_the_loop_are_the_same(monkeypatch: pytest.MonkeyPatch):
    """Past BIG, the entries are encoded in a worker thread and the answer assembled there: same bytes."""

    def answers(server: ServerThread) -> dict[int, list[dict]]:
        """Each answer decoded, without the ports (each server has its own), once its bytes are checked."""
        out: dict[int, list[dict]] = {}
        for version in (0, 9, 12, 13):
            for request in requests(version, ids):
                body = ask(server, version, request)
                decoded = RESPONSE.decode(body, version)
                assert RESPONSE.encode(decoded, version) == body
                for broker in decoded["Brokers"]:
                    del broker["Port"]
                out.setdefault(version, []).append(decoded)
        return out

    with start() as server:
        ids = topic_ids(server)
        inline = answers(server)
    monkeypatch.setattr(metadata, "BIG", 0)
    with start() as server:
        assert topic_ids(server) == ids
        assert answers(server) == inline
