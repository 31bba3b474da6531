"""CreateReplicaPlacement (apiKey 68) over real sockets: every row of the error table, every placer fault."""

from __future__ import annotations

import asyncio
import time

import pytest

from controller.defaults import DEFAULT_BROKERS
from controller.placement import ClusterView, PlacementSpec, load_placer
from protocol.client import ErrorResponse, KafkaClient
from tests.support.placers import placer_file as placer

FENCED_CLUSTER = [(0, "r1"), (1, "r2"), (2, "r3"), (3, "r1", True), (4, "r2"), (5, "r3")]

# The striped placement of the default cluster (brokers 0..5, broker i in rack-{i % 3 + 1}, none fenced)
# as the JVM computes it: StripedReference.place(new Random(seed), brokers, racks, partitions, 3) of
# tests/controller/placement/data/StripedReference.java, where java.util.Random and Java's collections
# decide the order.
JVM_STRIPED_SEED_0_12x3 = [
    [5, 0, 4], [3, 1, 2], [4, 5, 0], [2, 3, 1], [0, 4, 5], [1, 2, 3],
    [5, 1, 0], [4, 3, 2], [0, 5, 1], [2, 4, 3], [1, 0, 5], [3, 2, 4],
]  # fmt: skip
JVM_STRIPED_SEED_5_8x3 = [
    [5, 0, 1], [3, 4, 2], [1, 5, 0], [2, 3, 4], [0, 1, 5], [4, 2, 3], [3, 2, 1], [5, 4, 0],
]  # fmt: skip


async def place_error(client: KafkaClient, *args, **kwargs) -> ErrorResponse:
    with pytest.raises(ErrorResponse) as info:
        await client.create_replica_placement(*args, **kwargs)
    return info.value


async def test_default_server_places_like_the_striped_placer_in_process(placement_sim):
    replicas = await placement_sim.client.create_replica_placement(12, 3)
    expected = load_placer("striped", {"simulator.seed": "0"}).place(
        PlacementSpec(0, 12, 3), ClusterView(DEFAULT_BROKERS)
    )
    assert replicas == [list(rs) for rs in expected]
    assert replicas == JVM_STRIPED_SEED_0_12x3


async def test_same_seed_same_answers_across_servers(placement_sim_factory):
    answers = []
    for _ in range(2):
        server = placement_sim_factory(seed=7)
        async with await KafkaClient.connect(server.bootstrap) as client:
            answers.append([await client.create_replica_placement(6, 2) for _ in range(3)])
    assert answers[0] == answers[1]


async def test_start_partition_numbers_the_response(placement_sim):
    response = await placement_sim.client.send(
        68, {"NumPartitions": 3, "ReplicationFactor": 2, "StartPartition": 10, "TopicName": "t"}
    )
    assert response["ErrorCode"] == 0
    assert [p["PartitionId"] for p in response["ReplicaPlacement"]] == [10, 11, 12]


async def test_node_id_subset_is_honoured(placement_sim):
    replicas = await placement_sim.client.create_replica_placement(10, 2, node_ids=[1, 3, 5])
    assert {b for rs in replicas for b in rs} <= {1, 3, 5}


async def test_force_simple_placement_uses_the_classic_rack_unaware_algorithm(placement_sim_factory):
    server = placement_sim_factory(placer="fluvio", seed=3)
    async with await KafkaClient.connect(server.bootstrap) as client:
        replicas = await client.create_replica_placement(10, 3, force_simple=True)
    expected = load_placer("legacy", {"simulator.seed": "3"}).place(
        PlacementSpec(0, 10, 3, force_simple=True), ClusterView(DEFAULT_BROKERS)
    )
    assert replicas == [list(rs) for rs in expected]


async def test_force_simple_placement_from_a_fixed_start_index_is_kafkas_closed_form(placement_sim_factory):
    server = placement_sim_factory(
        placer="fluvio", properties={"simulator.placer.legacy.fixed.start.index": "0"}
    )
    async with await KafkaClient.connect(server.bootstrap) as client:
        replicas = await client.create_replica_placement(10, 3, force_simple=True)
    # AdminUtils over brokers 0..5, racks ignored, startIndex = shift = 0: the leader of p is p % 6 and
    # follower j sits 1 + (shift + j) % 5 after it, the shift growing by one at p = 6.
    # p0-5: [p, p+1, p+2] mod 6; p6: 0 then 0+2, 0+3; p7: [1, 3, 4]; p8: [2, 4, 5]; p9: [3, 5, 0].
    assert replicas == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 0], [5, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 5], [3, 5, 0],
    ]  # fmt: skip


