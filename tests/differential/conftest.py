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
