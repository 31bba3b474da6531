"""PlacementService.place_now: a small placement by a built-in placer is answered at once, with what
place gives; everything else (a plugin, a big placement, a placer busy with another call) is left to
place, awaited."""

from __future__ import annotations

import pytest

from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.placement.api import PlacementSpec
from controller.placement.service import PlacementFailure, PlacementService
from protocol.codes import ErrorCode
from tests.support.placers import placer_file


async def service(placer: str = "striped", isolation: str = "inline") -> PlacementService:
    config = ServerConfig.from_properties(
        {"replica.placer.class.name": placer, "simulator.seed": "7", "simulator.placer.isolation": isolation}
    )
    cluster = Cluster(config.brokers, seed=config.seed)
    return await PlacementService.start(config.placer_setup(), config.placement_limits(), cluster.view)


def request(num_partitions: int, rf: int, node_ids: tuple[int, ...] = ()) -> PlacementSpec:
    return PlacementSpec(0, num_partitions, rf, broker_ids=node_ids or None)


async def test_a_small_builtin_placement_is_answered_at_once_as_place_answers_it():
    now, later = await service(), await service()
    for spec in (
        request(12, 3),
        request(5, 2, node_ids=(0, 1, 2)),
        request(4, 1),
    ):
        assert now.place_now(spec) == await later.place(spec)
    # The same draws: both services' random generators moved alike.
    assert now.place_now(request(6, 3)) == await later.place(request(6, 3))


async def test_refusals_and_malformed_results_are_raised_as_place_raises_them():
    now = await service()
    with pytest.raises(PlacementFailure) as refused:
        now.place_now(request(3, 7))
    assert refused.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(PlacementFailure) as unknown:
        now.place_now(request(3, 1, node_ids=(42,)))
    assert (unknown.value.code, unknown.value.message) == (
        ErrorCode.INVALID_REQUEST,
        "NodeId names unregistered broker id(s) [42].",
    )


@pytest.mark.parametrize("isolation", ["inline", "process"])
async def test_a_plugin_is_always_awaited(isolation):
    plugin = await service(placer_file("RoundRobin"), isolation)
    try:
        assert plugin.place_now(request(3, 2)) is None
        assert await plugin.place(request(3, 2)) is not None
    finally:
        await plugin.close()


async def test_a_big_placement_is_awaited():
    big = await service()
    assert big.place_now(request(10_000, 3)) is None
