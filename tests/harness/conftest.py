"""One JVM with Kafka's own placement and election code for the tests of this directory."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from harness.kafka_rules import KafkaRules


@pytest.fixture(scope="session")
def kafka_rules() -> Iterator[KafkaRules]:
    with KafkaRules(timeout=300) as rules:
        yield rules


@pytest.fixture
def seed() -> int:
    """The random cases' seed: fixed under CI (the same cases every run), new on every local run, as the
    suite runs hypothesis (tests/conftest.py); a failure names it."""
    return 30 if os.environ.get("CI") else random.randrange(2**32)
