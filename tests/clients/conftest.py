"""Real Kafka clients against the simulator: servers shared by a test module, and a record of what each client sent.

The server logs every request it decodes (apiKey, version, client id) and warns about any tagged field
its specs do not know. :class:`WireLog` collects both while a module runs, so that the tests can assert
that a client's bytes decoded cleanly, and the versions each client negotiated are printed at the end
of the run.

The failover tests run on a virtual clock: a crashed broker is fenced when the test moves the clock
past ``broker.session.timeout.ms`` with ``advance``, not after a real wait.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from tests.support.placers import placer_file

#: ``replica.placer.class.name`` of a plugin that refuses topics named ``reject...`` (REPLICA_PLACEMENT_FAILED).
PICKY_PLACER = placer_file("PickyPlacer")

#: The APIs by key, as the real clients use them (apiKey 68 is ConsumerGroupHeartbeat for the KIP-848 clients
#: that send it; only the project's own client, left out of the report, sends CreateReplicaPlacement).
API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 17: "SaslHandshake", 18: "ApiVersions",
             8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
             19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId",
             23: "OffsetForLeaderEpoch", 32: "DescribeConfigs", 33: "AlterConfigs", 35: "DescribeLogDirs",
             36: "SaslAuthenticate", 37: "CreatePartitions", 43: "ElectLeaders", 44: "IncrementalAlterConfigs",
             42: "DeleteGroups", 47: "OffsetDelete", 60: "DescribeCluster", 61: "DescribeProducers",
             45: "AlterPartitionReassignments", 46: "ListPartitionReassignments", 68: "ConsumerGroupHeartbeat",
             69: "ConsumerGroupDescribe",
             24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit",
             65: "DescribeTransactions", 66: "ListTransactions", 29: "DescribeAcls", 30: "CreateAcls",
             31: "DeleteAcls", 50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials",
             75: "DescribeTopicPartitions"}  # fmt: skip

#: What each client connects over in the security tests: (security protocol, SASL mechanism, ssl.client.auth).
SECURED = [
    pytest.param("SSL", None, "none", id="SSL"),
    pytest.param("SSL", None, "required", id="SSL-client-certificate"),
    pytest.param("SASL_PLAINTEXT", "PLAIN", "none", id="SASL_PLAINTEXT-PLAIN"),
    pytest.param("SASL_PLAINTEXT", "SCRAM-SHA-512", "none", id="SASL_PLAINTEXT-SCRAM-SHA-512"),
    pytest.param("SASL_SSL", "PLAIN", "none", id="SASL_SSL-PLAIN"),
    pytest.param("SASL_SSL", "SCRAM-SHA-256", "none", id="SASL_SSL-SCRAM-SHA-256"),
]

#: A wrong password, and what Kafka tells the client: PLAIN's own message, SCRAM's one for every failure.
WRONG_PASSWORD = [
    pytest.param(
        "SASL_PLAINTEXT", "PLAIN", "Authentication failed: Invalid username or password", id="PLAIN"
    ),
    pytest.param(
        "SASL_SSL",
        "SCRAM-SHA-512",
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
        id="SCRAM-SHA-512",
    ),
]
WRONG = "not-alices-secret"


@contextmanager
def kafka_python_admin(server: ServerThread, client_id: str = "placement-sim-tests") -> Iterator[Any]:
    """kafka-python's KafkaAdminClient on ``server``, its timeouts bounded (5 s), closed after."""
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        client_id=client_id,
        request_timeout_ms=5000,
        bootstrap_timeout_ms=5000,
    )
    try:
        yield client
    finally:
        client.close()


def assert_authenticated(server: ServerThread, mechanism: str | None) -> None:
    """SASL was used on the bootstrap listener and on a broker's (every listener is secured alike)."""
    stats = server.stats
    if mechanism is not None:
        assert stats[f"authenticated:{mechanism}"] >= 2, dict(stats)
    assert stats["authentication failed"] == stats["closed:TLS handshake failed"] == 0, dict(stats)


