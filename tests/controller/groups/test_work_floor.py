"""benchmarks/group_floor.py, the groups benchmark's floor that does each row's work, answers the rows'
requests byte for byte as the simulator does, and refuses what the simulator refuses: a floor that
answered otherwise would not be a floor of the same work."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import groups, peer
from controller.embedded import ServerThread

ROOT = Path(__file__).resolve().parents[3]


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


class _Named:
    """What ``peer.create_topics`` reads of a server: its address and name."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address, self.name = address, peer.SIM


def _floor(directory: Path, greeting: bytes, answer: bytes) -> peer.Server:
    path = directory / "answers.pickle"
    path.write_bytes(pickle.dumps({greeting[4:8] + greeting[12:]: answer[4:]}))
    return peer.Server(
        groups.WORK_FLOOR, [sys.executable, str(ROOT / "benchmarks" / "group_floor.py"), str(path), "100"]
    )


def test_the_work_floor_answers_each_row_as_the_simulator_does(
    simulator: tuple[str, int], tmp_path: Path
) -> None:
    classic = groups.coordinator(_Named(simulator))
    joined = groups.asyncio.run(groups.rebalance(classic, None, 1, 4))
    consumer_address = groups.coordinator(_Named(simulator), groups.CONSUMER_GROUP)
    consumer = groups.consumer_member(consumer_address)
    greeting = groups.LIBRDKAFKA_HELLO()
    peer.GREETING = greeting
    greeted = peer.ask(consumer_address, greeting)
    peer.GREETING = None
    floor = _floor(tmp_path, greeting, greeted)
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
