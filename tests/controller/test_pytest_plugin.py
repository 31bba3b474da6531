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


def test_the_async_fixture_needs_no_pytest_asyncio_configuration(pytester):
    # No asyncio_mode, no marker: pytest-asyncio's defaults (strict mode).
    pytester.makepyfile(
        """
        async def test_async_fixture_without_a_marker(placement_sim):
            replicas = await placement_sim.client.create_replica_placement(4, 2)
            assert [len(r) for r in replicas] == [2, 2, 2, 2]
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_sync_fixture_has_a_blocking_client(pytester):
    pytester.makepyfile(
        """
        def test_blocking_client(placement_sim_sync):
            client = placement_sim_sync.client
            replicas = client.create_replica_placement(3, 3, topic="orders")
            assert [len(set(r)) for r in replicas] == [3, 3, 3]
            metadata = client.send("MetadataRequest", {"Topics": None})
            assert sorted(b["NodeId"] for b in metadata["Brokers"]) == [0, 1, 2, 3, 4, 5]
            assert placement_sim_sync.stats["requests:68"] == 1
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=1)


def test_without_pytest_asyncio_the_async_fixture_says_what_is_missing(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.usefixtures("placement_sim")
        def test_needs_the_async_fixture():
            pass
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio", "-W", "default")
    result.assert_outcomes(errors=1)  # failed in setup, before the test body
    result.stdout.fnmatch_lines(["*needs pytest-asyncio: pip install pytest-asyncio*"])
