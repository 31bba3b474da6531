"""The differential pairs: each real Kafka cluster (tests/conftest.py's session fixtures) beside a
simulator of the same shape, in one :class:`harness.differential.session.DifferentialSession`.

Started at their first use, stopped at the end of the session (a failing test too). Every test that uses
a real Kafka cluster runs on the same worker of a parallel run (tests/conftest.py), so the pairs are
started once and shared by every test of this folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.differential.session import DifferentialSession
    from harness.kafka_cluster import KafkaCluster


def _sim(shape: str) -> Iterator[Any]:
    from harness.differential.machine import sim_for

    server = sim_for(shape)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sim_single() -> Iterator[Any]:
    yield from _sim("single")


@pytest.fixture(scope="session")
def sim_three_racks() -> Iterator[Any]:
    yield from _sim("three-racks")


def _pair(cluster: KafkaCluster, sim: Any, shape: str) -> Iterator[DifferentialSession]:
    from harness.differential.machine import paired_session

    with paired_session(cluster, sim, shape) as session:
        yield session


@pytest.fixture(scope="session")
def differential_single(kafka_single: KafkaCluster, sim_single: Any) -> Iterator[DifferentialSession]:
    yield from _pair(kafka_single, sim_single, "single")


@pytest.fixture(scope="session")
def differential_three_racks(
    kafka_three_racks: KafkaCluster, sim_three_racks: Any
) -> Iterator[DifferentialSession]:
    yield from _pair(kafka_three_racks, sim_three_racks, "three-racks")


@pytest.fixture
def differential(request: pytest.FixtureRequest) -> Iterator[DifferentialSession]:
    """The pair named by the test's ``shape`` parameter, with a sequence begun and ended around the
    test."""
    session: DifferentialSession = request.getfixturevalue(
        "differential_single" if request.param == "single" else "differential_three_racks"
    )
    session.strict = True
    session.begin()
    try:
        yield session
    finally:
        session.end()


#: The fixtures through which a test reaches a real cluster: the pairs, and the clusters themselves.
_SESSIONS = ("differential", "differential_single", "differential_three_racks")
_CLUSTERS = ("kafka_single", "kafka_three_racks")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failed test shows the end of each real Kafka node's log beside its answers (what Kafka did at
    the moment: a leader moved, a broker fenced), in the run's output, where CI keeps it; and its
    cluster's folder is kept after the session (tests/conftest.py names it)."""
    report = yield
    if report.failed and call.when == "call":
        funcargs = getattr(item, "funcargs", {})
        clusters = [funcargs[n].kafka.cluster for n in _SESSIONS if n in funcargs]
        clusters += [funcargs[n] for n in _CLUSTERS if n in funcargs and funcargs[n] not in clusters]
        for cluster in clusters:
            cluster.keep_folder = True
            for node_id, node in sorted(cluster.nodes.items()):
                report.sections.append((f"Kafka node {node_id}: the end of its log", node.log_tail(60)))
    return report
