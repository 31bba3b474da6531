"""The hypothesis state machine over the generator table, and the pairs of clusters it runs on.

Each example is one sequence (:meth:`DifferentialSession.begin` ... :meth:`DifferentialSession.end`):
its rules draw a generator of the table (weighted) and send what it makes to both clusters, or run one
of the cluster-wide actions (a broker's failure, a reassignment).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from harness.differential.choices import TAPE, TAPE_LIMIT, Chooser
from harness.differential.fidelity import FidelityTable
from harness.differential.generators import ACTIONS, GENERATORS
from harness.differential.session import DifferentialSession
from harness.differential.targets import KafkaSide, LoopThread, SimSide
from harness.kafka_cluster import elr_level

__all__ = ["SIM_PROPERTIES", "machine_for", "paired_session", "sim_for"]

#: The simulator set as the reference cluster is (harness/kafka_cluster.py's BASE_PROPERTIES), where the
#: simulator has the setting.
SIM_PROPERTIES: dict[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "4000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "1",
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",
    # Eligible leader replicas at the reference's level (harness/kafka_cluster.py's DEFAULT_FEATURES: on,
    # Kafka 4.4's default and the simulator's; REFERENCE_ELR_VERSION=0 turns both off).
    "simulator.eligible.leader.replicas.version": elr_level(),
    # A cluster id as Kafka's are made (22 characters of base64), so that it stands out in messages.
    "cluster.id": "SimulatorClusterId0001",
}

#: A step's choices (harness/differential/choices.py): one fixed-size list, whatever the cluster answers.
_TAPE = st.lists(st.integers(0, TAPE_LIMIT - 1), min_size=TAPE, max_size=TAPE)

SHAPE_BROKERS = {"single": [(0, None)], "three-racks": [(0, "a"), (1, "b"), (2, "c")]}


def sim_for(shape: str, seed: int = 0) -> Any:
    """A simulator shaped as the reference cluster ``shape`` (real clock, the same timeouts)."""
    from controller.embedded import ServerThread

    brokers = SHAPE_BROKERS[shape]
    replication = str(min(3, len(brokers)))
    properties = {
        **SIM_PROPERTIES,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
    }
    return ServerThread.start(brokers=brokers, properties=properties, seed=seed)


@contextmanager
def paired_session(
    kafka_cluster: Any, sim: Any, shape: str, *, strict: bool = True
) -> Iterator[DifferentialSession]:
    loop = LoopThread()
    session = DifferentialSession(
        KafkaSide(kafka_cluster), SimSide(sim), shape, loop, FidelityTable.load(), strict=strict
    )
    try:
        yield session
    finally:
        loop.run(session.kafka.close())
        loop.run(session.sim.close())
        loop.close()


def machine_for(session: DifferentialSession) -> type[RuleBasedStateMachine]:
    """A state machine class whose examples are sequences on ``session``'s two clusters."""
    shape = session.cluster
    names: list[str] = []
    for gen in GENERATORS.values():
        if shape in gen.clusters:
            names += [gen.name] * gen.weight
    actions: list[str] = []
    for act in ACTIONS.values():
        if shape in act.clusters:
            actions += [act.name] * act.weight

    class DifferentialSequence(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.session = session
            session.begin()

        @rule(name=st.sampled_from(names), tape=_TAPE)
        def request(self, name: str, tape: list[int]) -> None:
            assert session.model is not None
            step = GENERATORS[name].make(Chooser(tape), session.model)
            if step is not None:
                session.run(step)

        @precondition(lambda self: bool(actions))
        @rule(name=st.sampled_from(actions or ["none"]), tape=_TAPE)
        def cluster_action(self, name: str, tape: list[int]) -> None:
            ACTIONS[name].run(Chooser(tape), session)

        def teardown(self) -> None:
            session.end()

    DifferentialSequence.__name__ = f"DifferentialSequence_{shape.replace('-', '_')}"
    return DifferentialSequence
