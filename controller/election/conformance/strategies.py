"""Hypothesis strategies for election policies: partitions as a policy sees them, in every situation the
controller asks about (a leader lost, a broker back, preferred and unclean elections, both styles)."""

from __future__ import annotations

from hypothesis import strategies as st

from controller.election.api import ElectionStyle, PartitionView, Trigger
from controller.election.rules import eligible_leaders

__all__ = ["partition_views", "view_batches"]

_IDS = st.one_of(st.integers(0, 9), st.integers(10, 5000), st.integers(5001, 2**31 - 1))


@st.composite
def partition_views(draw: st.DrawFn, style: ElectionStyle | str = ElectionStyle.KAFKA) -> PartitionView:
    """One partition: replicas (1-5 distinct ids), an in-sync set among them, live brokers, offsets, a
    trigger, and the eligible set the controller's rules give for it."""
    replicas = tuple(draw(st.lists(_IDS, min_size=1, max_size=5, unique=True)))
    isr = tuple(r for r in replicas if draw(st.booleans())) or replicas[:1]
    alive = frozenset(r for r in replicas if draw(st.integers(0, 3)) > 0) | frozenset(
        draw(st.lists(_IDS, max_size=2))
    )
    leader = draw(st.sampled_from([-1, *isr]))
    last_leader = draw(st.sampled_from([-1, *replicas]))
    top = draw(st.integers(0, 1000))
    leos = tuple(draw(st.integers(max(0, top - 8), top)) for _ in replicas)
    hw = min(leos)
    trigger = draw(st.sampled_from(list(Trigger)))
    unclean_allowed = draw(st.booleans())
    failed = leader if leader != -1 else last_leader
    excluded = frozenset(r for r in replicas if draw(st.integers(0, 5)) == 0)
    eligibility = eligible_leaders(replicas, isr, alive, trigger, unclean_allowed, style, failed, excluded)
    return PartitionView(
        draw(st.sampled_from(["t", "orders", "tópico"])),
        draw(st.integers(0, 100)),
        replicas,
        isr,
        leader,
        last_leader,
        leos,
        tuple(min(leo, hw) for leo in leos),
        alive,
        eligibility.eligible,
        eligibility.unclean,
        trigger,
    )


def view_batches(
    style: ElectionStyle | str = ElectionStyle.KAFKA, max_size: int = 8
) -> st.SearchStrategy[list[PartitionView]]:
    """Batches of partitions, as the controller hands them to a policy."""
    return st.lists(partition_views(style), min_size=1, max_size=max_size)
