"""What the consumer-group client tests share: a cluster for them, and waiting for assignments."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from controller.embedded import ServerThread
from controller.groups.durable import OFFSETS_TOPIC, coordinator_partition

#: Three brokers, real clock; a new group's first rebalance does not wait, and a crashed broker is fenced
#: (its leaders move) after 2 s, so a coordinator failover takes seconds.
GROUP_PROPERTIES = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
}
BROKERS = [(0, "a"), (1, "b"), (2, "c")]


@contextmanager
def group_cluster() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=BROKERS, seed=5, properties=GROUP_PROPERTIES) as server:
        yield server


def wait_for(condition: Callable[[], bool], timeout: float, step: Callable[[], None] = lambda: None) -> None:
    """Calls ``step`` until ``condition()`` holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g}s")
        step()
        time.sleep(0.02)


def disjoint_and_complete(assignments: list[set[int]], partitions: int) -> bool:
    """Every partition assigned exactly once, every consumer given some."""
    every = [p for a in assignments for p in a]
    return all(assignments) and sorted(every) == list(range(partitions))


def coordinator_of(server: ServerThread, group: str) -> int:
    """The broker leading the group's ``__consumer_offsets`` partition."""
    return server.partition_state(OFFSETS_TOPIC, coordinator_partition(group, 50)).leader
