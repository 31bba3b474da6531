"""Topic administration against a real cluster state and real placers (no sockets)."""

from __future__ import annotations

import uuid

import pytest

from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.placement.service import PlacementService
from controller.topic_admin import NewPartitions, NewTopic, TopicAdmin
from protocol.codes import ErrorCode
from tests.support.placers import placer_file

PICKY = placer_file("PickyPlacer")


async def make_admin(
    placer: str = "striped", brokers=None, isolation: str = "inline", **props: str
) -> TopicAdmin:
    properties = {k.replace("_", "."): v for k, v in props.items()}
    properties.update({"replica.placer.class.name": placer, "simulator.seed": "7"})
    properties["simulator.placer.isolation"] = isolation
    if brokers is not None:
        properties["simulator.brokers"] = ",".join(f"{b[0]}:{b[1]}" for b in brokers)
        properties["simulator.brokers.fenced"] = ",".join(str(b[0]) for b in brokers if len(b) > 2 and b[2])
    config = ServerConfig.from_properties(properties)
    cluster = Cluster(config.brokers, seed=config.seed)
    placements = await PlacementService.start(config.placer_setup(), config.placement_limits(), cluster.view)
    return TopicAdmin(config, cluster, placements)


async def test_create_places_with_the_configured_placer_and_records_the_topic():
    admin = await make_admin("legacy")
    [result] = await admin.create_topics([NewTopic("orders", 4, 3)])
    assert result.ok and result.topic_id is not None
    topic = admin.cluster.topics["orders"]
    assert [p.replicas for p in topic.partitions] == result.replicas
    assert len(result.replicas) == 4 and all(len(rs) == 3 and len(set(rs)) == 3 for rs in result.replicas)
    assert [p.leader for p in topic.partitions] == [rs[0] for rs in result.replicas]
    assert admin.cluster.topic_by_id(result.topic_id) is topic


async def test_minus_one_takes_the_server_defaults():
    admin = await make_admin(num_partitions="5", default_replication_factor="2")
    [result] = await admin.create_topics([NewTopic("defaults")])
    assert len(result.replicas) == 5 and {len(rs) for rs in result.replicas} == {2}


async def test_validate_only_computes_without_creating():
    admin = await make_admin()
    [result] = await admin.create_topics([NewTopic("dry", 3, 2)], validate_only=True)
    # Kafka's controller answers a fresh topic id for a topic it only validated.
    assert result.ok and len(result.replicas) == 3 and result.topic_id is not None
    assert "dry" not in admin.cluster.topics


async def test_topic_ids_are_deterministic_with_a_seed():
    ids = []
    for _ in range(2):
        admin = await make_admin()
        results = await admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)])
        ids.append([r.topic_id for r in results])
    assert ids[0] == ids[1] and ids[0][0] != ids[0][1]


