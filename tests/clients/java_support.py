"""What the Java client tests share: a three-broker cluster on a pumped virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from controller.embedded import ServerThread
from tests.support.pump import Pump

BROKERS = [(0, "a"), (1, "b"), (2, "c")]
#: A crashed broker is fenced (its leaderships move) 2 s of clock time after its last heartbeat; a new
#: group's first rebalance does not wait.
PROPERTIES = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
}


@contextmanager
def java_cluster(properties: dict | None = None) -> Iterator[ServerThread]:
    """Three brokers in three racks on a virtual clock that a pump moves at half speed."""
    with ServerThread.start(
        brokers=BROKERS, seed=7, clock="virtual", properties={**PROPERTIES, **(properties or {})}
    ) as server:
        pump = Pump(server)
        try:
            yield server
        finally:
            pump.stop()
