"""What a bare server imports: only what answers ApiVersions, Metadata and topic administration.

Everything a client may never touch is a subsystem built on first use (``controller.app.SUBSYSTEMS``),
and each handler module is imported at its API's first request (``controller/handlers/_index.py``). The
test runs a fresh interpreter (the second of two: the first writes the codecs it reads whole): it starts a
server, asks ApiVersions, Metadata and CreateTopics, and lists the project's modules then loaded; a module
added to that list must be one a bare server needs (start time is measured against librdkafka's mock
cluster: benchmarks/start.py). construct, which writes codecs, is not one of them.
"""

from __future__ import annotations

from controller.app import SUBSYSTEMS
from controller.embedded import ServerThread
from protocol.client import BlockingClient
from protocol.codes import ErrorCode
from tests.support.interpreters import second_process

_SCRIPT = """
import asyncio, json, sys
from controller.embedded import ServerThread
from protocol.client import KafkaClient

async def ask(bootstrap):
    client = await KafkaClient.connect(bootstrap, connect_timeout=10, request_timeout=10)
    try:
        await client.send("MetadataRequest", {"Topics": None})
        await client.send("CreateTopicsRequest", {"Topics": [
            {"Name": "t", "NumPartitions": 3, "ReplicationFactor": 2, "Assignments": [], "Configs": []}
        ], "timeoutMs": 5000})
        await client.send("MetadataRequest", {"Topics": [{"Name": "t"}]})
    finally:
        await client.close()

before = set(sys.modules)
with ServerThread.start() as server:
    asyncio.run(ask(server.bootstrap))
    loaded = sorted(m for m in sys.modules if m.startswith(("controller", "protocol", "construct")))
print(json.dumps(loaded))
"""

#: The project's modules a bare server (and the project's own client) loads; each one is needed to
#: answer ApiVersions, Metadata and CreateTopics, or to start (config, cluster, placement, dynamics).
BARE = {
    "controller",
    # Kafka's access-control codes (enums): Metadata checks DESCRIBE on topics and computes authorized
    # operations with them.
    "controller.acls",
    "controller.acls.codes",
    "controller.answers",
    "controller.app",
    "controller.assembly",
    "controller.clock",
    "controller.cluster",
    "controller.config",
    "controller.config.kafka_keys",
    "controller.config.parsing",
    "controller.config.server_config",
    "controller.config.settings",
    "controller.config.topic_configs",
    "controller.config.values",
    "controller.connection",
    "controller.defaults",
    "controller.dispatch",
    "controller.dynamics",
    "controller.dynamics.lifecycle",
    "controller.dynamics.replication",
    "controller.election",
    "controller.election.api",
    "controller.election.builtin",
    "controller.election.builtin.kafka",
    "controller.election.change",
    "controller.election.fluvio_style",
    "controller.election.kafka_style",
    "controller.election.loader",
    "controller.election.rules",
    "controller.election.service",
    "controller.election.styles",
    "controller.embedded",
    "controller.eventloop",
    "controller.events",
    "controller.handlers",
    "controller.handlers._control",
    "controller.handlers._index",
    "controller.handlers.api_versions",
    "controller.handlers.create_topics",
    "controller.handlers.metadata",
    "controller.image",
    "controller.logsafe",
    "controller.offload",
    "controller.placement",
    "controller.placement.api",
    "controller.placement.assignments",
    "controller.placement.builtin",
    "controller.placement.builtin.java_collections",
    "controller.placement.builtin.java_random",
    "controller.placement.builtin.legacy",
    "controller.placement.builtin.striped",
    "controller.placement.loader",
    "controller.placement.manual",
    "controller.placement.rules",
    "controller.placement.service",
    "controller.placement.settings",
    "controller.plugins",
    "controller.plugins.isolation",
    "controller.plugins.isolation.outcome",
    "controller.plugins.isolation.runner",
    "controller.plugins.loader",
    "controller.plugins.properties",
    "controller.security",
    "controller.server",
    "controller.topic_admin",
    "controller.topic_names",
    "protocol",
    "protocol._spec_index",
    "protocol.bytecode",  # the compiled code of the methods dataclasses writes, read before any class is made
    "protocol.caps",
    "protocol.client",
    "protocol.codec",
    "protocol.compiled",  # the codecs' bytecode cache: the first ApiVersions answer compiles codecs
    "protocol.codes",
    "protocol.emit",
    "protocol.errors",
    "protocol.exceptions",
    "protocol.framing",
    "protocol.registry",
    "protocol.resources",
    "protocol.runs",
    "protocol.spec",
    "protocol.wire",
}


