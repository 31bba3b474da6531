"""The differential harness's own parts, without a Kafka cluster: the fidelity table as the harness reads
it, the normalization of answers, and the batches it builds (read back by the simulator's own reader and
by its own)."""

from __future__ import annotations

import uuid

import pytest

from controller.records.batch import read_header
from controller.records.checks import _stored_crc  # noqa: PLC2701 - the CRC as the simulator reads it
from controller.records.records import read_batch_records
from harness.differential.batches import CODECS, BatchSpec, RecordSpec, build, parse_batches
from harness.differential.fidelity import FIDELITY_DOC, Difference, FidelityTable, compile_pattern
from harness.differential.normalize import Names, differences, flatten, normalize
from harness.differential.session import DifferentialSession, Step, UnlistedDifferences
from harness.differential.targets import Outcome


def test_the_fidelity_table_reads_and_every_pattern_compiles() -> None:
    table = FidelityTable.load()
    assert len(table.rows) >= 10
    assert all(row.why.strip() for row in table.rows)
    assert sum(len(row.patterns) for row in table.rows) >= 10
    text = FIDELITY_DOC.read_text()
    assert text.count("| area | what Kafka does | what the simulator does | why |") == 1


def test_a_pattern_covers_its_api_versions_and_paths_only() -> None:
    pattern = compile_pattern("Fetch v4-11:Responses[*].Partitions[*].AbortedTransactions")
    hit = Difference("Fetch", 7, "Responses[t0].Partitions[0].AbortedTransactions", [], None)
    assert pattern.matches(hit)
    assert not pattern.matches(Difference("Fetch", 12, hit.path, [], None))
    assert not pattern.matches(Difference("Produce", 7, hit.path, [], None))
    assert not pattern.matches(Difference("Fetch", 7, "Responses[t0].Partitions[0].ErrorCode", 0, 1))
    with pytest.raises(ValueError, match="is not"):
        compile_pattern("no colon here")


def test_a_table_with_two_tables_or_an_empty_cell_is_refused(tmp_path) -> None:
    header = "| area | what Kafka does | what the simulator does | why |\n|---|---|---|---|\n"
    (tmp_path / "two.md").write_text(header + "| a | b | c | d |\n\n" + header)
    with pytest.raises(ValueError, match="exactly one table"):
        FidelityTable.load(tmp_path / "two.md")
    (tmp_path / "empty.md").write_text(header + "| `Fetch:x` | b |  | d |\n")
    with pytest.raises(ValueError, match="empty cell"):
        FidelityTable.load(tmp_path / "empty.md")


def test_answers_are_normalized_by_what_their_values_stand_for() -> None:
    topic_id = uuid.uuid4()
    names = Names(prefix="d1x-", cluster_id="abc", topic_ids={topic_id: "t0"}, producer_ids={4000: "<pid:1>"})
    names.ports = {9092: 0}
    names.brokers = frozenset({0})
    answer = {
        "ThrottleTimeMs": 12,
        "ClusterId": "abc",
        "ControllerId": 0,
        "Brokers": [{"NodeId": 0, "Host": "127.0.0.1", "Port": 9092}],
        "Topics": [
            {"Name": "d1x-t0", "TopicId": topic_id, "ErrorMessage": "d1x-t0 (abc) at 127.0.0.1:9092"},
            {"Name": "d1x-t1", "TopicId": uuid.UUID(int=0), "ErrorMessage": None},
        ],
        "ProducerId": 4000,
    }
    flat = flatten(normalize(answer, names))
    assert "ThrottleTimeMs" not in flat
    assert flat["ClusterId"] == "<cluster>"
    assert flat["ControllerId"] == "<a broker>"
    assert flat["Brokers[0].Port"] == "<port:0>"
    assert flat["Topics[t0].TopicId"] == "<id:t0>"
    assert flat["Topics[t0].ErrorMessage"] == "t0 (<cluster>) at 127.0.0.1:<port:0>"
    assert flat["Topics[t1].TopicId"] == "<zero-id>"
    assert flat["ProducerId"] == "<pid:1>"


def test_lists_are_keyed_by_their_identifying_field_and_scalars_keep_their_order() -> None:
    kafka = flatten({"Topics": [{"Name": "a", "Replicas": [1, 2]}, {"Name": "b", "Replicas": [2, 1]}]})
    sim = flatten({"Topics": [{"Name": "b", "Replicas": [2, 1]}, {"Name": "a", "Replicas": [2, 1]}]})
    assert list(differences(kafka, sim)) == [("Topics[a].Replicas", [1, 2], [2, 1])]


