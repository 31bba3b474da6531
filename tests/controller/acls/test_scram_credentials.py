"""SCRAM credentials as cluster metadata: made from ``simulator.sasl.users`` (a password per mechanism when
given), described and altered as Kafka's ScramControlManager and ScramImage do, over the wire too."""

from __future__ import annotations

import hashlib

from controller.acls.scram import ScramCredentials
from controller.config import ServerConfig
from controller.embedded import ServerThread
from controller.events import EventLog
from controller.security import scram_credential
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

SHA256, SHA512 = 1, 2


def salted(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    return hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)


def upsertion(user: str, mechanism: int, password: str, iterations: int = 4096) -> dict:
    name = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}[mechanism]
    return {
        "Name": user,
        "Mechanism": mechanism,
        "Iterations": iterations,
        "Salt": b"salt-" + user.encode(),
        "SaltedPassword": salted(name, password, b"salt-" + user.encode(), iterations),
    }


def test_the_users_setting_gives_a_password_per_mechanism():
    config = ServerConfig.from_properties(
        {"simulator.sasl.users": "alice:both,bob:SCRAM-SHA-512:b512,carol:x,carol:SCRAM-SHA-256:c256"}
    )
    assert config.sasl_users == (
        ("alice", None, "both"),
        ("bob", "SCRAM-SHA-512", "b512"),
        ("carol", None, "x"),
        ("carol", "SCRAM-SHA-256", "c256"),
    )
    store = ScramCredentials(config.sasl_users, 4096)
    sha256, sha512 = store.for_mechanism("SCRAM-SHA-256"), store.for_mechanism("SCRAM-SHA-512")
    assert (sorted(sha256), sorted(sha512)) == (["alice", "carol"], ["alice", "bob", "carol"])

    def holds(credential, mechanism, password):
        return scram_credential(mechanism, password, credential.salt, credential.iterations) == credential

    assert holds(sha256["carol"], "SCRAM-SHA-256", "c256") and holds(sha512["carol"], "SCRAM-SHA-512", "x")
    assert holds(sha512["bob"], "SCRAM-SHA-512", "b512")


def test_alter_and_describe_as_kafka():
    events = EventLog(lambda: 0)
    store = ScramCredentials([("alice", None, "a")], 4096, events)
    results = store.alter(
        [{"Name": "alice", "Mechanism": SHA256}, {"Name": "ghost", "Mechanism": SHA512}],
        [
            upsertion("bob", SHA512, "b", iterations=8192),
            upsertion("carol", SHA256, "c", iterations=1000),
            upsertion("dave", SHA256, "d"),
            upsertion("dave", SHA512, "d"),
            {**upsertion("erin", SHA256, "e"), "Mechanism": 7},
            upsertion("", SHA256, "e"),
        ],
        "test",
    )
    assert {r["User"]: (r["ErrorCode"], r["ErrorMessage"]) for r in results} == {
        "alice": (0, None),
        "bob": (0, None),
        "ghost": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "carol": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "dave": (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        "erin": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    }
    described = {r["User"]: r for r in store.describe(None)}
    assert [(c["Mechanism"], c["Iterations"]) for c in described["alice"]["CredentialInfos"]] == [
        (SHA512, 4096)
    ]
    assert [(c["Mechanism"], c["Iterations"]) for c in described["bob"]["CredentialInfos"]] == [
        (SHA512, 8192)
    ]
    asked = store.describe(["bob", "nobody", "bob"])
    assert [(r["User"], r["ErrorCode"]) for r in asked] == [
        ("bob", ErrorCode.DUPLICATE_RESOURCE),
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND),
    ]
    # Recorded without a salt or a key.
    assert [(e.kind, e.subject) for e in events] == [("scram", "user alice"), ("scram", "user bob")]
    assert "salt" not in " ".join(str(e) for e in events)


def test_over_the_wire_with_and_without_an_authorizer():
    with ServerThread.start(properties={"simulator.sasl.users": "alice:a"}) as server:
        with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
            altered = client.send(
                "AlterUserScramCredentialsRequest",
                {"Deletions": [], "Upsertions": [upsertion("bob", SHA256, "b", 10000)]},
            )
            assert altered["Results"] == [{"User": "bob", "ErrorCode": 0, "ErrorMessage": None}]
            described = client.send("DescribeUserScramCredentialsRequest", {"Users": [{"Name": "bob"}]})
            assert described["Results"][0]["CredentialInfos"] == [{"Mechanism": SHA256, "Iterations": 10000}]
            every = client.send("DescribeUserScramCredentialsRequest", {"Users": None})
            assert sorted(r["User"] for r in every["Results"]) == ["alice", "bob"]
    properties = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with ServerThread.start(properties=properties) as server:
        with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
            described = client.send("DescribeUserScramCredentialsRequest", {"Users": None})
            assert described["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            altered = client.send(
                "AlterUserScramCredentialsRequest",
                {"Deletions": [], "Upsertions": [upsertion("bob", SHA256, "b")]},
            )
            assert [(r["User"], r["ErrorCode"]) for r in altered["Results"]] == [
                ("bob", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            ]