def test_a_bare_server_imports_only_what_it_needs() -> None:
    # the second of two processes: the first may have to write the codecs the second reads whole
    everything = set(second_process(_SCRIPT))
    assert not {m for m in everything if m.partition(".")[0] == "construct"}, (
        "construct imported: codecs kept whole answer without it (protocol.compiled)"
    )
    loaded = {m for m in everything if m.partition(".")[0] != "construct"}
    subsystems = {s.module for s in SUBSYSTEMS}
    assert not loaded & subsystems, "a subsystem was built by a bare server"
    assert not {m for m in loaded if m.startswith("controller.records")}, "record codecs loaded at start"
    assert loaded - BARE == set(), "modules a bare server now loads: are they needed at start?"
    assert BARE - loaded == set(), "modules a bare server no longer loads: take them off the list"


def test_a_subsystem_is_built_at_its_first_use_then_is_a_plain_attribute() -> None:
    with ServerThread.start(clock="virtual") as server:
        controller = server.server.controller
        told: list[object] = []
        for subsystem in SUBSYSTEMS:
            assert controller.built(subsystem.attribute) is None, subsystem.attribute
            controller.when_built(subsystem.attribute, told.append)
        built = [server.call(lambda s=s: getattr(controller, s.attribute)) for s in SUBSYSTEMS]
        assert told == built
        for subsystem, value in zip(SUBSYSTEMS, built, strict=True):
            assert controller.__dict__[subsystem.attribute] is value
            assert getattr(controller, subsystem.attribute) is value
            assert controller.built(subsystem.attribute) is value
        late: list[object] = []
        controller.when_built("faults", late.append)
        assert late == [controller.faults]


def test_faults_of_the_settings_are_active_from_start() -> None:
    properties = {"simulator.faults": "error=NOT_CONTROLLER api=CreateTopics"}
    with ServerThread.start(properties=properties) as server:
        assert server.server.controller.built("faults") is not None
        admin = BlockingClient.connect(server.bootstrap, connect_timeout=10, request_timeout=10)
        try:
            answer = admin.send(
                "CreateTopicsRequest",
                {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}], "timeoutMs": 5000},
            )
        finally:
            admin.close()
        assert answer["Topics"][0]["ErrorCode"] == ErrorCode.NOT_CONTROLLER


def test_find_coordinator_makes_the_offsets_topic_and_loads_no_group_code() -> None:
    """A consumer with a group.id asks FindCoordinator at its start, whether or not it ever joins the group:
    the answer needs __consumer_offsets and its leaders, not the group coordinator's code."""
    with ServerThread.start() as server:
        controller = server.server.controller
        client = BlockingClient.connect(server.bootstrap, connect_timeout=10, request_timeout=10)
        try:
            answer = client.send("FindCoordinatorRequest", {"Key": "g", "KeyType": 0}, version=2)
            assert answer["ErrorCode"] == ErrorCode.NONE and answer["NodeId"] >= 0
            assert controller.built("offsets_topic") is not None and controller.built("groups") is None
            assert "__consumer_offsets" in controller.cluster.topics
            # The group's first request loads the groups, on the topic FindCoordinator made.
            joined = client.send("OffsetFetchRequest", {"GroupId": "g", "Topics": None}, version=2)
            assert joined["ErrorCode"] == ErrorCode.NONE
            assert controller.built("groups").topic is controller.offsets_topic
        finally:
            client.close()