#: What the server logs of a wrong password (Kafka's own reasons), by mechanism.
LOGGED_REASON = {
    "PLAIN": "Authentication failed: Invalid username or password",
    "SCRAM-SHA-512": "Invalid client credentials",
}


def assert_failure_logged(records: list[logging.LogRecord], mechanism: str) -> None:
    """The server logged the failure at warning with the peer, mechanism, user and reason, and no password."""
    lines = [
        r.getMessage() for r in records if r.name == "controller.security" and r.levelno == logging.WARNING
    ]
    assert lines, "the failure was not logged"
    assert all(
        line.startswith("authentication failed from 127.0.0.1:")
        and line.endswith(f": {mechanism}, user alice: {LOGGED_REASON[mechanism]}")
        for line in lines
    ), lines
    everything = "\n".join(r.getMessage() for r in records)
    assert WRONG not in everything and "alice-secret" not in everything


OWN_CLIENT_ID = "placement-sim-client"

# client label -> API name -> versions it used; printed in the terminal summary.
NEGOTIATED: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))


class WireLog(logging.Handler):
    """Collects the server's per-request log lines and its unknown-tagged-field warnings."""

    def __init__(self, label: str) -> None:
        super().__init__(logging.DEBUG)
        self.label = label
        self.requests: list[tuple[int, int, str | None]] = []
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.warnings.append(record.getMessage())
        elif isinstance(record.msg, str) and record.msg.startswith("%s: apiKey %d v%d correlation"):
            _, api_key, version, _, client_id = record.args  # type: ignore[misc]
            self.requests.append((api_key, version, client_id))
            if client_id != OWN_CLIENT_ID:  # set-up done with the project's own client is not the client's
                NEGOTIATED[self.label][API_NAMES.get(api_key, str(api_key))].add(version)

    def assert_clean(self, server: ServerThread) -> None:
        """Every request decoded without unknown tagged fields, and no connection was closed for bad bytes."""
        assert self.requests, "the client sent nothing"
        assert not [w for w in self.warnings if "unknown tagged field" in w]
        stats = server.stats
        assert stats["requests:unknown tagged fields"] == 0
        bad = {
            k: v
            for k, v in stats.items()
            if k.startswith("closed:") and ("malformed" in k or "unsupported" in k)
        }
        assert not bad, bad


@pytest.fixture(scope="module")
def wire_log(request: pytest.FixtureRequest) -> Iterator[WireLog]:
    label = getattr(request.module, "CLIENT", request.module.__name__)
    handler = WireLog(label)
    logger = logging.getLogger("controller.dispatch")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    """The embedded default cluster (6 brokers in 3 racks, striped, seed 0), shared by a module's tests."""
    with ServerThread.start() as server:
        yield server


@pytest.fixture(scope="module")
def picky_cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    """The default brokers with a plugin that refuses topics named ``reject...`` (run inline: fast)."""
    with ServerThread.start(
        placer=PICKY_PLACER, properties={"simulator.placer.isolation": "inline"}
    ) as server:
        yield server


#: Kafka's ``broker.session.timeout.ms``: a broker that stops heartbeating is fenced this long after.
SESSION_TIMEOUT_MS = 9000

#: The failover clusters: three brokers in three racks, seed 1.
FAILOVER_BROKERS = [(0, "a"), (1, "b"), (2, "c")]

#: Where the failover clusters' default placer puts "orders" (3 partitions, 3 replicas) and "solo" (1, 1)
#: when both are created in one request, in that order; broker 1 leads orders-1 and solo-0.
FAILOVER_LAYOUT = {"orders": [[0, 1, 2], [1, 2, 0], [2, 0, 1]], "solo": [[1]]}