@pytest.mark.parametrize("count", [0, -4])
async def test_non_positive_partitions(placement_sim, count):
    error = await place_error(placement_sim.client, count, 3)
    assert error.name == "INVALID_PARTITIONS" and error.code == 37
    assert str(count) in error.message


async def test_non_positive_replication_factor(placement_sim):
    error = await place_error(placement_sim.client, 3, 0)
    assert (error.name, error.code) == ("INVALID_REPLICATION_FACTOR", 38)
    assert error.message == "Invalid replication factor 0: the replication factor must be positive."


async def test_replication_factor_above_the_brokers_uses_kafkas_wording(placement_sim):
    error = await place_error(placement_sim.client, 3, 7)
    assert error.name == "INVALID_REPLICATION_FACTOR"
    assert error.message == (
        "The target replication factor of 7 cannot be reached because only 6 broker(s) are registered or some brokers have all their log directories cordoned."
    )


async def test_replication_factor_above_the_node_id_subset(placement_sim):
    error = await place_error(placement_sim.client, 3, 3, node_ids=[0, 1])
    assert error.name == "INVALID_REPLICATION_FACTOR"
    assert "only 2 broker(s)" in error.message


@pytest.mark.parametrize(("node_ids", "named"), [([0, 99, 77], "[77, 99]"), ([1, 2, 1], "[1]")])
async def test_bad_node_ids_are_invalid_requests(placement_sim, node_ids, named):
    error = await place_error(placement_sim.client, 3, 1, node_ids=node_ids)
    assert (error.name, error.code) == ("INVALID_REQUEST", 42)
    assert named in error.message


async def test_the_replica_limit_is_a_policy_violation(placement_sim_factory):
    server = placement_sim_factory(properties={"simulator.placement.max.replicas": "100"})
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 50, 3)
        assert (error.name, error.code) == ("POLICY_VIOLATION", 44)
        assert "100" in error.message and "simulator.placement.max.replicas" in error.message
        assert len(await client.create_replica_placement(33, 3)) == 33


