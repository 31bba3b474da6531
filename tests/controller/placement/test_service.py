"""PlacementService.place_now: a small placement by a built-in placer is answered at once, with what
place gives; everything else (a plugin, a big placement, a placer busy with another call) is left to
place, awaited."""

from __future__ import annotations

import pytest

from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.placement.service import PlacementFailure, PlacementRequest, PlacementService
from tests.support.placers import placer_file


async def service(placer: str = "striped", isolation: str = "inline") -> PlacementService:
    config = ServerConfig.from_properties(
        {"replica.placer.class.name": placer, "simulator.seed": "7", "simulator.placer.isolation": isolation}
    )
    return await PlacementService.start(config, Cluster(config.brokers, seed=config.seed))


async def test_a_small_builtin_placement_is_answered_at_once_as_place_answers_it():
    now, later = await service(), await service()
    for request in (
        PlacementRequest(12, 3),
        PlacementRequest(5, 2, node_ids=(0, 1, 2)),
        PlacementRequest(4, 1),
    ):
        assert now.place_now(request) == await later.place(request)
    # The same draws: both services' random generators moved alike.
    assert now.place_now(PlacementRequest(6, 3)) == await later.place(PlacementRequest(6, 3))


async def test_refusals_and_malformed_results_are_raised_as_place_raises_them():
    now = await service()
    with pytest.raises(PlacementFailure) as refused:
        now.place_now(PlacementRequest(3, 7))
    assert refused.value.error == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(PlacementFailure) as unknown:
        now.place_now(PlacementRequest(3, 1, node_ids=(42,)))
    assert (unknown.value.error, unknown.value.message) == (
        "INVALID_REQUEST",
        "NodeId names unregistered broker id(s) [42].",
    )


@pytest.mark.parametrize("isolation", ["inline", "process"])
async def test_a_plugin_is_always_awaited(isolation):
    plugin = await service(placer_file("RoundRobin"), isolation)
    try:
        assert plugin.place_now(PlacementRequest(3, 2)) is None
        assert await plugin.place(PlacementRequest(3, 2)) is not None
    finally:
        await plugin.close()


async def test_a_big_placement_is_awaited():
    big = await service()
    assert big.place_now(PlacementRequest(10_000, 3)) is None
