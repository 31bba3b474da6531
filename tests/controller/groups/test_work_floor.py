"""benchmarks/group_floor.py, the groups benchmark's floor that does each row's work, answers the rows'
requests byte for byte as the simulator does, and refuses what the simulator refuses: a floor that
answered otherwise would not be a floor of the same work."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import groups, peer
from controller.embedded import ServerThread


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


@pytest.fixture(scope="module")
def simulator() -> Iterator[tuple[str, int]]:
    peer.load_codec()
    with ServerThread.start(seed=1, properties={"group.initial.rebalance.delay.ms": 0}) as server:
        address = _address(server.bootstrap)
        peer.create_topics(_Named(address), _Named(address), [groups.TOPIC])
        yield address


@pytest.fixture(scope="module")
def member(simulator: tuple[str, int]) -> tuple[tuple[str, int], dict[str, Any]]:
    """A member of a classic group on the simulator: its coordinator's address, its id and generation."""
    classic = groups.coordinator(_Named(simulator))
    return classic, asyncio.run(groups.rebalance(classic, None, 1, 4))


class _Named:
    """What ``peer.create_topics`` reads of a server: its address and name."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address, self.name = address, peer.SIM


def _floor(directory: Path, taught: dict[bytes, bytes], *flags: str) -> peer.Server:
    """The floor taught ``taught`` (request frame -> the simulator's answer frame, both without their size)."""
    path = directory / "answers.pickle"
    path.write_bytes(
        pickle.dumps({request[:4] + request[8:]: answer[4:] for request, answer in taught.items()})
    )
    return groups.floor_server(groups.WORK_FLOOR, str(path), *flags)


def test_the_work_floor_answers_each_row_as_the_simulator_does(
    simulator: tuple[str, int], member: tuple[tuple[str, int], dict[str, Any]], tmp_path: Path
) -> None:
    classic, joined = member
    consumer_address = groups.coordinator(_Named(simulator), groups.CONSUMER_GROUP)
    consumer = groups.consumer_member(consumer_address)
    greeting = groups.LIBRDKAFKA_HELLO()
    peer.GREETING = greeting
    greeted = peer.ask(consumer_address, greeting)
    peer.GREETING = None
    floor = _floor(tmp_path, {greeting[4:]: greeted})
    floor.start()
    try:
        for request in groups.cases(joined["member"], joined["generation"], consumer):
            address = consumer_address if request.greeting is not None else classic
            peer.GREETING = request.greeting
            try:
                theirs = peer.ask(address, request.frame())
                ours = peer.ask(floor.address, request.frame())  # the floor learns the member from it
                again = peer.ask(floor.address, request.frame())  # and checks it against what it learned
                assert ours == theirs == again, request.label
                assert _code(request, ours) == 0, request.label
                # A generation (epoch) the coordinator did not give is refused, by both alike.
                wrong = dict(request.data)
                field = next(
                    k for k in ("GenerationId", "GenerationIdOrMemberEpoch", "MemberEpoch") if k in wrong
                )
                wrong[field] += 1
                refused = groups.Request(
                    request.label, request.api_key, request.version, wrong, request.key_space
                )
                codes = [
                    _code(request, peer.ask(where, refused.frame())) for where in (address, floor.address)
                ]
                assert codes[0] == codes[1] != 0, (request.label, codes)
            finally:
                peer.GREETING = None
    finally:
        floor.stop()


def _code(request: groups.Request, answer: bytes) -> int:
    values = peer.decode(request.api_key, request.version, answer, request.key_space)
    return values["Topics"][0]["Partitions"][0]["ErrorCode"] if request.api_key == 8 else values["ErrorCode"]


def test_the_floor_answering_at_the_tick_answers_a_commit_with_what_it_was_taught(
    member: tuple[tuple[str, int], dict[str, Any]], tmp_path: Path
) -> None:
    classic, joined = member
    commit = groups.cases(joined["member"], joined["generation"])[-1]
    assert commit.api_key == 8
    theirs = peer.ask(classic, commit.frame())
    floor = _floor(tmp_path, {commit.frame()[4:]: theirs}, "--taught")
    floor.start()
    try:
        assert peer.ask(floor.address, commit.frame()) == theirs
    finally:
        floor.stop()


def test_the_work_floor_rebalances_as_the_simulator_did(
    simulator: tuple[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The floor replays the simulator's rejoin round from the group it began with and answers every
    JoinGroup and SyncGroup as the simulator did (``rebalance_work_floor`` raises otherwise); a round in
    which a member had to ask again is not replayed, so the rounds are run until one is not."""
    monkeypatch.setattr(groups, "GROUP", "floor-rebalance")
    classic = groups.coordinator(_Named(simulator), "floor-rebalance")
    measured = []
    for _ in range(5):
        recorded = asyncio.run(groups.rebalance(classic, None, 3, 6, record=True))["recorded"]
        measured.append(groups.rebalance_work_floor(recorded, str(tmp_path)))
        if measured[-1] is not None:
            break
    assert measured[-1] is not None and measured[-1] > 0, measured
