"""Test placers, loaded by file path (``tests/support/placers.py:Name``): well-behaved ones, and ones
that misbehave on purpose for the fault tests. ``placer_file(name)`` gives the path to load one."""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from controller.placement.api import ClusterView, PlacementSpec, ReplicaPlacementError, ReplicaPlacer

PLACERS_FILE = Path(__file__)


def placer_file(name: str) -> str:
    """The ``replica.placer.class.name`` of a placer in this file."""
    return f"{PLACERS_FILE}:{name}"


def _round_robin(spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
    """Partition p on the unfenced usable brokers (sorted) from the p-th on, counting from start_partition."""
    ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
    n = len(ids)
    first = spec.start_partition
    return [[ids[(first + p + r) % n] for r in range(spec.num_replicas)] for p in range(spec.num_partitions)]


class RoundRobin(ReplicaPlacer):
    def place(self, spec, cluster):
        return _round_robin(spec, cluster)


class Raising(ReplicaPlacer):
    def place(self, spec, cluster):
        raise ReplicaPlacementError(f"no room for topic {spec.topic} from partition {spec.start_partition}")


class Unexpected(ReplicaPlacer):
    def place(self, spec, cluster):
        return {}["missing"]


class Hanging(ReplicaPlacer):
    """Blocks the calling thread: a time.sleep that would stall any event loop it ran on."""

    def place(self, spec, cluster):
        time.sleep(3600)


class Spinning(ReplicaPlacer):
    def place(self, spec, cluster):
        while True:
            pass


class SlowOnce(ReplicaPlacer):
    """Sleeps past any short timeout on the first call for topic "slow" of a server, then answers.

    "Once" holds across worker restarts: the marker file named by the property ``test.slow.marker``
    records that the sleep happened (without the property, every worker sleeps once).
    """

    def configure(self, configs):
        self.marker = configs.get("test.slow.marker")
        self.slept = False

    def place(self, spec, cluster):
        if spec.topic == "slow" and not self._slept_before():
            time.sleep(3600)
        return _round_robin(spec, cluster)

    def _slept_before(self) -> bool:
        if self.marker is None:
            slept, self.slept = self.slept, True
            return slept
        try:
            with open(self.marker, "x"):
                return False
        except FileExistsError:
            return True


class Slow(ReplicaPlacer):
    """Answers after a second: longer than the fault tests' idle limit, well within timeoutMs."""

    def place(self, spec, cluster):
        time.sleep(1.0)
        return _round_robin(spec, cluster)


class Exiting(ReplicaPlacer):
    def place(self, spec, cluster):
        os._exit(3)


class Printing(ReplicaPlacer):
    def place(self, spec, cluster):
        print("a placer that prints must not corrupt anything")
        sys.stdout.flush()
        return _round_robin(spec, cluster)


class Deferring(ReplicaPlacer):
    def place(self, spec, cluster):
        return None


class AsyncPlacer(ReplicaPlacer):
    async def place(self, spec, cluster):
        await asyncio.sleep(0.01)
        return _round_robin(spec, cluster)


class AsyncHanging(ReplicaPlacer):
    async def place(self, spec, cluster):
        await asyncio.sleep(3600)


class Counting(ReplicaPlacer):
    """Stateful: partition p of call k leads on broker (k + p) mod n, so call order is visible."""

    def configure(self, configs):
        self.calls = 0

    def place(self, spec, cluster):
        ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
        k, self.calls = self.calls, self.calls + 1
        return [
            [ids[(k + p + r) % len(ids)] for r in range(spec.num_replicas)]
            for p in range(spec.num_partitions)
        ]


class EchoTopic(ReplicaPlacer):
    """Fails on purpose with what it was asked, to show the tagged fields reach the placer."""

    def place(self, spec, cluster):
        raise ReplicaPlacementError(
            f"topic={spec.topic} start={spec.start_partition} brokers={spec.broker_ids} simple={spec.force_simple}"
        )


class ConfigEcho(ReplicaPlacer):
    def configure(self, configs):
        self.configs = dict(configs)

    def place(self, spec, cluster):
        raise ReplicaPlacementError(f"custom.key={self.configs.get('custom.key')}")


class BadConfigure(ReplicaPlacer):
    def configure(self, configs):
        raise ValueError("custom.key is required")

    def place(self, spec, cluster):
        return None


# Malformed results, one kind each.
class WrongCount(ReplicaPlacer):
    def place(self, spec, cluster):
        return _round_robin(spec, cluster)[:-1]


class WrongLength(ReplicaPlacer):
    def place(self, spec, cluster):
        result = _round_robin(spec, cluster)
        result[1] = result[1][:-1]
        return result


class Repeated(ReplicaPlacer):
    def place(self, spec, cluster):
        result = _round_robin(spec, cluster)
        result[0][1] = result[0][0]
        return result


class UnknownBroker(ReplicaPlacer):
    def place(self, spec, cluster):
        result = _round_robin(spec, cluster)
        result[0][-1] = 4242
        return result


class FencedLeader(ReplicaPlacer):
    def place(self, spec, cluster):
        fenced = [b.id for b in cluster.brokers if b.fenced]
        result = _round_robin(spec, cluster)
        result[0] = [fenced[0]] + [r for r in result[0] if r != fenced[0]][: spec.num_replicas - 1]
        return result


class IgnoresNodeId(ReplicaPlacer):
    def place(self, spec, cluster):
        ids = sorted(b.id for b in cluster.brokers if not b.fenced)
        return [
            [ids[(p + r) % len(ids)] for r in range(spec.num_replicas)] for p in range(spec.num_partitions)
        ]


class NotAList(ReplicaPlacer):
    def place(self, spec, cluster):
        return 42


class NonIntReplica(ReplicaPlacer):
    def place(self, spec, cluster):
        result: list[list[object]] = [list(rs) for rs in _round_robin(spec, cluster)]
        result[0][0] = "zero"
        return result


class Unpicklable(ReplicaPlacer):
    def place(self, spec, cluster):
        result: list[list[object]] = [list(rs) for rs in _round_robin(spec, cluster)]
        result[0][0] = lambda: 0
        return result


class PickyPlacer(ReplicaPlacer):
    """Refuses topics whose name starts with ``reject``; places the others round-robin over unfenced brokers."""

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        if spec.topic is not None and spec.topic.startswith("reject"):
            raise ReplicaPlacementError(
                f"no room for topic {spec.topic} (partitions from {spec.start_partition})"
            )
        return _round_robin(spec, cluster)


class RecordingPlacer(ReplicaPlacer):
    """Places every partition on brokers 0..rf-1 and records what each call saw, and which instance it
    was (a serial number: ``id()`` of a placer freed after its run can come back for the next one)."""

    calls: ClassVar[list[tuple[int, str | None, int, int, int]]] = []
    instances: ClassVar[Iterator[int]] = itertools.count()

    def __init__(self) -> None:
        self.serial = next(RecordingPlacer.instances)

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        RecordingPlacer.calls.append(
            (self.serial, spec.topic, spec.start_partition, spec.num_partitions, len(cluster.assignments))
        )
        return [list(range(spec.num_replicas)) for _ in range(spec.num_partitions)]


class Hungry(ReplicaPlacer):
    """Asks for 4 GiB: past any small ``simulator.placer.worker.max.memory.mb``."""

    def place(self, spec, cluster):
        hoard = bytearray(4 * 1024**3)
        return [[len(hoard) % 1] * spec.num_replicas]


class HalfSecond(ReplicaPlacer):
    """Answers after half a second, every call."""

    def place(self, spec, cluster):
        time.sleep(0.5)
        return _round_robin(spec, cluster)
