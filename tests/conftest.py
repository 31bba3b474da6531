"""Settings and shared fixtures for the whole suite.

Under CI (``CI`` set in the environment) hypothesis runs derandomized: the same examples every run, so a
result depends on the code alone; without it, every local run explores new examples. No deadline in
either case: the machines are shared, and a slow example is not a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from harness.kafka_cluster import KafkaCluster

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A parametrized hypothesis test starts each case from its own settings.

    Hypothesis's pytest plugin gives each case of a parametrized test new settings whose parent is the
    test function's settings, and stores them back on the function, so the chain of parents grows by one
    per case. Derandomized (the "ci" profile) the database is None, which a settings object cannot cache,
    so reading it walks the whole chain: after about 950 cases of one test (tests/protocol/test_caps.py)
    that walk passed the recursion limit and every hypothesis test after it failed. The settings the test
    was declared with are kept on the first case and put back before each later one."""
    fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    declared = getattr(fn, "_hypothesis_internal_use_settings", None)
    if declared is None:
        return
    first = fn.__dict__.setdefault("_placement_sim_declared_settings", declared)
    fn._hypothesis_internal_use_settings = first


#: Session fixtures that start something big (a SparkSession, a real Kafka cluster): the tests that use
#: one run in one worker of a parallel run, so that it is started once.
#: (``differential`` asks for its cluster by name, so it is named too.)
_SHARED_FIXTURES = {
    "spark": "spark",
    "kafka_single": "kafka",
    "kafka_three_racks": "kafka",
    "differential": "kafka",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How `make test` shares the tests between its two workers (pytest-xdist's ``--dist loadgroup``):
    a test file's tests together, in their order, on one worker (its module fixtures are made once, and a
    test may rely on the one before it), and every test that uses a big session fixture on the same one.
    Run before xdist's own hook, which reads the groups given here."""
    groups: dict[str, str] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        names = getattr(item, "fixturenames", ())
        shared = next((g for f, g in _SHARED_FIXTURES.items() if f in names), None)
        if shared is not None or path not in groups:
            groups[path] = shared or groups.get(path, path)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid.split("::", 1)[0]]))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] SparkSession for the whole test session (the sweep and its command share it)."""
    from placement_sim.pipeline.spark_job import spark_session

    session = spark_session(
        "local[2]",
        app_name="placement-sim tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        log_level="ERROR",
    )
    yield session
    session.stop()


#: What each real Kafka cluster started in this session took (printed at the end of the run).
_KAFKA_SUMMARIES: list[str] = []


def _kafka_cluster(shape: str) -> Iterator[KafkaCluster]:
    from harness.kafka_cluster import KafkaCluster

    cluster = KafkaCluster.start(shape)
    _KAFKA_SUMMARIES.append(cluster.summary())
    try:
        yield cluster
    finally:
        if cluster.keep_folder:  # a test of it failed (tests/differential/conftest.py)
            _KAFKA_SUMMARIES.append(
                f"{shape}: kept {cluster.folder} (each node's server.log) after a failed test"
            )
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_single() -> Iterator[KafkaCluster]:
    """A real Apache Kafka (the pinned 4.x, ``make reference``): one combined controller+broker, node 0,
    on a loopback ephemeral port; started at its first use, stopped by PID at the end of the session
    (harness/kafka_cluster.py; docs/reference.md)."""
    yield from _kafka_cluster("single")


@pytest.fixture(scope="session")
def kafka_three_racks() -> Iterator[KafkaCluster]:
    """A real Apache Kafka: a dedicated controller (node 100) and brokers 0, 1, 2 in racks a, b, c."""
    yield from _kafka_cluster("three-racks")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _KAFKA_SUMMARIES:
        terminalreporter.write_line(f"reference cluster: {line}")
