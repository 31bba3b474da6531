"""The ``kafka`` election policy and its controller against Kafka's ``PartitionChangeBuilder``.

A case is one partition change: a partition registration (replicas, ISR, leader, epochs, leader recovery
state, a reassignment in progress), the brokers that may lead (Kafka's ``isAcceptableLeader``: registered,
unfenced, not shutting down), what asks for the change (no trigger: the ONLINE election inside every
change; a broker lost or back; ElectLeaders PREFERRED or UNCLEAN), the topic's
``unclean.leader.election.enable``, and the targets (ISR, replicas, adding, removing; absent: as they are).

Kafka's side builds the record with ``PartitionChangeBuilder`` at 4.4's metadata version and merges it
into the registration; the simulator's side runs the change through its controller's election service
(:class:`~controller.election.kafka_style.KafkaElection` with the ``kafka`` policy, the path every
failover, ElectLeaders and reassignment takes) on a cluster of brokers 0-7. What is compared: whether a
record was written, and the replicas, ISR, leader, leader epoch, partition epoch, leader recovery state
and the reassignment's adding and removing replicas after it.

The election kind Kafka's controller asks for: PREFERRED for a preferred election, UNCLEAN for ElectLeaders
UNCLEAN and for every other change of a topic that allows unclean elections
(``ReplicationControlManager``), ONLINE otherwise.

ELR (KIP-966) is off on both sides (the simulator with ``simulator.eligible.leader.replicas.version=0``)
unless the checker is made with ``elr=True``: then it is on on both sides, and a case also draws the
topic's ``min.insync.replicas``, the ELR, the last known ELR (the last known leader of a leaderless
partition, as Kafka's controller keeps it), an ISR that may be empty, and sometimes a replica back from an
unclean shutdown (Kafka's ``handleBrokerUncleanShutdown``: it leaves the ISR and the ELR, and may not lead
in that change); the ELR and the last known ELR are compared too.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Sequence
from typing import Any

from harness.differences import Case, Checker

__all__ = ["BROKERS", "ElectionChecker"]

#: The cluster's brokers: ids 0-7, no racks (racks play no part in an election).
BROKERS = tuple(range(8))
TRIGGERS = (None, None, None, "LEADER_OFFLINE", "BROKER_ONLINE", "PREFERRED", "UNCLEAN")


def kafka_election(case: Case) -> str:
    """The ``PartitionChangeBuilder.Election`` Kafka's controller asks for in ``case``."""
    trigger = case["trigger"]
    if trigger == "PREFERRED":
        return "PREFERRED"
    if trigger == "UNCLEAN" or case["uncleanTopic"]:
        return "UNCLEAN"
    return "ONLINE"


def _subset(rnd: random.Random, items: Sequence[int], at_least: int = 0) -> list[int]:
    """A random subset of ``items`` in a random order."""
    count = rnd.randint(min(at_least, len(items)), len(items))
    return rnd.sample(list(items), count)


