"""ApiVersions v3+ carries the features as a Kafka 4.x KRaft broker's answer does: ``transaction.version``
supported 0-2 and finalized at 2 (the level at which the Java producer uses KIP-890 part 2); before v3
there are no feature fields. Read with the project's client and with kafka-python's describe_features."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient

from controller.embedded import ServerThread
from protocol.client import KafkaClient

REQUEST = {"ClientSoftwareName": "placement-sim-test", "ClientSoftwareVersion": "1.0"}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=[(0, None)]) as started:
        yield started


async def test_v3_and_later_advertise_the_transaction_version_and_v2_no_features(server: ServerThread):
    async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as client:
        for version in (3, 4):
            answer = await client.send("ApiVersionsRequest", REQUEST, version=version)
            assert answer["ErrorCode"] == 0
            assert answer["SupportedFeatures"] == [
                {"Name": "transaction.version", "MinVersion": 0, "MaxVersion": 2}
            ]
            assert answer["FinalizedFeaturesEpoch"] == 0
            assert answer["FinalizedFeatures"] == [
                {"Name": "transaction.version", "MaxVersionLevel": 2, "MinVersionLevel": 2}
            ]
            # What a transaction.version 2 client sends is served: EndTxn v5, Produce v12+.
            keys = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}
            assert keys[26][1] >= 5 and keys[0][1] >= 12
        old = await client.send("ApiVersionsRequest", {}, version=2)
        assert "SupportedFeatures" not in old and "FinalizedFeatures" not in old


def test_kafka_python_reads_the_finalized_transaction_version(server: ServerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10_000)
    try:
        features = admin.describe_features()
    finally:
        admin.close()
    assert features["transaction.version"]["supported"] == (0, 2)
    assert features["transaction.version"]["finalized"] == (2, 2)
    assert features["transaction.version"]["finalized_epoch"] == 0
