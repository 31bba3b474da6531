"""Request faults as real clients meet them: kafka-python's admin sees an injected CreateTopics error,
librdkafka's admin sees a retriable NOT_CONTROLLER that fires once and its retry succeeds, a delay beyond
a client's timeout times it out after the topic was made, a black-holed client id gets no answers while others do, and a request
whose connection is closed fails while the client's next one reconnects.

The server runs on a virtual clock: a delayed answer stays delayed until the test moves the clock.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaPythonNewTopic
from kafka.errors import (
    KafkaTimeoutError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
)

from controller.embedded import ServerThread
from protocol.codes import ApiKey, ErrorCode

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(
        placer="legacy", brokers=[(0, None), (1, None), (2, None)], clock="virtual"
    ) as started:
        yield started


@pytest.fixture(autouse=True)
def no_faults_left(server: ServerThread) -> Iterator[None]:
    yield
    server.faults.clear()


def kafka_python_admin(
    server: ServerThread,
    client_id: str = "faults-kafka-python",
    timeout_ms: int = 5000,
    bootstrap_timeout_ms: int = 10000,
) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        client_id=client_id,
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=bootstrap_timeout_ms,
    )


def confluent_admin(server: ServerThread) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": server.bootstrap,
            "client.id": "faults-confluent",
            "socket.timeout.ms": 5000,
            "socket.connection.setup.timeout.ms": 5000,
        },
        logger=logging.getLogger("librdkafka"),
    )


def topic_exists(server: ServerThread, name: str) -> bool:
    return bool(server.call(lambda: name in server.server.controller.cluster.topics))


def test_kafka_python_admin_sees_an_injected_create_topics_error(server):
    fault = server.faults.inject_error(ApiKey.CREATE_TOPICS, ErrorCode.TOPIC_AUTHORIZATION_FAILED).once()
    admin = kafka_python_admin(server)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([KafkaPythonNewTopic("denied", 2, 2)])
        assert fault.fired == 1 and not topic_exists(server, "denied")
        admin.create_topics([KafkaPythonNewTopic("denied", 2, 2)])  # fired once: the next one goes through
        assert topic_exists(server, "denied")
    finally:
        admin.close()


def test_librdkafka_admin_sees_a_retriable_error_once_and_its_retry_succeeds(server):
    fault = server.faults.inject_error(ApiKey.CREATE_TOPICS, ErrorCode.NOT_CONTROLLER).once()
    before = server.stats["requests:19"]
    admin = confluent_admin(server)
    try:
        [future] = admin.create_topics([NewTopic("retried", 2, 2)], operation_timeout=5).values()
        with pytest.raises(KafkaException) as raised:
            future.result(TIMEOUT)
        error = raised.value.args[0]
        assert error.code() == KafkaError.NOT_CONTROLLER
        assert error.str() == f"injected by fault #{fault.id}: error=NOT_CONTROLLER api=CreateTopics once"
        [future] = admin.create_topics([NewTopic("retried", 2, 2)], operation_timeout=5).values()
        assert future.result(TIMEOUT) is None
    finally:
        del admin
        gc.collect()
    assert fault.fired == 1
    assert server.stats["requests:19"] - before == 2  # the refused request, then the retry
    assert topic_exists(server, "retried")


def test_a_delay_beyond_the_clients_timeout_times_it_out_after_the_change_was_made(server):
    fault = server.faults.delay_on(ApiKey.CREATE_TOPICS, 60_000).once()
    admin = kafka_python_admin(server, timeout_ms=1000)
    try:
        with pytest.raises(RequestTimedOutError):
            admin.create_topics([KafkaPythonNewTopic("late", 1, 1)])
        assert fault.fired == 1
        assert topic_exists(server, "late")  # handled at once; only the answer is held
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([KafkaPythonNewTopic("late", 1, 1)])
    finally:
        admin.close()


def test_a_black_holed_client_id_gets_no_answers(server):
    hole = server.faults.blackhole_client("muted")
    with pytest.raises(KafkaTimeoutError):
        kafka_python_admin(server, client_id="muted-admin", timeout_ms=1000, bootstrap_timeout_ms=1000)
    assert hole.fired >= 1
    admin = kafka_python_admin(server, client_id="heard-admin")
    try:
        calls = hole.calls
        admin.create_topics([KafkaPythonNewTopic("heard", 1, 1)])
        assert "heard" in admin.list_topics() and topic_exists(server, "heard")
        assert hole.calls == calls  # the other client's requests never matched it
    finally:
        admin.close()


def test_a_closed_connection_is_reconnected(server):
    """The fault closes the connection of the first Metadata request: librdkafka's own at connect (it
    reconnects and asks again) or list_topics' (which fails with a transport error); either way the
    client reconnects and its next request is answered."""
    closes = server.stats["closed:fault"]
    fault = server.faults.disconnect_on(ApiKey.METADATA).once()
    admin = confluent_admin(server)
    try:
        try:
            metadata = admin.list_topics(timeout=TIMEOUT)
        except KafkaException as exc:
            assert exc.args[0].code() == KafkaError._TRANSPORT
            metadata = admin.list_topics(timeout=TIMEOUT)
        assert sorted(metadata.brokers) == [0, 1, 2]
    finally:
        del admin
        gc.collect()
    assert fault.fired == 1
    assert server.stats["closed:fault"] - closes == 1