class ElectionChecker(Checker):
    name = "election"

    def __init__(self, elr: bool = False) -> None:
        #: Eligible leader replicas on, on both sides (see the module docstring).
        self.elr = elr

    def random_case(self, rnd: random.Random) -> Case:
        replicas = rnd.sample(BROKERS, rnd.choice((1, 2, 3, 3, 3, 4, 5)))
        isr = _subset(rnd, replicas, at_least=0 if self.elr and rnd.random() < 0.4 else 1)
        leader = rnd.choice(isr) if isr and rnd.random() < 0.75 else -1
        adding: list[int] = []
        removing: list[int] = []
        if rnd.random() < 0.2 and len(replicas) > 1:  # a reassignment in progress
            moving = rnd.sample(replicas, rnd.randint(1, len(replicas) - 1))
            split = rnd.randint(0, len(moving))
            adding, removing = moving[:split], moving[split:]
        leader_epoch = rnd.randint(0, 5)
        partition = {
            "replicas": replicas,
            "isr": isr,
            "leader": leader,
            "leaderEpoch": leader_epoch,
            "partitionEpoch": leader_epoch + rnd.randint(0, 5),
            "recovering": rnd.random() < 0.1,
            "adding": adding,
            "removing": removing,
        }
        acceptable = sorted(b for b in BROKERS if rnd.random() < rnd.choice((0.3, 0.6, 0.9)))
        case: Case = {
            "partition": partition,
            "acceptable": acceptable,
            "trigger": rnd.choice(TRIGGERS),
            "uncleanTopic": rnd.random() < 0.3,
        }
        if self.elr:
            self._draw_elr(rnd, case)
        if rnd.random() < 0.5:
            case["targetIsr"] = _subset(rnd, replicas) if rnd.random() < 0.9 else []
        if rnd.random() < 0.15:  # a reassignment asked for (or cancelled) with this change
            if (adding or removing) and rnd.random() < 0.5:
                # Cancelled (Kafka's PartitionReassignmentRevert): back to the replicas before, the ISR
                # without the replicas that were being added (or the first replica left, unclean).
                case["targetReplicas"] = [r for r in replicas if r not in adding]
                case["targetAdding"], case["targetRemoving"] = [], []
                case["targetIsr"] = [r for r in case.get("targetIsr", isr) if r not in adding] or [
                    case["targetReplicas"][0]
                ]
            else:
                target = rnd.sample(BROKERS, rnd.randint(1, 4))
                case["targetReplicas"] = target + [r for r in replicas if r not in target]
                case["targetAdding"] = [r for r in target if r not in replicas]
                case["targetRemoving"] = [r for r in replicas if r not in target]
        return case

    def _draw_elr(self, rnd: random.Random, case: Case) -> None:
        """The ELR parts of a case: the topic's min ISR, the ELR (replicas out of the ISR), the last known
        ELR (a leaderless partition's last known leader, mostly), a replica back from an unclean shutdown."""
        p = case["partition"]
        replicas, isr = p["replicas"], p["isr"]
        case["minIsr"] = rnd.randint(1, 3)
        outside = [r for r in replicas if r not in isr]
        p["elr"] = _subset(rnd, outside) if len(isr) < case["minIsr"] or rnd.random() < 0.1 else []
        p["lastKnownElr"] = []
        if p["leader"] == -1 and rnd.random() < 0.7:
            p["lastKnownElr"] = [rnd.choice(replicas)]
        if rnd.random() < 0.2:
            # handleBrokerUncleanShutdown: the broker back from a crash leaves the ISR and the ELR; it
            # may not lead in that change (it is not yet unfenced, and the controller excludes it).
            broker = rnd.choice(replicas)
            case["uncleanShutdown"] = broker
            case["acceptable"] = [b for b in case["acceptable"] if b != broker]
            case["targetIsr"] = [r for r in case.get("targetIsr", isr) if r != broker]

    def valid(self, case: Case) -> bool:
        """Kafka's controller keeps every ISR within the replicas: the target ISR within the target
        replicas, a reassignment's adding and removing replicas within them too."""
        p = case["partition"]
        replicas = case.get("targetReplicas", p["replicas"])
        isr = case.get("targetIsr", p["isr"])
        within = set(replicas)
        return (
            bool(p["replicas"])
            and bool(replicas)
            and set(p["isr"]) <= set(p["replicas"])
            and set(isr) <= within
            and set(case.get("targetAdding", p["adding"])) <= within
            and set(case.get("targetRemoving", p["removing"])) <= within
        )

    def kind(self, case: Case) -> str:
        parts = [case["trigger"] or "change", kafka_election(case)]
        if self.elr:
            p = case["partition"]
            isr, elr = case.get("targetIsr", p["isr"]), p["elr"]
            if p["leader"] == -1 and not isr and not elr and len(p["lastKnownElr"]) == 1:
                parts.append("last-known-leader")
            elif not isr and elr:
                parts.append("from-elr")
        if case["partition"]["adding"] or case["partition"]["removing"] or "targetReplicas" in case:
            parts.append("reassigning")
        return " ".join(parts)

    def question(self, case: Case) -> dict[str, Any]:
        question = {
            "op": "elect",
            "partition": case["partition"],
            "acceptable": case["acceptable"],
            "election": kafka_election(case),
            "elrEnabled": self.elr,
        }
        if self.elr:
            question["minIsr"] = case["minIsr"]
            if "uncleanShutdown" in case:
                question["uncleanShutdownReplicas"] = [case["uncleanShutdown"]]
        for name in ("targetIsr", "targetReplicas", "targetAdding", "targetRemoving"):
            if name in case:
                question[name] = case[name]
        return question

    def kafka_answer(self, answer: dict[str, Any]) -> Any:
        partition = answer["partition"]
        if not self.elr:
            partition = {k: v for k, v in partition.items() if k not in ("elr", "lastKnownElr")}
        return {"changed": answer["changed"], "partition": partition}

    def ours(self, cases: Sequence[Case]) -> list[Any]:
        return asyncio.run(_ours(cases, self.elr))

    def smaller(self, case: Case) -> Iterator[Case]:
        p = case["partition"]
        for name in ("targetReplicas", "targetAdding", "targetRemoving", "targetIsr"):
            if name in case:
                yield {k: v for k, v in case.items() if k != name}
        if case["trigger"] is not None:
            yield {**case, "trigger": None}
        if case["uncleanTopic"]:
            yield {**case, "uncleanTopic": False}
        if "uncleanShutdown" in case:
            yield {k: v for k, v in case.items() if k != "uncleanShutdown"}
        for field in ("elr", "lastKnownElr"):
            if p.get(field):
                yield {**case, "partition": {**p, field: []}}
        for field, value in (("recovering", False), ("adding", []), ("removing", []), ("leader", -1)):
            if p[field] != value:
                yield {**case, "partition": {**p, field: value}}
        if p["leaderEpoch"] or p["partitionEpoch"]:
            yield {**case, "partition": {**p, "leaderEpoch": 0, "partitionEpoch": 0}}
        for b in BROKERS:
            if b in case["acceptable"] and b not in p["replicas"]:
                yield {**case, "acceptable": [a for a in case["acceptable"] if a != b]}
        for r in p["replicas"]:  # one replica fewer, everywhere
            if len(p["replicas"]) > 1 and p["isr"] != [r] and case.get("targetReplicas") != [r]:
                yield _without_replica(case, r)
        for r in p["isr"]:
            if len(p["isr"]) > 1:
                yield {**case, "partition": {**p, "isr": [x for x in p["isr"] if x != r]}}


