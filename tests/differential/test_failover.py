"""A broker's failure on the real Kafka and on the simulator, compared at settled points: leaders, ISR and
leader epochs (Metadata), high watermarks and log ends (ListOffsets), the records a consumer reads back
from the new leader (Fetch), and the epochs' end offsets (OffsetForLeaderEpoch) at leaders and followers.

The real node is SIGKILLed (``crash``), SIGSTOPped (``hang``) or SIGTERMed (``controlled``: Kafka's
controlled shutdown); the simulator's broker is stopped with the matching ``stop_broker`` mode. Each
comparison fails on any difference docs/fidelity.md does not list.
"""

from __future__ import annotations

import pytest

from harness.differential.batches import BatchSpec, RecordSpec
from harness.differential.model import Now, Records, Topic, TopicModel
from harness.differential.session import DifferentialSession, Step

ASSIGNMENT = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]


def _produce(session: DifferentialSession, partition: int, values: list[bytes]) -> None:
    batch = BatchSpec(records=tuple(RecordSpec(value=v) for v in values), base_timestamp=Now(0))
    data = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 10000,
        "TopicData": [
            {"Name": Topic("orders"), "PartitionData": [{"Index": partition, "Records": Records((batch,))}]}
        ],
    }
    result = session.run(Step("Produce", 9, data, broker=session.model.leader("orders", partition)))
    assert result.kafka.body["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0, result.kafka


def _reads(session: DifferentialSession) -> None:
    """Every partition at its leader and at a follower: offsets, records, epochs."""
    model = session.model
    for p in range(len(ASSIGNMENT)):
        leader = model.leader("orders", p)
        for timestamp in (-1, -2, -3):
            session.run(
                Step(
                    "ListOffsets",
                    9,
                    {
                        "ReplicaId": -1,
                        "IsolationLevel": 0,
                        "Topics": [
                            {
                                "Name": Topic("orders"),
                                "Partitions": [
                                    {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": timestamp}
                                ],
                            }
                        ],
                    },
                    broker=leader,
                )
            )
        fetched = session.run(
            Step(
                "Fetch",
                12,
                {
                    "ReplicaId": -1,
                    "MaxWaitMs": 0,
                    "MinBytes": 0,
                    "MaxBytes": 1 << 20,
                    "IsolationLevel": 0,
                    "SessionId": 0,
                    "SessionEpoch": -1,
                    "Topics": [
                        {
                            "Topic": Topic("orders"),
                            "Partitions": [
                                {
                                    "Partition": p,
                                    "CurrentLeaderEpoch": -1,
                                    "FetchOffset": 0,
                                    "LastFetchedEpoch": -1,
                                    "LogStartOffset": -1,
                                    "PartitionMaxBytes": 1 << 20,
                                }
                            ],
                        }
                    ],
                    "ForgottenTopicsData": [],
                    "RackId": "",
                },
                broker=leader,
            )
        )
        assert fetched.kafka.body["Responses"][0]["Partitions"][0]["Records"], (
            "Kafka's leader returned no records"
        )
        for broker in (leader, *[b for b in model.live_brokers() if b != leader][:1]):
            session.run(
                Step(
                    "OffsetForLeaderEpoch",
                    4,
                    {
                        "ReplicaId": -1,
                        "Topics": [
                            {
                                "Topic": Topic("orders"),
                                "Partitions": [{"Partition": p, "CurrentLeaderEpoch": -1, "LeaderEpoch": 0}],
                            }
                        ],
                    },
                    broker=broker,
                )
            )


def _orders(session: DifferentialSession, metadata: dict) -> dict:
    [topic] = [t for t in metadata["Topics"] if t["Name"] == session.kafka.names.prefix + "orders"]
    return topic


@pytest.mark.parametrize("differential", ["three-racks"], indirect=True)
@pytest.mark.parametrize("mode", ["crash", "hang", "controlled"])
def test_a_broker_failure_settles_as_on_kafka(differential: DifferentialSession, mode: str) -> None:
    session = differential
    created = session.run(
        Step(
            "CreateTopics",
            7,
            {
                "Topics": [
                    {
                        "Name": Topic("orders"),
                        "NumPartitions": -1,
                        "ReplicationFactor": -1,
                        "Assignments": [
                            {"PartitionIndex": i, "BrokerIds": r} for i, r in enumerate(ASSIGNMENT)
                        ],
                        "Configs": [],
                    }
                ],
                "timeoutMs": 30000,
                "validateOnly": False,
            },
        )
    )
    assert created.kafka.body["Topics"][0]["ErrorCode"] == 0, created.kafka
    session.model.topics["orders"] = TopicModel("orders", 3, [list(r) for r in ASSIGNMENT])
    for p in range(3):
        _produce(session, p, [b"first-%d-%d" % (p, i) for i in range(3)])
    _reads(session)

    settled = session.fail(0, mode)
    topic = _orders(session, settled.kafka.body)
    assert all(p["LeaderId"] != 0 for p in topic["Partitions"]), "Kafka's leaders did not move off broker 0"
    for p in range(3):
        _produce(session, p, [b"during-%d" % p])
    _reads(session)

    back = session.recover(0)
    topic = _orders(session, back.kafka.body)
    assert all(sorted(p["IsrNodes"]) == [0, 1, 2] for p in topic["Partitions"])
    _reads(session)
