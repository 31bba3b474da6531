"""Transactions on the real Kafka and on the simulator, step by step: a transactional producer's id,
partitions added, batches written, offsets added and committed for a group, one transaction committed
and one aborted; after each step what a read_committed and a read_uncommitted consumer fetch, the last
stable offset, the coordinator's description and listing, and the group's committed offsets. Each step
fails on any difference docs/fidelity.md does not list; the random sequences (test_sequences.py) mix the
same requests (harness/differential/generators.py, "transactions") with everything else.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.differential.batches import BatchSpec, RecordSpec
from harness.differential.model import Group, Now, Pid, Records, Topic, TopicModel
from harness.differential.session import DifferentialSession, Step

TX = Group("tx")


def _producer(label: str, epoch: int = 0) -> dict[str, Any]:
    return {"ProducerId": Pid(label), "ProducerEpoch": epoch}


def _batch(label: str, sequence: int, values: list[bytes]) -> Records:
    return Records(
        (
            BatchSpec(
                records=tuple(RecordSpec(value=v) for v in values),
                base_timestamp=Now(0),
                transactional=True,
                producer_id=Pid(label),
                producer_epoch=0,
                base_sequence=sequence,
            ),
        )
    )


def _reads(session: DifferentialSession) -> dict[int, Any]:
    """What each isolation level fetches of partition 0, and its offsets (the last stable one too)."""
    fetched = {}
    for isolation in (0, 1):
        result = session.run(
            Step(
                "Fetch",
                12,
                {
                    "ClusterId": None,
                    "ReplicaId": -1,
                    "MaxWaitMs": 0,
                    "MinBytes": 0,
                    "MaxBytes": 1048576,
                    "IsolationLevel": isolation,
                    "SessionId": 0,
                    "SessionEpoch": -1,
                    "Topics": [
                        {
                            "Topic": Topic("pay"),
                            "Partitions": [
                                {
                                    "Partition": 0,
                                    "CurrentLeaderEpoch": -1,
                                    "FetchOffset": 0,
                                    "LastFetchedEpoch": -1,
                                    "LogStartOffset": -1,
                                    "PartitionMaxBytes": 1048576,
                                }
                            ],
                        }
                    ],
                    "ForgottenTopicsData": [],
                    "RackId": "",
                },
                timeout=10,
            )
        )
        fetched[isolation] = result.kafka.body["Responses"][0]["Partitions"][0]
        for timestamp in (-1, -2):
            session.run(
                Step(
                    "ListOffsets",
                    8,
                    {
                        "ReplicaId": -1,
                        "IsolationLevel": isolation,
                        "Topics": [
                            {
                                "Name": Topic("pay"),
                                "Partitions": [
                                    {"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": timestamp}
                                ],
                            }
                        ],
                    },
                )
            )
    return fetched


def _described(session: DifferentialSession) -> dict[str, Any]:
    described = session.run(Step("DescribeTransactions", 0, {"TransactionalIds": [TX, Group("tx-unused")]}))
    session.run(
        Step(
            "ListTransactions",
            1,
            {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1},
            scoped=True,
        )
    )
    return described.kafka.body["TransactionStates"][0]


def _ok(result: Any) -> dict[str, Any]:
    body = result.kafka.body
    assert body is not None and body.get("ErrorCode", 0) == 0, result.kafka
    return body


@pytest.mark.parametrize("differential", ["single"], indirect=True)
def test_a_committed_and_an_aborted_transaction_answer_as_kafka(differential: DifferentialSession) -> None:
    session = differential
    created = session.run(
        Step(
            "CreateTopics",
            7,
            {
                "Topics": [
                    {
                        "Name": Topic("pay"),
                        "NumPartitions": 2,
                        "ReplicationFactor": 1,
                        "Assignments": [],
                        "Configs": [],
                    }
                ],
                "timeoutMs": 30000,
                "validateOnly": False,
            },
        )
    )
    assert created.kafka.body["Topics"][0]["ErrorCode"] == 0, created.kafka
    session.model.topics["pay"] = TopicModel("pay", 2, [[0], [0]])

    init = _ok(
        session.run(
            Step(
                "InitProducerId",
                4,
                {"TransactionalId": TX, "TransactionTimeoutMs": 60000, "ProducerId": -1, "ProducerEpoch": -1},
                label="<pid:tx>",
            )
        )
    )
    assert init["ProducerEpoch"] == 0
    pid = "<pid:tx>"

    # Before AddPartitionsToTxn: Kafka refuses a transactional batch to a partition not in the transaction.
    session.run(
        Step(
            "Produce",
            9,
            {
                "TransactionalId": TX,
                "Acks": -1,
                "TimeoutMs": 5000,
                "TopicData": [
                    {"Name": Topic("pay"), "PartitionData": [{"Index": 1, "Records": _batch(pid, 0, [b"x"])}]}
                ],
            },
            note="in-transaction",
        )
    )

    for committed, sequence, values in ((True, 0, [b"a", b"b"]), (False, 2, [b"c"])):
        added = session.run(
            Step(
                "AddPartitionsToTxn",
                3,
                {
                    "V3AndBelowTransactionalId": TX,
                    "V3AndBelowProducerId": Pid(pid),
                    "V3AndBelowProducerEpoch": 0,
                    "V3AndBelowTopics": [{"Name": Topic("pay"), "Partitions": [0]}],
                },
            )
        )
        assert (
            added.kafka.body["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"]
            == 0
        ), added.kafka
        written = session.run(
            Step(
                "Produce",
                9,
                {
                    "TransactionalId": TX,
                    "Acks": -1,
                    "TimeoutMs": 5000,
                    "TopicData": [
                        {
                            "Name": Topic("pay"),
                            "PartitionData": [{"Index": 0, "Records": _batch(pid, sequence, values)}],
                        }
                    ],
                },
                note="in-transaction",
            )
        )
        assert written.kafka.body["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0, written.kafka
        _ok(
            session.run(
                Step("AddOffsetsToTxn", 3, {"TransactionalId": TX, **_producer(pid), "GroupId": Group("g0")})
            )
        )
        session.run(
            Step(
                "TxnOffsetCommit",
                3,
                {
                    "TransactionalId": TX,
                    "GroupId": Group("g0"),
                    **_producer(pid),
                    "GenerationId": -1,
                    "MemberId": "",
                    "GroupInstanceId": None,
                    "Topics": [
                        {
                            "Name": Topic("pay"),
                            "Partitions": [
                                {
                                    "PartitionIndex": 0,
                                    "CommittedOffset": sequence + len(values),
                                    "CommittedLeaderEpoch": -1,
                                    "CommittedMetadata": "",
                                }
                            ],
                        }
                    ],
                },
            )
        )
        ongoing = _reads(session)
        assert ongoing[1]["LastStableOffset"] < ongoing[1]["HighWatermark"], "no open transaction"
        assert _described(session)["TransactionState"] == "Ongoing"
        _ok(session.run(Step("EndTxn", 3, {"TransactionalId": TX, **_producer(pid), "Committed": committed})))
        ended = _reads(session)
        assert ended[1]["LastStableOffset"] == ended[1]["HighWatermark"]
        session.run(
            Step(
                "OffsetFetch",
                7,
                {
                    "GroupId": Group("g0"),
                    "Topics": [{"Name": Topic("pay"), "PartitionIndexes": [0]}],
                    "RequireStable": True,
                },
            )
        )
    assert ended[1]["AbortedTransactions"], "Kafka named no aborted transaction"
    assert _described(session)["TransactionState"] == "CompleteAbort"
