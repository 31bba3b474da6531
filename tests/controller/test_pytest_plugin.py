"""The pytest plugin as a user's test suite sees it (run through pytester in a fresh pytest)."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_fixtures_are_available_to_any_test_suite(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.asyncio
        async def test_async_fixture(placement_sim):
            replicas = await placement_sim.client.create_replica_placement(3, 3)
            assert len(replicas) == 3
            assert placement_sim.bootstrap.startswith("127.0.0.1:")

        def test_factory_with_a_placer_and_brokers(placement_sim_factory):
            server = placement_sim_factory(placer="legacy", brokers=[(1, "a"), (2, "b"), (3, None, True)])
            assert server.port > 0 and server.bootstrap != ""

        def test_sync_server(placement_sim_server):
            assert placement_sim_server.stats["connections"] == 0
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=strict")
    result.assert_outcomes(passed=3)
