"""confluent-kafka (librdkafka) against the authorizer: the admin creates, describes and deletes ACLs; a user
they allow produces and consumes (the consumer reads back what was sent), a user they do not is refused
with Kafka's errors; SCRAM credentials set through the admin API (and per mechanism through
``simulator.sasl.users``) are described and used to log in with each mechanism, then deleted."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog

CLIENT = "confluent-kafka (ACLs)"
TIMEOUT = 10.0
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def _secured(factory: Callable[..., ServerThread], **properties: str) -> ServerThread:
    return factory(
        security="SASL_PLAINTEXT",
        mechanism="SCRAM-SHA-512",
        users=USERS,
        properties={"authorizer.class.name": AUTHORIZER, "super.users": "User:admin", **properties},
    )


def _config(
    server: ServerThread, user: str, password: str | None = None, mechanism: str | None = None
) -> dict:
    settings = server.client_settings.as_user(user, password or USERS[user], mechanism)
    return {
        "bootstrap.servers": server.bootstrap,
        "socket.timeout.ms": 5000,
        "socket.connection.setup.timeout.ms": 5000,
        **settings.librdkafka(),
    }


def _admin(server: ServerThread, user: str = "admin", **extra: Any) -> AdminClient:
    return AdminClient({**_config(server, user), **extra}, logger=logging.getLogger("librdkafka"))


def _allow(
    principal: str, kind: ResourceType, name: str, op: AclOperation, pattern=ResourcePatternType.LITERAL
):
    return AclBinding(kind, name, pattern, principal, "*", op, AclPermissionType.ALLOW)


def test_admin_creates_describes_and_deletes_acls(placement_sim_factory, wire_log: WireLog):
    server = _secured(placement_sim_factory)
    admin = _admin(server)
    try:
        bindings = [
            _allow(
                "User:alice", ResourceType.TOPIC, "orders", AclOperation.READ, ResourcePatternType.PREFIXED
            ),
            _allow("User:alice", ResourceType.GROUP, "billing", AclOperation.READ),
        ]
        for future in admin.create_acls(bindings, request_timeout=TIMEOUT).values():
            assert future.result(TIMEOUT) is None
        match = AclBindingFilter(
            ResourceType.TOPIC,
            "orders-eu",
            ResourcePatternType.MATCH,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        found = admin.describe_acls(match, request_timeout=TIMEOUT).result(TIMEOUT)
        assert [(b.principal, b.name, b.resource_pattern_type) for b in found] == [
            ("User:alice", "orders", ResourcePatternType.PREFIXED)
        ]
        everything = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            "User:alice",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        [deleted] = admin.delete_acls([everything], request_timeout=TIMEOUT).values()
        assert sorted(b.name for b in deleted.result(TIMEOUT)) == ["billing", "orders"]
        assert admin.describe_acls(everything, request_timeout=TIMEOUT).result(TIMEOUT) == []
        # An ACL Kafka refuses: the CLUSTER resource has one name.
        refused = _allow("User:alice", ResourceType.BROKER, "my-cluster", AclOperation.ALTER)
        [future] = admin.create_acls([refused], request_timeout=TIMEOUT).values()
        try:
            future.result(TIMEOUT)
            raise AssertionError("an ACL on a CLUSTER resource not named kafka-cluster was created")
        except KafkaException as exc:
            assert exc.args[0].code() == KafkaError.INVALID_REQUEST
    finally:
        del admin
        gc.collect()
    wire_log.assert_clean(server)


def test_an_authorized_and_an_unauthorized_client(placement_sim_factory, wire_log: WireLog):
    server = _secured(placement_sim_factory)
    admin = _admin(server)
    try:
        assert (
            admin.create_topics([NewTopic("orders", 2, 2)], request_timeout=TIMEOUT)["orders"].result(TIMEOUT)
            is None
        )
        grants = [
            _allow("User:alice", ResourceType.TOPIC, "orders", AclOperation.WRITE),
            _allow("User:alice", ResourceType.TOPIC, "orders", AclOperation.READ),
            _allow("User:alice", ResourceType.GROUP, "billing", AclOperation.READ),
            _allow("User:alice", ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
        ]
        for future in admin.create_acls(grants, request_timeout=TIMEOUT).values():
            assert future.result(TIMEOUT) is None
        sent = [f"order-{i}".encode() for i in range(8)]
        delivered: list[Any] = []
        producer = Producer(
            {**_config(server, "alice"), "enable.idempotence": True, "message.timeout.ms": 10_000}
        )
        for value in sent:
            producer.produce("orders", value, on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(TIMEOUT) == 0
        assert delivered == [None] * len(sent)
        consumer = Consumer(
            {**_config(server, "alice"), "group.id": "billing", "auto.offset.reset": "earliest"}
        )
        got = []
        try:
            consumer.subscribe(["orders"])
            deadline = time.monotonic() + 20
            while len(got) < len(sent) and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    got.append(message.value())
        finally:
            consumer.close()
        assert sorted(got) == sorted(sent)

        # bob: nothing allows him anything.
        errors: list[Any] = []
        refused = Producer(
            {**_config(server, "bob"), "message.timeout.ms": 5000, "enable.idempotence": False}
        )
        refused.produce("orders", b"not bob's", on_delivery=lambda err, msg: errors.append(err))
        refused.flush(TIMEOUT)
        assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
        consumer = Consumer(
            {**_config(server, "bob"), "group.id": "billing", "auto.offset.reset": "earliest"}
        )
        seen = set()
        try:
            consumer.subscribe(["orders"])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not seen:
                message = consumer.poll(0.5)
                if message is not None and message.error() is not None:
                    seen.add(message.error().code())
        finally:
            consumer.close()
        assert seen & {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED}, seen
    finally:
        del admin
        gc.collect()
    wire_log.assert_clean(server)


def test_scram_credentials_per_mechanism(placement_sim_factory):
    server = _secured(
        placement_sim_factory,
        **{
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            # dave's passwords differ by mechanism, from the start.
            "simulator.sasl.users": "admin:admin-secret,dave:SCRAM-SHA-256:dave-256,dave:SCRAM-SHA-512:dave-512",
        },
    )
    admin = _admin(server)

    def logs_in(user: str, mechanism: str, password: str) -> bool:
        errors: list[KafkaError] = []
        client = AdminClient(
            {**_config(server, user, password, mechanism), "error_cb": errors.append},
            logger=logging.getLogger("librdkafka"),
        )
        try:
            client.list_topics(timeout=5)
            return True
        except KafkaException:
            client.poll(1)  # serves the error callback
            assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
            return False
        finally:
            del client
            gc.collect()

    try:
        assert logs_in("dave", "SCRAM-SHA-256", "dave-256") and logs_in("dave", "SCRAM-SHA-512", "dave-512")
        assert not logs_in("dave", "SCRAM-SHA-512", "dave-256")
        upserts = [
            UserScramCredentialUpsertion(
                "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000), b"erin-256"
            ),
            UserScramCredentialUpsertion(
                "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"frank-512"
            ),
        ]
        for future in admin.alter_user_scram_credentials(upserts, request_timeout=TIMEOUT).values():
            assert future.result(TIMEOUT) is None
        described = admin.describe_user_scram_credentials(["dave", "erin", "frank"], request_timeout=TIMEOUT)
        infos = {user: future.result(TIMEOUT) for user, future in described.items()}
        assert sorted((i.mechanism, i.iterations) for i in infos["dave"].scram_credential_infos) == [
            (ScramMechanism.SCRAM_SHA_256, 4096),
            (ScramMechanism.SCRAM_SHA_512, 4096),
        ]
        assert [(i.mechanism, i.iterations) for i in infos["erin"].scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_256, 10000)
        ]
        assert logs_in("erin", "SCRAM-SHA-256", "erin-256") and logs_in("frank", "SCRAM-SHA-512", "frank-512")
        assert not logs_in("erin", "SCRAM-SHA-512", "erin-256")  # no SHA-512 credential
        deletion = [UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)]
        for future in admin.alter_user_scram_credentials(deletion, request_timeout=TIMEOUT).values():
            assert future.result(TIMEOUT) is None
        assert not logs_in("erin", "SCRAM-SHA-256", "erin-256")
    finally:
        del admin
        gc.collect()
