"""The ``striped`` placer against Kafka's ``StripedReplicaPlacer`` on random cluster shapes.

A case: a ``java.util.Random`` seed, the usable brokers in the order the placer is handed them (id, rack
or None, fenced), and one or more placement calls (start partition, partitions, replication factor) made
in turn on one placer, so that the Random's state carries from call to call as in the controller. Both
sides answer each call with the replica lists or the error (Kafka's exception class and message).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
    UsableBroker,
)
from controller.placement.builtin.java_random import JavaRandom
from controller.placement.builtin.striped import StripedReplicaPlacer
from harness.differences import Case, Checker

__all__ = ["PlacementChecker"]

#: Rack names: short ones, the empty name, and names whose Java hash and UTF-16 order differ from what
#: Python's str would give (non-ASCII, and characters beyond the Basic Multilingual Plane).
RACK_NAMES = (
    "a",
    "b",
    "c",
    "rack-0",
    "rack-1",
    "rack-2",
    "rack-10",
    "us-east-1a",
    "us-east-1b",
    "",
    "Aa",
    "BB",  # "Aa" and "BB" have the same Java hash
    "zone/é",
    "ラック",
    "\U0001f600",
    "\uffff",
    "\U00010000",
)


class PlacementChecker(Checker):
    name = "placement"

    def random_case(self, rnd: random.Random) -> Case:
        count = rnd.choice((1, 2, 3, 3, 4, 5, 6, 6, 7, 9, 12, 16, 25)) if rnd.random() < 0.98 else 0
        ids = rnd.sample(range(rnd.choice((count, 2 * count + 1, 50, 2_000))), count) if count else []
        if rnd.random() < 0.05 and ids:
            ids[0] = 2**31 - 1
        shape = rnd.choice(("none", "racks", "racks", "many racks", "mixed"))
        pool: Sequence[str | None]
        if shape == "none":
            pool = [None]
        elif shape == "many racks":
            pool = [f"r{i}" for i in range(rnd.randint(9, 30))]
        else:
            pool = rnd.sample(RACK_NAMES, rnd.randint(1, 5))
            if shape == "mixed":
                pool = [*pool, None]
        fenced_share = rnd.choice((0.0, 0.0, 0.0, 0.2, 0.5, 0.9))
        brokers = [[b, rnd.choice(pool), rnd.random() < fenced_share] for b in ids]
        calls = []
        for _ in range(rnd.choice((1, 1, 2, 3))):
            partitions = rnd.choice((1, 1, 2, 3, 5, 8, 12, 20, 40, 100, 300, 0))
            odd = rnd.random()
            if odd < 0.9:
                rf = rnd.randint(1, max(1, min(count, rnd.choice((2, 3, 3, 4, 6)))))
            else:
                rf = rnd.choice((0, -1, count, count + 1, 2**15 - 1))
            calls.append([rnd.choice((0, 0, 0, 1, 7)), partitions, rf])
        return {"seed": rnd.getrandbits(64) - 2**63, "brokers": brokers, "calls": calls}

    def kind(self, case: Case) -> str:
        racks = {b[1] for b in case["brokers"]}
        shape = (
            "no brokers" if not racks else "no racks" if racks == {None} else f"{min(len(racks), 4)}+ racks"
        )
        fenced = any(b[2] for b in case["brokers"])
        return f"{shape}{', fenced' if fenced else ''}"

    def question(self, case: Case) -> dict[str, Any]:
        return {"op": "place", **case}

    def kafka_answer(self, answer: dict[str, Any]) -> Any:
        return answer["results"]

    def ours(self, cases: Sequence[Case]) -> list[Any]:
        return [self._ours(case) for case in cases]

    @staticmethod
    def _ours(case: Case) -> list[dict[str, Any]]:
        placer = StripedReplicaPlacer(random=JavaRandom(case["seed"]))
        view = ClusterView(tuple(UsableBroker(b, rack, fenced) for b, rack, fenced in case["brokers"]))
        results: list[dict[str, Any]] = []
        for start, partitions, rf in case["calls"]:
            try:
                placed = placer.place(PlacementSpec(start, partitions, rf), view)
                results.append({"replicas": [list(replicas) for replicas in placed]})
            except InvalidReplicationFactorError as error:
                results.append({"error": "InvalidReplicationFactorException", "message": str(error)})
            except ReplicaPlacementError as error:
                results.append({"error": type(error).__name__, "message": str(error)})
        return results

    def smaller(self, case: Case) -> Iterator[Case]:
        calls, brokers = case["calls"], case["brokers"]
        for i in range(len(calls)):
            if len(calls) > 1:
                yield {**case, "calls": calls[:i] + calls[i + 1 :]}
        for i in range(len(brokers)):
            yield {**case, "brokers": brokers[:i] + brokers[i + 1 :]}
        if case["seed"] != 0:
            yield {**case, "seed": 0}
        for i, (start, partitions, rf) in enumerate(calls):
            for smaller in ([0, partitions, rf], [start, partitions // 2, rf], [start, partitions - 1, rf]):
                if smaller != calls[i] and smaller[1] >= 0:
                    yield {**case, "calls": calls[:i] + [smaller] + calls[i + 1 :]}
            if rf > 1:
                yield {**case, "calls": calls[:i] + [[start, partitions, rf - 1]] + calls[i + 1 :]}
        # Each step strictly simpler (no step undoes another): unfenced, no rack or a shorter name, a
        # smaller id.
        taken = {b for b, _, _ in brokers}
        for i, (b, rack, fenced) in enumerate(brokers):
            simpler = []
            if fenced:
                simpler.append([b, rack, False])
            if rack is not None:
                simpler.append([b, None, fenced])
                if len(rack) > 1:
                    simpler.append([b, rack[:1], fenced])
            simpler += [[smaller, rack, fenced] for smaller in (0, 1, 2, i, b // 2) if smaller < b]
            for step in simpler:
                if step[0] == b or step[0] not in taken:
                    yield {**case, "brokers": brokers[:i] + [step] + brokers[i + 1 :]}