@pytest.mark.parametrize("codec", CODECS)
def test_built_batches_read_back_by_the_simulator_and_by_the_harness(codec: str) -> None:
    records = (
        RecordSpec(key=b"k", value=b"v1", headers=(("h", b"x"),)),
        RecordSpec(value=None, timestamp_delta=3),
    )
    data = build(
        BatchSpec(
            records=records,
            base_timestamp=1_700_000_000_000,
            codec=codec,
            producer_id=7,
            producer_epoch=1,
            base_sequence=4,
        )
    )
    header = read_header(data)
    assert _stored_crc(memoryview(data)) == header.crc
    read = read_batch_records(data, header)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in read] == [
        (0, 1_700_000_000_000, b"k", b"v1"),
        (1, 1_700_000_000_003, None, None),
    ]
    [batch] = parse_batches(data)
    assert batch["CrcValid"] and batch["Codec"] == CODECS.index(codec) and batch["ProducerId"] == 7
    assert [r["Value"] for r in batch["Records"]] == [b"v1", None]
    assert parse_batches(build(BatchSpec(corrupt_crc=True)))[0]["CrcValid"] is False


def test_an_unlisted_difference_fails_and_a_listed_one_is_counted(tmp_path) -> None:
    doc = tmp_path / "fidelity.md"
    doc.write_text(
        "| area | what Kafka does | what the simulator does | why |\n|---|---|---|---|\n"
        "| `Metadata:Brokers[*].Rack` | a rack | none | a reason |\n"
    )
    session = DifferentialSession.__new__(DifferentialSession)
    DifferentialSession.__init__(session, None, None, "single", None, FidelityTable.load(doc))  # type: ignore[arg-type]
    session.kafka = session.sim = type("S", (), {"names": Names()})()
    step = Step("Metadata", 12, {})
    listed = session.compare(
        step,
        Outcome("answer", {"Brokers": [{"NodeId": 0, "Rack": "a"}]}),
        Outcome("answer", {"Brokers": [{"NodeId": 0, "Rack": None}]}),
    )
    assert [d.path for d, _ in listed.listed] == ["Brokers[0].Rack"] and not listed.unlisted
    with pytest.raises(UnlistedDifferences, match=r"Brokers\[0\].Port: Kafka 1, simulator 2"):
        session.compare(
            step,
            Outcome("answer", {"Brokers": [{"NodeId": 0, "Port": 1}]}),
            Outcome("answer", {"Brokers": [{"NodeId": 0, "Port": 2}]}),
        )
    assert session.counts["Metadata"].steps == 2
    assert session.counts["Metadata"].unlisted == 1


def test_a_settled_point_waits_until_the_leader_kafka_names_leads() -> None:
    """A Kafka broker names itself a partition's new leader in Metadata a moment before its replica
    manager leads it (a Produce then gets NOT_LEADER_OR_FOLLOWER: the crash failover case once did). The
    harness asks the named leader for the partition's end, at the named epoch, until it answers for it."""
    import asyncio

    from harness.differential.model import Model

    asked: list[tuple[int, int]] = []
    codes = iter([6, 76, 0])

    class Kafka:
        names = Names(prefix="p1-")

        async def send(self, broker: int, api: str, version: int, data: dict, **_: object) -> Outcome:
            if api == "Metadata":
                partitions = [{"PartitionIndex": 0, "LeaderId": 1, "LeaderEpoch": 4}]
                other = [{"PartitionIndex": 0, "LeaderId": 0, "LeaderEpoch": 0}]
                return Outcome(
                    "answer",
                    {
                        "Topics": [
                            {"Name": "p1-orders", "Partitions": partitions},
                            {"Name": "someone-else", "Partitions": other},
                        ]
                    },
                )
            assert api == "ListOffsets"
            [topic] = data["Topics"]
            asked.append((broker, topic["Partitions"][0]["CurrentLeaderEpoch"]))
            answer = {"Topics": [{"Name": topic["Name"], "Partitions": [{"ErrorCode": next(codes)}]}]}
            return Outcome("answer", answer)

    session = DifferentialSession.__new__(DifferentialSession)
    DifferentialSession.__init__(session, Kafka(), None, "three-racks", None, None)  # type: ignore[arg-type]
    session.model = Model("three-racks", [0, 1, 2])
    session.model.failed[0] = "crash"
    asyncio.run(session._leaders_lead(deadline=float("inf")))
    assert asked == [(1, 4), (1, 4), (1, 4)]