async def test_placer_failure_is_replica_placement_failed_with_class_and_message(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Raising"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 3, 2, topic="orders", start_partition=4)
    assert (error.name, error.code) == ("REPLICA_PLACEMENT_FAILED", 1001)
    assert "Raising" in error.message
    assert "no room for topic orders from partition 4" in error.message


async def test_tagged_fields_and_options_reach_the_placer(placement_sim_factory):
    server = placement_sim_factory(placer=placer("EchoTopic"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 3, 2, topic="payments", start_partition=7, node_ids=[0, 2, 4])
        assert "topic=payments start=7 brokers=(0, 2, 4) simple=False" in error.message
        error = await place_error(client, 3, 2)
        assert "topic=None start=0 brokers=None" in error.message


async def test_configure_receives_every_property(placement_sim_factory):
    server = placement_sim_factory(placer=placer("ConfigEcho"), properties={"custom.key": "hello"})
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 1, 1)
    assert "custom.key=hello" in error.message


def test_a_plugin_that_cannot_be_configured_stops_startup(placement_sim_factory):
    with pytest.raises(Exception, match="custom.key is required"):
        placement_sim_factory(placer=placer("BadConfigure"))


async def test_unexpected_exception_is_replica_placement_failed(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Unexpected"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 3, 2)
    assert error.name == "REPLICA_PLACEMENT_FAILED"
    assert "Unexpected" in error.message and "KeyError" in error.message


MALFORMED = [
    ("WrongCount", "returned 5 partition(s), expected 6"),
    ("WrongLength", "partition 1 has 2 replica(s), expected 3"),
    ("Repeated", "partition 0 repeats broker(s)"),
    ("UnknownBroker", "partition 0 names unknown broker(s) [4242]"),
    ("FencedLeader", "partition 0 has fenced broker 3 as its leader"),
    ("NotAList", "returned int, not a list of replica lists"),
    ("NonIntReplica", "partition 0 has a replica that is not a broker id"),
    ("Unpicklable", "partition 0 has a replica that is not a broker id"),
]


@pytest.mark.parametrize(("name", "says"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_malformed_results_are_rejected_saying_what_is_wrong(placement_sim_factory, name, says):
    server = placement_sim_factory(placer=placer(name), brokers=FENCED_CLUSTER)
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 6, 3)
        assert error.name == "REPLICA_PLACEMENT_FAILED"
        assert says in error.message, error.message
        # The server is still fine: ApiVersions answers.
        assert 68 in await client.negotiate()


async def test_result_outside_node_id_is_rejected(placement_sim_factory):
    server = placement_sim_factory(placer=placer("IgnoresNodeId"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 4, 2, node_ids=[0, 1, 2])
    assert error.name == "REPLICA_PLACEMENT_FAILED"
    assert "outside NodeId [0, 1, 2]" in error.message


async def test_deferring_placer_falls_back_to_the_default(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Deferring"), seed=5)
    async with await KafkaClient.connect(server.bootstrap) as client:
        replicas = await client.create_replica_placement(8, 3)
    expected = load_placer("striped", {"simulator.seed": "5"}).place(
        PlacementSpec(0, 8, 3), ClusterView(DEFAULT_BROKERS)
    )
    assert replicas == [list(rs) for rs in expected]
    assert replicas == JVM_STRIPED_SEED_5_8x3


@pytest.mark.parametrize("isolation", ["process", "inline"])
async def test_async_placer(placement_sim_factory, isolation):
    server = placement_sim_factory(
        placer=placer("AsyncPlacer"), properties={"simulator.placer.isolation": isolation}
    )
    async with await KafkaClient.connect(server.bootstrap) as client:
        assert await client.create_replica_placement(3, 2) == [[0, 1], [1, 2], [2, 3]]


async def test_printing_placer_does_not_corrupt_the_worker_channel(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Printing"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        for _ in range(3):
            assert await client.create_replica_placement(2, 2) == [[0, 1], [1, 2]]


async def test_stateful_placer_sees_calls_in_order(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Counting"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        leaders = [(await client.create_replica_placement(1, 1))[0][0] for _ in range(4)]
    assert leaders == [0, 1, 2, 3]


async def _api_versions_latency(bootstrap: str, rounds: int = 5) -> float:
    async with await KafkaClient.connect(bootstrap) as other:
        worst = 0.0
        for _ in range(rounds):
            start = time.perf_counter()
            await other.send(18, {})
            worst = max(worst, time.perf_counter() - start)
            await asyncio.sleep(0.02)
        return worst


@pytest.mark.parametrize("name", ["Hanging", "Spinning", "AsyncHanging"])
async def test_a_stuck_placer_times_out_while_others_are_served(placement_sim_factory, name):
    server = placement_sim_factory(placer=placer(name))
    async with await KafkaClient.connect(server.bootstrap) as client:
        stuck = asyncio.ensure_future(client.create_replica_placement(3, 2, timeout_ms=1500))
        await asyncio.sleep(0.2)
        worst = await _api_versions_latency(server.bootstrap)
        with pytest.raises(ErrorResponse) as info:
            await stuck
    assert (info.value.name, info.value.code) == ("REQUEST_TIMED_OUT", 7)
    assert "1500" in info.value.message
    # Other connections were answered while the placer was stuck (generous bound for a loaded CI machine).
    assert worst < 0.5


async def test_later_placements_work_after_a_timeout(placement_sim_factory, tmp_path):
    server = placement_sim_factory(
        placer=placer("SlowOnce"), properties={"test.slow.marker": str(tmp_path / "slept")}
    )
    async with await KafkaClient.connect(server.bootstrap) as client:
        error = await place_error(client, 3, 2, topic="slow", timeout_ms=500)
        assert error.name == "REQUEST_TIMED_OUT"
        # The stuck worker was replaced by a fresh one; the next placement is answered.
        assert await client.create_replica_placement(3, 2, topic="slow", timeout_ms=30000) is not None
        assert await client.create_replica_placement(2, 2, topic="fast") == [[0, 1], [1, 2]]


async def test_requests_queued_behind_a_stuck_placer_time_out_too(placement_sim_factory):
    server = placement_sim_factory(placer=placer("SlowOnce"))
    c1 = await KafkaClient.connect(server.bootstrap)
    c2 = await KafkaClient.connect(server.bootstrap)
    try:
        first = asyncio.ensure_future(c1.create_replica_placement(1, 1, topic="slow", timeout_ms=800))
        await asyncio.sleep(0.1)
        second = asyncio.ensure_future(c2.create_replica_placement(1, 1, topic="queued", timeout_ms=300))
        errors = await asyncio.gather(first, second, return_exceptions=True)
        assert [e.name for e in errors] == ["REQUEST_TIMED_OUT", "REQUEST_TIMED_OUT"]
        assert await c2.create_replica_placement(1, 1, timeout_ms=30000) == [[0]]
    finally:
        await c1.close()
        await c2.close()


async def test_a_placer_that_kills_its_process_fails_the_request_and_is_restarted(placement_sim_factory):
    server = placement_sim_factory(placer=placer("Exiting"))
    async with await KafkaClient.connect(server.bootstrap) as client:
        for _ in range(2):
            error = await place_error(client, 3, 2)
            assert error.name == "REPLICA_PLACEMENT_FAILED"
            assert "exited with code 3" in error.message
        assert 18 in await client.negotiate()


async def test_timeout_must_be_positive(placement_sim):
    error = await place_error(placement_sim.client, 3, 2, timeout_ms=0)
    assert error.name == "INVALID_REQUEST" and "timeoutMs" in error.message


async def test_a_placer_past_its_memory_limit_fails_clearly_and_is_restarted(placement_sim_factory):
    server = placement_sim_factory(
        placer=placer("Hungry"), properties={"simulator.placer.worker.max.memory.mb": "300"}
    )
    async with await KafkaClient.connect(server.bootstrap) as client:
        for _ in range(2):  # the worker is replaced after each failure
            error = await place_error(client, 3, 2)
            assert (error.name, error.code) == ("REPLICA_PLACEMENT_FAILED", 1001)
            assert "Hungry: the plugin ran out of memory" in error.message
            assert "memory limit of 300 MB (simulator.placer.worker.max.memory.mb)" in error.message
        assert 18 in await client.negotiate()


async def test_timeout_ms_is_capped_by_the_servers_limit(placement_sim_factory):
    server = placement_sim_factory(
        placer=placer("Hanging"), properties={"simulator.request.max.timeout.ms": "1000"}
    )
    async with await KafkaClient.connect(server.bootstrap, request_timeout=60) as client:
        started = time.monotonic()
        error = await place_error(client, 3, 2, timeout_ms=600_000)
        took = time.monotonic() - started
    assert (error.name, error.code) == ("REQUEST_TIMED_OUT", 7)
    assert error.message == (
        f"The placer {placer('Hanging')} did not answer within 1000 ms "
        "(timeoutMs=600000, capped by simulator.request.max.timeout.ms)."
    )
    assert 0.9 < took < 20  # a 600 s wait without the cap


async def test_a_clients_disconnect_cancels_its_placement(placement_sim_factory, tmp_path):
    """The placer hangs for the first client, who gives up; the next client is answered at once instead of
    queueing behind the abandoned call until its two-minute timeout."""
    server = placement_sim_factory(
        placer=placer("SlowOnce"), properties={"test.slow.marker": str(tmp_path / "slept")}
    )
    leaving = await KafkaClient.connect(server.bootstrap)
    stuck = asyncio.ensure_future(leaving.create_replica_placement(1, 1, topic="slow", timeout_ms=120_000))
    await asyncio.sleep(0.5)
    await leaving.close()
    with pytest.raises(Exception):  # noqa: B017 - the client's own error for a closed connection
        await stuck
    async with await KafkaClient.connect(server.bootstrap, request_timeout=60) as client:
        started = time.monotonic()
        assert await client.create_replica_placement(2, 2, topic="next", timeout_ms=120_000) == [
            [0, 1],
            [1, 2],
        ]
        took = time.monotonic() - started
    assert took < 20  # 120 s without the cancellation


async def test_partition_ids_past_int32_are_an_invalid_request(placement_sim):
    error = await place_error(placement_sim.client, 2, 1, start_partition=2**31 - 1)
    assert (error.name, error.code) == ("INVALID_REQUEST", 42)
    assert "the largest partition id" in error.message
    last = await placement_sim.client.send(
        68, {"NumPartitions": 1, "ReplicationFactor": 1, "StartPartition": 2**31 - 1}
    )
    assert last["ReplicaPlacement"][0]["PartitionId"] == 2**31 - 1