def _without_replica(case: Case, replica: int) -> Case:
    p = case["partition"]
    smaller: Case = {
        **case,
        "partition": {
            **p,
            **{
                name: [r for r in p[name] if r != replica]
                for name in ("replicas", "isr", "adding", "removing", "elr", "lastKnownElr")
                if name in p
            },
            "leader": -1 if p["leader"] == replica else p["leader"],
        },
    }
    if smaller.get("uncleanShutdown") == replica:
        del smaller["uncleanShutdown"]
    for name in ("targetIsr", "targetReplicas", "targetAdding", "targetRemoving"):
        if name in case:
            smaller[name] = [r for r in case[name] if r != replica]
    return smaller


# -------------------------------------------------------------------------------------- the simulator


async def _ours(cases: Sequence[Case], elr: bool = False) -> list[Any]:
    """Each case through the simulator's election service, on one cluster of :data:`BROKERS`."""
    from controller.clock import VirtualClock
    from controller.cluster import NO_LEADER, Cluster, LeaderRecoveryState, PartitionChange
    from controller.config import ServerConfig
    from controller.config.topic_configs import MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE
    from controller.election.api import Trigger
    from controller.election.service import Change
    from controller.election.styles import start_election_service
    from controller.events import EventLog
    from controller.placement.api import UsableBroker

    config = ServerConfig.from_properties(
        {
            "simulator.clock": "virtual",
            "simulator.election.policy": "kafka",
            "simulator.election.isolation": "inline",
            # The same ELR switch as Kafka's side.
            "simulator.eligible.leader.replicas.version": "1" if elr else "0",
        }
    )
    clock = VirtualClock()
    cluster = Cluster(
        [UsableBroker(b, None, False) for b in BROKERS],
        seed=0,
        events=EventLog(clock.now, max_events=1_000),
        static_configs=config.properties,
    )
    service = await start_election_service(config, cluster, clock)
    answers: list[Any] = []
    try:
        for n, case in enumerate(cases):
            acceptable = set(case["acceptable"])
            for b in BROKERS:
                cluster.update_broker(b, "case", fenced=b not in acceptable)
            p0 = case["partition"]
            name = f"case-{n}"
            configs = {UNCLEAN_LEADER_ELECTION_ENABLE: "true" if case["uncleanTopic"] else "false"}
            if elr:
                configs[MIN_INSYNC_REPLICAS] = str(case["minIsr"])
            cluster.add_topic(name, [p0["replicas"]], configs)
            p = cluster.partition(name, 0)
            cluster.apply_changes(
                [
                    PartitionChange.of(
                        p,
                        "case",
                        isr=list(p0["isr"]),
                        leader=p0["leader"],
                        leader_epoch=p0["leaderEpoch"],
                        partition_epoch=p0["partitionEpoch"],
                        leader_recovery_state=(
                            LeaderRecoveryState.RECOVERING
                            if p0["recovering"]
                            else LeaderRecoveryState.RECOVERED
                        ),
                        adding_replicas=list(p0["adding"]),
                        removing_replicas=list(p0["removing"]),
                        elr=list(p0.get("elr", [])),
                        last_known_elr=list(p0.get("lastKnownElr", [])),
                    )
                ]
            )
            trigger = case["trigger"]
            change = Change(
                p,
                target_isr=case.get("targetIsr"),
                trigger=None if trigger is None else Trigger[trigger],
                target_replicas=case.get("targetReplicas"),
                target_adding=case.get("targetAdding"),
                target_removing=case.get("targetRemoving"),
                unclean_shutdown=case.get("uncleanShutdown", NO_LEADER),
            )
            [result] = await service.change([change], "case")
            if result.error is not None:
                answers.append({"error": result.error.name, "message": result.message})
            else:
                answers.append({"changed": result.changed, "partition": _registration(p, elr)})
            cluster.delete_topic(name)
    finally:
        await service.close()
        await clock.close()
    return answers


def _registration(p: Any, elr: bool = False) -> dict[str, Any]:
    """A partition's state in the fields Kafka's registration has (``KafkaRules.registration``)."""
    registration = {
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "partitionEpoch": p.partition_epoch,
        "recovering": bool(p.leader_recovery_state),
        "adding": list(p.adding_replicas),
        "removing": list(p.removing_replicas),
    }
    if elr:
        registration["elr"] = list(p.elr)
        registration["lastKnownElr"] = list(p.last_known_elr)
    return registration