def create_placed(server: ServerThread, layout: dict[str, list[list[int]]]) -> None:
    """Creates topics with these replica assignments through the project's own client (not the client
    under test: its requests are left out of the negotiated versions)."""
    topics = [
        {
            "Name": name,
            "NumPartitions": -1,
            "ReplicationFactor": -1,
            "Assignments": [{"PartitionIndex": i, "BrokerIds": rs} for i, rs in enumerate(assignment)],
            "Configs": [],
        }
        for name, assignment in layout.items()
    ]
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        response = client.send("CreateTopicsRequest", {"Topics": topics, "timeoutMs": 5000})
    assert [t["ErrorCode"] for t in response["Topics"]] == [0] * len(topics), response


@pytest.fixture(scope="module")
def failover_cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    """Three brokers on a virtual clock with Kafka's election rules, no topics yet (see FAILOVER_LAYOUT)."""
    with ServerThread.start(brokers=FAILOVER_BROKERS, clock="virtual", seed=1) as server:
        yield server


@pytest.fixture(scope="module")
def fluvio_cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    """The same brokers with Fluvio's rules: the SC sees a crashed SPU's connection drop at once."""
    with ServerThread.start(brokers=FAILOVER_BROKERS, clock="virtual", seed=1, policy="fluvio") as server:
        yield server


#: The election cluster's topics, and what ElectLeaders finds on each (see ``election_cluster``).
ELECTION_LAYOUT = {
    "home": [[0, 4]],  # led by its preferred replica
    "moved": [[1, 0]],  # its preferred replica 1 is down; 0 leads
    "back": [[2, 0], [2, 0]],  # 0 leads; the preferred replica 2 is back in the ISR
    "gone": [[3]],  # leaderless: its only replica is down
    "stale": [[3, 4]],  # leaderless: 3 (the ISR's last) is down, 4 is up but was dropped from the ISR
}


@pytest.fixture(scope="module")
def election_cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    """Five brokers on a virtual clock, brought to a state where ElectLeaders has every answer to give.

    1, 2 and 4 crash and are fenced after the session timeout; then 3 crashes and is fenced; then 2 and
    4 restart, are unfenced at their first heartbeat, and 2 catches up into back's ISRs (4 cannot join
    stale's: it has no leader to catch up with). Broker 0, the controller, stays up throughout.
    Each test elects on partitions of its own, so that the tests can share the cluster.
    """
    with ServerThread.start(
        brokers=[(0, "a"), (1, "b"), (2, "c"), (3, "d"), (4, "e")], clock="virtual", seed=1
    ) as server:
        create_placed(server, ELECTION_LAYOUT)
        for broker in (1, 2, 4):
            server.stop_broker(broker, "crash")
        server.advance(SESSION_TIMEOUT_MS)
        server.stop_broker(3, "crash")
        server.advance(SESSION_TIMEOUT_MS)
        server.start_broker(2)
        server.start_broker(4)
        server.advance(2100)  # unfenced at their first heartbeat; 2 is back in the ISRs by 2.1 s
        placed = {
            t: [server.partition_state(t, i) for i in range(len(a))] for t, a in ELECTION_LAYOUT.items()
        }
        assert {t: [(p.leader, p.isr) for p in ps] for t, ps in placed.items()} == {
            "home": [(0, (0, 4))],
            "moved": [(0, (0,))],
            "back": [(0, (0, 2)), (0, (0, 2))],  # the leader's AlterPartition orders the ISR by id
            # eligible leader replicas (KIP-966, on as in Kafka 4.1+): the fenced last ISR member leaves
            # the ISR for the ELR, so a leaderless partition's ISR is empty
            "gone": [(-1, ())],
            "stale": [(-1, ())],
        }
        brokers = [server.broker_state(b) for b in range(5)]
        assert brokers == ["running", "offline", "running", "offline", "running"]
        yield server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not NEGOTIATED:
        return
    terminalreporter.section("versions the real clients negotiated with the simulator")
    for label, apis in sorted(NEGOTIATED.items()):
        used = ", ".join(f"{api} v{'/'.join(map(str, sorted(v)))}" for api, v in sorted(apis.items()))
        terminalreporter.write_line(f"{label}: {used}")