async def test_one_topics_failure_does_not_fail_the_others():
    admin = await make_admin()
    results = await admin.create_topics(
        [
            NewTopic("good", 2, 2),
            NewTopic("bad name!", 1, 1),
            NewTopic("too-many-replicas", 1, 9),
            NewTopic("zero", 0, 1),
            NewTopic("rf-zero", 1, 0),
            NewTopic("also-good", 1, 1),
        ]
    )
    assert [(r.name, r.error) for r in results] == [
        ("good", None),
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("too-many-replicas", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("zero", ErrorCode.INVALID_PARTITIONS),
        ("rf-zero", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("also-good", None),
    ]
    assert results[2].message == (
        "Unable to replicate the partition 9 time(s): The target replication factor of 9 cannot be reached "
        "because only 6 broker(s) are registered or some brokers have all their log directories cordoned."
    )
    assert results[3].message == "Number of partitions was set to an invalid non-positive value."
    assert results[4].message == "Replication factor must be larger than 0, or -1 to use the default value."
    assert set(admin.cluster.topics) == {"good", "also-good"}


async def test_existing_colliding_and_duplicate_names():
    admin = await make_admin()
    await admin.create_topics([NewTopic("s03.metrics", 1, 1)])
    results = await admin.create_topics(
        [NewTopic("s03.metrics", 1, 1), NewTopic("s03_metrics", 1, 1), NewTopic("twice"), NewTopic("twice")]
    )
    assert [(r.name, r.error, r.message) for r in results] == [
        ("s03.metrics", ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 's03.metrics' already exists."),
        (
            "s03_metrics",
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "Topic 's03_metrics' collides with existing topic: s03.metrics",
        ),
        ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]


async def test_a_plugin_failure_is_replica_placement_failed_for_that_topic_only():
    admin = await make_admin(PICKY)
    results = await admin.create_topics([NewTopic("reject-me", 2, 2), NewTopic("accept-me", 2, 2)])
    assert results[0].error == ErrorCode.REPLICA_PLACEMENT_FAILED
    assert results[0].message.endswith("PickyPlacer: no room for topic reject-me (partitions from 0)")
    assert results[1].ok and results[1].replicas == [[0, 1], [1, 2]]


async def test_manual_assignments():
    admin = await make_admin(brokers=[(0, "a"), (1, "b"), (2, "c", True)])
    ok, *bad = await admin.create_topics(
        [
            NewTopic("manual", assignments=[(0, [1, 0]), (1, [2, 1])]),
            NewTopic("unknown-broker", assignments=[(0, [0, 7])]),
            NewTopic("gap", assignments=[(0, [0]), (2, [1])]),
            NewTopic("all-fenced", assignments=[(0, [2])]),
            NewTopic("with-count", num_partitions=1, assignments=[(0, [0])]),
        ]
    )
    assert ok.ok and ok.replicas == [[1, 0], [2, 1]]
    partitions = admin.cluster.topics["manual"].partitions
    offline = admin.cluster.offline_replicas
    assert [(p.leader, p.isr, offline(p)) for p in partitions] == [(1, [1, 0], []), (1, [1], [2])]
    assert [(r.error, r.message) for r in bad] == [
        (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 7, but no such broker is registered.",
        ),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"),
        (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
            "controlled shutdown.",
        ),
        (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
    ]


async def test_create_partitions_places_from_the_current_count():
    admin = await make_admin(PICKY)
    await admin.create_topics([NewTopic("grow", 2, 2)])
    [result] = await admin.create_partitions([NewPartitions("grow", 5)])
    assert result.ok and result.replicas == [[2, 3], [3, 4], [4, 5]]
    assert [p.index for p in admin.cluster.topics["grow"].partitions] == [0, 1, 2, 3, 4]
    [dry] = await admin.create_partitions([NewPartitions("grow", 6)], validate_only=True)
    assert dry.ok and len(admin.cluster.topics["grow"].partitions) == 5


async def test_create_partitions_errors():
    admin = await make_admin(PICKY)
    await admin.create_topics([NewTopic("t", 3, 2), NewTopic("u", 1, 1)])
    results = await admin.create_partitions(
        [
            NewPartitions("t", 2),
            NewPartitions("u", 1),
            NewPartitions("missing", 4),
            NewPartitions("t", 4),
            NewPartitions("t", 5),
        ]
    )
    assert [(r.name, r.error, r.message) for r in results] == [
        ("t", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("u", ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),  # Kafka's controller gives no message
    ]
    [shrink] = await admin.create_partitions([NewPartitions("t", 2)])
    assert shrink.message == "The topic t currently has 3 partition(s); 2 would not be an increase."
    [wrong] = await admin.create_partitions([NewPartitions("t", 5, [[0, 1]])])
    assert (wrong.error, wrong.message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
    )
    [manual] = await admin.create_partitions([NewPartitions("t", 4, [[5, 4]])])
    assert manual.ok and admin.cluster.topics["t"].partitions[3].replicas == [5, 4]


async def test_create_partitions_plugin_failure_names_the_first_new_partition():
    admin = await make_admin(PICKY)
    await admin.create_topics([NewTopic("reject-later", assignments=[(0, [0])])])
    [result] = await admin.create_partitions([NewPartitions("reject-later", 3)])
    assert result.error == ErrorCode.REPLICA_PLACEMENT_FAILED
    assert result.message.endswith("PickyPlacer: no room for topic reject-later (partitions from 1)")


async def test_delete_by_name_and_by_id():
    admin = await make_admin()
    a, b = await admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)])
    unknown_id = uuid.UUID(int=12345)
    results = await admin.delete_topics(
        [("a", None), (None, b.topic_id), ("a", None), (None, unknown_id), (None, None)]
    )
    assert [(r.name, r.error) for r in results] == [
        ("a", None),
        ("b", None),
        ("a", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
        (None, ErrorCode.INVALID_REQUEST),
    ]
    assert results[1].topic_id == b.topic_id and admin.cluster.topics == {}
    [again] = await admin.create_topics([NewTopic("a", 1, 1)])
    assert again.ok and again.topic_id != a.topic_id


@pytest.mark.parametrize("timeout_ms", [0, -1])
async def test_a_client_that_does_not_wait_still_gets_its_topic(timeout_ms):
    admin = await make_admin()
    [result] = await admin.create_topics([NewTopic("quick", 1, 1)], timeout_ms=timeout_ms)
    assert result.ok


async def test_a_plugin_in_its_own_process_places_and_fails_per_topic():
    admin = await make_admin(PICKY, isolation="process")
    try:
        await admin.create_topics([NewTopic("first", 2, 2)])
        results = await admin.create_topics([NewTopic("second", 2, 2), NewTopic("reject-third", 1, 1)])
    finally:
        await admin.placements.close()
    assert results[0].ok and results[0].replicas == [[0, 1], [1, 2]]
    assert results[1].error == ErrorCode.REPLICA_PLACEMENT_FAILED
    assert results[1].message.endswith("PickyPlacer: no room for topic reject-third (partitions from 0)")


async def test_a_config_without_a_value_is_invalid_config():
    admin = await make_admin()
    [result] = await admin.create_topics(
        [NewTopic("configured", 1, 1, configs={"retention.ms": None, "a": "1"})]
    )
    assert (result.error, result.message) == (
        ErrorCode.INVALID_CONFIG,
        "Null value not supported for topic configs: retention.ms",
    )


async def test_a_request_of_many_partitions_runs_with_the_collector_paused_and_its_topics_frozen(monkeypatch):
    """Full collections over every partition made so far held the event loop 0.2 to 0.5 s each while
    requests of 100 topics of 1,000 partitions were created (benchmarks/scale.py): a request of more than
    2,000 partitions pauses the collector, however few its topics, and what it made is frozen after."""
    import gc

    admin = await make_admin()
    enabled: list[bool] = []
    place = admin._place

    async def watched(*args, **kwargs):
        enabled.append(gc.isenabled())
        return await place(*args, **kwargs)

    monkeypatch.setattr(admin, "_place", watched)
    await admin.create_topics([NewTopic("few", 10, 1)])
    frozen = gc.get_freeze_count()
    await admin.create_topics([NewTopic(f"wide{i}", 1000, 1) for i in range(3)])
    assert enabled == [True, False, False, False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen + 3000  # at least the partitions' states
