"""Twenty thousand random, mutated, cut and valid frames of every API and version, over many connections,
on either event loop: no unhandled exception, every connection answered or closed within 2 s of its last
byte, and a well-behaved client served all along.

The fuzzing clients and the well-behaved one run in processes of their own (tests.support.fuzzclients,
tests.support.probe), so that only the server works in this one."""

from __future__ import annotations

import logging
import statistics

import pytest

from tests.support.fuzz import GROUP_PROPERTIES, live_context, warm
from tests.support.fuzzclients import fuzz
from tests.support.probe import LatencyProbe
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

#: Measures how long other clients wait: run after the rest of the suite, with nothing beside it.
pytestmark = pytest.mark.alone

FRAMES = 20_000
PER_CONNECTION = 50


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_twenty_thousand_frames_never_break_the_server(placement_sim_factory, caplog, loop) -> None:
    server = placement_sim_factory(
        properties={
            "connections.max.idle.ms": "1000",
            "socket.request.max.bytes": "1048576",
            "auto.create.topics.enable": "true",
            "simulator.max.partitions": "50000",
            "simulator.event.loop": loop,
            **GROUP_PROPERTIES,
        }
    )
    caplog.set_level(logging.WARNING)
    handlers = server.server.dispatcher.handlers
    apis = {key: (h.min_version, h.max_version) for key, h in handlers.items()}
    # Every handler imported and codec built before the streams start (their first use is not measured).
    warm(server)

    context = live_context(server.bootstrap)
    with LatencyProbe(server.bootstrap) as probe:
        outcome = fuzz(
            server.bootstrap, apis, seed=20_000, frames=FRAMES, per_connection=PER_CONNECTION, context=context
        )

    assert outcome.connections == FRAMES // PER_CONNECTION
    assert outcome.unanswered == [], "\n".join(outcome.stalls)
    assert outcome.failures == []
    assert probe.failures == []
    assert probe.count > 20 and statistics.median(probe.latencies) < 0.05
    stats = server.stats
    assert stats["requests:internal error"] == 0 and stats["closed:internal error"] == 0
    problems = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [r.getMessage()[:300] for r in problems] == []
    assert stats["connections"] >= FRAMES // PER_CONNECTION
    answered = sum(v for k, v in stats.items() if k.startswith("requests:") and k[9:].isdigit())
    assert answered >= FRAMES // 2  # the valid connections alone: every API and version exercised
    # ElectLeaders and CreateTopics grown toward the frame limit, past the caps on their arrays.
    capped = {k: v for k, v in stats.items() if k.startswith("requests:capped:")}
    assert {"requests:capped:TopicPartitions.Partitions", "requests:capped:Topics.Assignments"} <= set(capped)
    # Still answering correctly afterwards.
    sock = raw_connect(server.bootstrap)
    sock.sendall(request_frame(68, 0, {"NumPartitions": 3, "ReplicationFactor": 3}, 5))
    frame = read_response(sock)
    assert frame is not None and SCHEMAS.response(68).decode(frame[5:], 0)["ErrorCode"] == 0


def test_a_connections_stream_is_made_again_and_replayed_alone(placement_sim_factory) -> None:
    """``benchmarks/fuzz.py --replay N``: connection N's stream is the one its thread sent in the run (its
    thread's source made the streams before it first), and sent alone every frame of it is answered, in
    order, each with its time."""
    from tests.support.fuzzclients import replay, run_spec, stream_of, streams

    server = placement_sim_factory(properties={"socket.request.max.bytes": "1048576"})
    handlers = server.server.dispatcher.handlers
    apis = {key: (h.min_version, h.max_version) for key, h in handlers.items()}
    spec = run_spec(server.bootstrap, apis, seed=3, frames=40 * 10, per_connection=10, threads=2, processes=2)
    # Process 1 makes connections 20-39; its thread 1 makes 21, 23, ..., 39.
    sent = dict(streams(spec, 1, 1))
    assert sorted(sent) == list(range(21, 40, 2))
    assert stream_of(spec, 36) == dict(streams(spec, 1, 0))[36]
    assert stream_of(spec, 27) == sent[27]
    stream = stream_of(spec, 36)
    answers = replay(server.bootstrap, stream)
    assert len(answers) == 10
    size, key, version = (int.from_bytes(stream[a:b], "big") for a, b in ((0, 4), (4, 6), (6, 8)))
    assert answers[0][0] == f"{key}/{version}:{size}"
    times = [at for _, at in answers]
    assert None not in times and times == sorted(times)


def test_an_unanswered_connection_says_what_it_waited_on() -> None:
    """The first frame not answered (answers come in order), and the answer that came longest after the
    one before it."""
    from tests.support.fuzzclients import _waits

    frames = ["18/3:47", "1008/0:28", "1/12:90"]
    assert _waits(frames, 10.0, [10.01, 11.5]) == "waiting on 1/12:90; longest wait 1.490 s, for 1008/0:28; "
    assert _waits(frames, 10.0, []) == "waiting on 18/3:47; "
    assert _waits(frames, 10.0, [10.3, 10.4, 10.45]) == "longest wait 0.300 s, for 18/3:47; "
