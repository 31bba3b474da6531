"""The rules of election, one home each: who may lead, what a policy's answer must satisfy, and what a
change does to a partition's in-sync set (what a change record then holds is
:mod:`controller.election.change`).

Kafka's rules follow its KRaft controller (``PartitionChangeBuilder``): a valid leader is an active broker
in the target ISR, or, when the ISR is empty, in the eligible leader replicas (ELR, KIP-966, Kafka 4.1's
default); with ELR on and both empty, the partition's last known leader once it is active again (Kafka's
balanced recovery, an unclean election); an unclean election, when allowed, takes any active replica. With ELR off (Kafka 3.x) the last
ISR member is never removed (the partition becomes leaderless, its ISR kept); with it on the ISR empties
and its last members are the ELR. Fluvio's follow its documentation and the SC: a candidate is a live follower in the live replica set (any live
follower when an SPU comes back), never the leader that just failed or a candidate that already failed
to confirm.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from controller.election.api import ElectionStyle, PartitionView, Trigger

__all__ = [
    "Eligibility",
    "candidates_problem",
    "election_not_needed",
    "eligible_leaders",
    "fluvio_eligible",
    "kafka_eligible",
    "target_isr_without",
]


@dataclass(frozen=True, slots=True)
class Eligibility:
    """The replicas that may lead in one election (assignment order), and whether that is unclean."""

    eligible: tuple[int, ...]
    unclean: bool = False
    #: The one eligible replica is the partition's last known leader, back while its ISR and ELR are
    #: empty (Kafka's ``canElectLastKnownLeader``: an unclean election, whatever the topic allows).
    last_known_leader: bool = False


def kafka_eligible(
    replicas: Sequence[int],
    isr: Collection[int],
    alive: Collection[int],
    may_be_unclean: bool,
    elr: Collection[int] = (),
    last_known_leader: int = -1,
) -> Eligibility:
    """Kafka's valid leaders (``PartitionChangeBuilder.isValidNewLeader``): active replicas in the target
    ISR, or in the target ELR when the ISR is empty. When there are none: ``last_known_leader`` (-1: none)
    alone when both are empty and it is active (``canElectLastKnownLeader``, with ELR on: the one member
    of the partition's last known ELR; an unclean election, allowed or not); else, when the election may be
    unclean, every active replica."""
    # Loops, not generators: Python 3.11 makes each a call of its own, and a failover elects 33,000 times.
    clean = []
    pool = isr if isr or not elr else elr
    for r in replicas:
        if r in pool and r in alive:
            clean.append(r)
    if clean:
        return Eligibility(tuple(clean))
    if (
        last_known_leader >= 0
        and not isr
        and not elr
        and last_known_leader in alive
        and last_known_leader in replicas
    ):
        return Eligibility((last_known_leader,), unclean=True, last_known_leader=True)
    if not may_be_unclean:
        return Eligibility(())
    return Eligibility(tuple(r for r in replicas if r in alive), unclean=True)


def fluvio_eligible(
    replicas: Sequence[int],
    isr: Collection[int],
    alive: Collection[int],
    trigger: Trigger,
    failed_leader: int = -1,
    excluded: Collection[int] = (),
) -> Eligibility:
    """Fluvio's candidates: live followers in the live replica set, never the leader that failed nor a
    candidate that did not confirm; any live replica when an SPU comes back (or for an unclean election)."""
    if trigger is Trigger.BROKER_ONLINE:
        pool = [r for r in replicas if r in alive and r not in excluded]
    elif trigger is Trigger.UNCLEAN:
        pool = [r for r in replicas if r in alive]
        return Eligibility(tuple(pool), unclean=any(r not in isr for r in pool))
    elif trigger is Trigger.PREFERRED:
        pool = [r for r in replicas if r in alive and r in isr]
    else:  # the leader went away, or a candidate did not confirm: the live followers in the LRS
        pool = [r for r in replicas if r in alive and r in isr and r != failed_leader and r not in excluded]
    return Eligibility(tuple(pool))


def eligible_leaders(
    replicas: Sequence[int],
    isr: Collection[int],
    alive: Collection[int],
    trigger: Trigger,
    unclean_allowed: bool,
    style: ElectionStyle | str,
    failed_leader: int = -1,
    excluded: Collection[int] = (),
) -> Eligibility:
    """Who may lead under ``style``: ``isr`` is the target in-sync set (after the change that asked for
    the election); a topic's ``unclean.leader.election.enable`` applies to Kafka's own elections, a
    preferred election is never unclean, an UNCLEAN one always may be."""
    if ElectionStyle(style) is ElectionStyle.KAFKA:
        may_be_unclean = trigger is Trigger.UNCLEAN or (unclean_allowed and trigger is not Trigger.PREFERRED)
        return kafka_eligible(replicas, isr, alive, may_be_unclean)
    return fluvio_eligible(replicas, isr, alive, trigger, failed_leader, excluded)


def target_isr_without(isr: Sequence[int], broker: int, keep_last: bool = True) -> list[int]:
    """The ISR after ``broker`` leaves it: with ELR off (``keep_last``) Kafka never writes an empty ISR, so
    the last member stays listed while the partition goes leaderless; with ELR on it leaves too (and
    becomes an eligible leader replica)."""
    rest = list(isr)
    if broker in rest and (len(rest) > 1 or not keep_last):
        rest.remove(broker)  # (no comprehension: a failover leaves 100,000 in-sync sets)
    return rest


def election_not_needed(replicas: Sequence[int], leader: int, trigger: Trigger) -> bool:
    """ElectLeaders' ELECTION_NOT_NEEDED: the preferred replica already leads, or (unclean) a leader exists."""
    if trigger is Trigger.PREFERRED:
        return bool(replicas) and leader == replicas[0]
    if trigger is Trigger.UNCLEAN:
        return leader >= 0
    return False


def candidates_problem(view: PartitionView, candidates: object) -> str | None:
    """What is wrong with a policy's answer for one partition, or None when it may be applied."""
    if type(candidates) is tuple or type(candidates) is list:
        # The common answer, checked in one pass: distinct broker ids, each an eligible, alive replica;
        # anything else is looked at below, to name the problem.
        eligible, alive, replicas = view.eligible, view.alive, view.replicas
        valid = True
        for c in candidates:
            if type(c) is not int or c not in eligible or c not in alive or c not in replicas:
                valid = False
                break
        if valid and len(set(candidates)) == len(candidates):
            return None
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        return f"returned {type(candidates).__name__}, not a sequence of broker ids"
    for c in candidates:
        if type(c) is not int:
            return f"returned {c!r}, not a broker id"
    repeated = sorted(b for b, n in Counter(candidates).items() if n > 1)
    if repeated:
        return f"names broker(s) {repeated} twice"
    for c in candidates:
        if c not in view.replicas:
            return f"names broker {c}, which is not a replica of {view.topic}-{view.partition} {list(view.replicas)}"
        if c not in view.alive:
            return f"names broker {c}, which cannot lead now (fenced, offline or shutting down)"
        if c not in view.eligible:
            return (
                f"names broker {c}, outside the replicas allowed to lead {list(view.eligible)} "
                f"({'in-sync set' if not view.unclean else 'live replicas'} {list(view.isr)})"
            )
    return None
