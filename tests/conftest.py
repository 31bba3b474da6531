"""Settings and shared fixtures for the whole suite.

Under CI (``CI`` set in the environment) hypothesis runs derandomized: the same examples every run, so a
result depends on the code alone; without it, every local run explores new examples. No deadline in
either case: the machines are shared, and a slow example is not a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


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
