"""Consumer groups: placement-sim against librdkafka's mock cluster (C), same requests, same load.

Both servers run in their own processes, started as in ``benchmarks/peer.py`` (6 brokers; the simulator
with ``group.initial.rebalance.delay.ms`` 2000 here, so that 100 members joining at once make one
generation, as the mock does with its own delay). This process speaks the wire to both, to the
coordinator each names in FindCoordinator.

- **Rebalance**: 100 members (JoinGroup v5, SyncGroup v3) in one Stable group subscribed to a topic (the
  leader range-assigns 1,000 partitions: 1,000 partitions' worth of assignment bytes); then all 100
  rejoin, the leader first (its rejoin starts the rebalance: a follower rejoining a Stable group
  unchanged is answered at once, as Kafka does) and the others 20 ms after, the leader assigns again
  and every member syncs; ``--rounds`` such rounds (7), the figures their medians. Measured from the
  first rejoin sent to the last SyncGroup answer: wall time and server CPU. The leader sends its
  SyncGroup once every follower has sent theirs (and 50 ms after): the mock completes the sync at the
  leader's assignment and refuses a SyncGroup after it; Kafka takes them in any order. The group's
  session timeout is 6 s, Kafka's least: the mock ends a join phase entered from Stable only after the
  session timeout less 1 s (Kafka: once every member has rejoined), so its wall time is that wait.
- **ConsumerGroupHeartbeat v1** (KIP-848, apiKey 68 on a connection that named librdkafka in ApiVersions):
  one member of a group of the consumer group protocol heartbeating with its epoch, which the mock serves
  too; measured as Heartbeat is, beside it.
- **Heartbeat v3** and **OffsetCommit v8** (one partition, the member's generation): server CPU per
  request in ``benchmarks/peer.py``'s closed loop (8 connections x 8 requests in flight; 64 connections
  for commits), idle CPU subtracted, the same request count for both (at least ``--commits`` commits).
  The simulator answers a commit once the high watermark of its ``__consumer_offsets`` partition covers
  it (replication factor 3, a follower copies per 100 ms tick), and, as Kafka, takes a connection's next
  request only once the one before is answered: one commit per connection per tick.

Server CPU is read from ``/proc/<pid>/task/*/schedstat`` (ns): the simulator's whole process; for the
mock its ``rdk:mock`` thread, which serves every broker (the rest of its process is the idle client that
hosts it). A third server shows the floor, as in ``peer.py``: ``peer.py --floor``, taught the simulator's
answers, answering at once (for the rebalance, the simulator's rejoin exchanges are recorded and sent to
it again, each member on its connection). For OffsetCommit a fourth shows the floor of a commit that
waits: ``benchmarks/group_floor.py --taught``, which answers as the simulator must (one request of a
connection in progress, answered at a 100 ms tick) with the taught bytes. A last floor does each row's
work and nothing else (``benchmarks/group_floor.py``: the header and body read, the member and its
generation or epoch checked, its session restarted, a commit's offsets kept and logged and answered at
the tick, the answer encoded; for the rebalance, taught the group the simulator's round began from, the
join and sync phases with their parked answers), after its answers are checked to be the simulator's
byte for byte: where that floor is above the mock, no Python server doing the row's work reaches the
target, and the simulator's ratio to it is its own machinery.

- **Share groups** (KIP-932): one share group member (ShareGroupHeartbeat v1) on one partition, records
  produced in batches of ``--share-batch``; then ``--share-cycles`` **ShareFetch v1** requests on one
  connection to the partition's leader, each acknowledging (accept) the batch the one before acquired and
  acquiring the next, MaxWaitMs 0; then as many batches acquired and each accepted by its own
  **ShareAcknowledge v1**, in rounds of 50 (a round's batches acquired just before it, so that no
  acquisition lock runs out first); beside them the baseline **Fetch v12** of the same partition from a moving
  offset, the same count of requests on one connection: server CPU per request on both servers, idle
  subtracted. The simulator's ShareFetch and ShareAcknowledge wait for the share coordinator's write to be
  durable (``__share_group_state``, RF 3, a 100 ms replication tick); the mock keeps its state in memory.
  A second simulator, ticking every millisecond, runs the same rows: the same work per request without
  the ~100 ms the CPU idles before each answer, after which this machine runs Python cold (the run also
  prints that price: the same Python work after 100 ms of sleep against back to back, in this process).
  These rows are reported, not gated: no Python floor is measured for them.

The run exits 1 when the simulator's CPU (per request, or for the rebalance) is above its row's target:
1.0x the mock's, and 2.0x for OffsetCommit (the mock answers a commit unreplicated, at once; the
simulator once it is durable, which the floor answering at the tick shows).

``--profile`` instead runs the simulator in this process (``controller.embedded.ServerThread``) and
profiles its event loop's thread with cProfile during the rebalance, then ``--requests`` Heartbeats,
then as many OffsetCommits; it prints the functions that took the most time.

    .venv/bin/python benchmarks/groups.py [--seconds 4] [--members 100] [--partitions 1000] [--rounds 7] [--commits 20000]
        [--share-cycles 300] [--share-batch 10] [--share-only]
    .venv/bin/python benchmarks/groups.py --profile [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import peer  # noqa: E402
from protocol import ZERO_UUID  # noqa: E402

TARGET = 1.0
#: Targets other than :data:`TARGET`, by row label prefix: a commit answered at replication.
TARGETS = {"OffsetCommit": 2.0}
MIN_COMMITS = 20_000
GROUP = "bench-group"
TOPIC = "bench-00000"
SESSION_MS = 60_000
#: The rebalance group's session timeout: the mock ends a join phase entered from Stable after its session
#: timeout less one second (Kafka: once every member has rejoined), so the lowest Kafka allows.
REBALANCE_SESSION_MS = 6_000
#: Label, request count, CPU of the mock, the simulator and the floor, unit, the floor answering at the tick,
#: the floor doing the row's work (``benchmarks/group_floor.py``).
Row = tuple[str, str, float, float, float | None, str, float | None, float | None]
#: The floor answering at the replication tick, one request in progress per connection.
WAITING_FLOOR = "Python floor, waiting"
#: The floor that does each row's work (``benchmarks/group_floor.py``).
WORK_FLOOR = "Python floor, working"
#: The simulator's replication tick (``simulator.replication.tick.ms``'s default): a commit waits for it.
TICK_MS = 100
#: How long a leader waits after every follower has sent its SyncGroup before sending its own.
SYNC_PAUSE = 0.05
#: How long the followers of a rebalance round wait after the leader's rejoin is sent before sending theirs.
LEADER_FIRST = 0.02
REBALANCE_MS = 60_000


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    name = topic.encode()
    body = struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    return body + struct.pack(">i", -1)


def range_assign(members: list[str], partitions: int) -> dict[str, bytes]:
    each, extra = divmod(partitions, len(members))
    out, start = {}, 0
    for i, m in enumerate(sorted(members)):
        n = each + (1 if i < extra else 0)
        out[m] = assignment(TOPIC, list(range(start, start + n)))
        start += n
    return out


class Wire:
    """One connection: requests answered in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0
        #: (request frame, response frame without its size) of each exchange, while recording (not None).
        self.recorded: list[tuple[bytes, bytes]] | None = None

    @classmethod
    async def open(cls, address: tuple[str, int]) -> Wire:
        return cls(*await asyncio.open_connection(*address))

    async def send(self, api_key: int, version: int, data: dict) -> dict:
        self.correlation += 1
        request = peer.frame(api_key, version, data, self.correlation)
        self.writer.write(request)
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        response = await self.reader.readexactly(size)
        if self.recorded is not None:
            self.recorded.append((request, response))
        if api_key == 14:  # the mock answers a failed SyncGroup with a null assignment: read the error alone
            return {"ErrorCode": struct.unpack_from(">h", response, 8)[0]}
        return peer.decode(api_key, version, response)

    def close(self) -> None:
        self.writer.close()


def join_body(member_id: str, session_ms: int) -> dict:
    return {
        "GroupId": GROUP,
        "SessionTimeoutMs": session_ms,
        "RebalanceTimeoutMs": REBALANCE_MS,
        "MemberId": member_id,
        "GroupInstanceId": None,
        "ProtocolType": "consumer",
        "Protocols": [{"Name": "range", "Metadata": subscription(TOPIC)}],
    }


class Round:
    """The members of one rebalance: a leader sends its SyncGroup once every follower has sent theirs (and
    SYNC_PAUSE after), since the mock completes the sync at the leader's assignment and refuses a SyncGroup
    that comes after it (INVALID_REQUEST in its Up state); Kafka takes them in any order. Both servers get
    the same order."""

    def __init__(self, session_ms: int) -> None:
        self.session_ms = session_ms
        self.synced: collections.Counter[int] = collections.Counter()  # followers' SyncGroups by generation
        self.changed = asyncio.Event()

    def follower_synced(self, generation: int) -> None:
        self.synced[generation] += 1
        self.changed.set()

    async def followers(self, generation: int, count: int) -> None:
        while self.synced[generation] < count:
            self.changed.clear()
            await self.changed.wait()
        await asyncio.sleep(SYNC_PAUSE)


async def member_round(wire: Wire, member_id: str, partitions: int, round_: Round) -> tuple[str, int, str]:
    """Join (parked until the group's join phase completes), then sync; again while the group rebalances:
    the member's id, the generation and the leader."""
    for _ in range(20):
        joined = await wire.send(11, 5, join_body(member_id, round_.session_ms))
        if joined["ErrorCode"] == 79:  # MEMBER_ID_REQUIRED
            member_id = joined["MemberId"]
            joined = await wire.send(11, 5, join_body(member_id, round_.session_ms))
        if joined["ErrorCode"] == 27:  # REBALANCE_IN_PROGRESS
            continue
        if joined["ErrorCode"] != 0:
            raise RuntimeError(f"JoinGroup: error {joined['ErrorCode']}")
        member_id = joined["MemberId"]
        generation = joined["GenerationId"]
        given = []
        if joined["Leader"] == member_id:
            plan = range_assign([m["MemberId"] for m in joined["Members"]], partitions)
            given = [{"MemberId": m, "Assignment": a} for m, a in plan.items()]
            await round_.followers(generation, len(given) - 1)
        else:
            asyncio.get_running_loop().call_soon(round_.follower_synced, generation)  # once it is written
        synced = await wire.send(
            14,
            3,
            {
                "GroupId": GROUP,
                "GenerationId": generation,
                "MemberId": member_id,
                "GroupInstanceId": None,
                "Assignments": given,
            },
        )
        if synced["ErrorCode"] == 0:
            return member_id, generation, joined["Leader"]
        if synced["ErrorCode"] not in (22, 27):  # ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS: join again
            raise RuntimeError(
                f"SyncGroup: error {synced['ErrorCode']} (leader {joined['Leader'] == member_id}, {len(given)} given, gen {generation})"
            )
    raise RuntimeError("the group never settled")


def thread_cpu_ns(server: peer.Server, comm: str) -> int | None:
    """CPU time (ns, ``schedstat``) of the server process's thread named ``comm``, if it has one."""
    for tid in os.listdir(f"/proc/{server.pid}/task"):
        with open(f"/proc/{server.pid}/task/{tid}/comm") as f:
            if f.read().strip() == comm:
                with open(f"/proc/{server.pid}/task/{tid}/schedstat") as f:
                    return int(f.read().split()[0])
    return None


def server_cpu_ns(server: peer.Server) -> int:
    """The CPU the server spends on requests: the mock cluster's own thread (it serves every broker; the
    rest of its process is the idle client hosting it), the whole process for the others."""
    mock_thread = thread_cpu_ns(server, peer.MOCK_THREAD) if server.name == peer.MOCK else None
    return mock_thread if mock_thread is not None else server.cpu_ns()


def idle_ns(servers: list[peer.Server], seconds: float) -> dict[str, float]:
    """CPU ns per wall second of each server (``server_cpu_ns``) with no load, all in the same window."""
    before = {s.name: server_cpu_ns(s) for s in servers}
    started = time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    return {s.name: (server_cpu_ns(s) - before[s.name]) / elapsed for s in servers}


def measure(server: peer.Server, request: Request, total: int, idle_per_s: float) -> float:
    """µs of server CPU per request (``server_cpu_ns``, idle subtracted) over ``total`` requests in
    ``peer.py``'s closed loop."""
    before = server_cpu_ns(server)
    elapsed, _ = asyncio.run(peer._load(server.address, request.frame(), total))
    return (server_cpu_ns(server) - before - idle_per_s * elapsed) / total / 1000


async def rebalance(
    address: tuple[str, int],
    server: peer.Server | None,
    members: int,
    partitions: int,
    session_ms: int = SESSION_MS,
    record: bool = False,
    rounds: int = 1,
) -> dict:
    """``members`` join, then all rejoin (the leader first), ``rounds`` times: the median of the rejoin
    rounds' wall times and server CPU, and their spread (and, with ``record``, the exchanges per member
    of the first round in which no member had to ask again, else of the last, for the floors)."""
    wires = [await Wire.open(address) for _ in range(members)]
    try:
        first_round = Round(session_ms)
        first = await asyncio.gather(*(member_round(w, "", partitions, first_round) for w in wires))
        ids = [m for m, _, _ in first]
        leader = first[0][2]
        walls, cpus = [], []
        recorded: list[list[tuple[bytes, bytes]]] | None = None
        generation = 0
        for _ in range(rounds):
            if record:
                for w in wires:
                    w.recorded = []
            cpu_ns = server_cpu_ns(server) if server is not None else 0
            started = time.perf_counter()
            again_round = Round(session_ms)
            # The leader rejoins first: its rejoin starts the rebalance (a follower's rejoin to a Stable
            # group with its metadata unchanged is answered at once with the current generation, Kafka's
            # rule, and that member would not take part in the round the leader starts).
            first_join = asyncio.ensure_future(
                member_round(wires[ids.index(leader)], leader, partitions, again_round)
            )
            await asyncio.sleep(LEADER_FIRST)  # (its JoinGroup is written when the task first runs)
            again = await asyncio.gather(
                first_join,
                *(
                    member_round(w, m, partitions, again_round)
                    for w, m in zip(wires, ids, strict=True)
                    if m != leader
                ),
            )
            leader = again[0][2]
            walls.append((time.perf_counter() - started) * 1000)
            cpus.append((server_cpu_ns(server) - cpu_ns) / 1e6 if server is not None else 0.0)
            generation = max(g for _, g, _ in again)
            if record and (recorded is None or not once_each(recorded)):
                recorded = [w.recorded or [] for w in wires]
        return {
            "wall_ms": statistics.median(walls),
            "cpu_ms": statistics.median(cpus),
            "cpu_spread": (min(cpus), max(cpus)),
            "generation": generation,
            "member": ids[0],
            "recorded": recorded,
        }
    finally:
        for w in wires:
            w.close()


def once_each(exchanges: list[list[tuple[bytes, bytes]]]) -> bool:
    """Whether every member of a recorded round sent one JoinGroup and one SyncGroup (none asked again)."""
    return all(tuple(struct.unpack_from(">h", r, 4)[0] for r, _ in seq) == (11, 14) for seq in exchanges)


async def replay(
    address: tuple[str, int],
    exchanges: list[list[tuple[bytes, bytes]]],
    cpu_ns: Callable[[], int],
    answers: list[list[bytes]] | None = None,
) -> int:
    """Each member's recorded requests again, on a connection of its own (opened first), all members at
    once; the server's CPU (``cpu_ns``) over the exchanges (and its answers, in ``answers``)."""
    connections = [await asyncio.open_connection(*address) for _ in exchanges]
    if answers is not None:
        answers[:] = [[] for _ in exchanges]

    async def member(
        sequence: list[tuple[bytes, bytes]], reader: asyncio.StreamReader, writer, given: list[bytes] | None
    ) -> None:
        for request, _ in sequence:
            writer.write(request)
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            answer = await reader.readexactly(size)
            if given is not None:
                given.append(answer)

    before = cpu_ns()
    try:
        await asyncio.gather(
            *(
                member(seq, *c, answers[i] if answers is not None else None)
                for i, (seq, c) in enumerate(zip(exchanges, connections, strict=True))
            )
        )
        return cpu_ns() - before
    finally:
        for _, writer in connections:
            writer.close()


def replays_ms(
    address: tuple[str, int],
    exchanges: list[list[tuple[bytes, bytes]]],
    cpu_ns: Callable[[], int],
    rounds: int,
) -> float:
    """The median CPU (ms) of ``rounds`` replays of a recorded round."""
    return statistics.median(asyncio.run(replay(address, exchanges, cpu_ns)) / 1e6 for _ in range(rounds))


def rebalance_floor(exchanges: list[list[tuple[bytes, bytes]]], directory: str, rounds: int = 1) -> float:
    """The Python floor's CPU (ms) for the rebalance: ``peer.py --floor`` taught the simulator's answers to
    the rejoin round's requests, which are sent to it again (each answered at once): the median of
    ``rounds`` replays."""
    import pickle

    answers = {request[4:8] + request[12:]: response[4:] for seq in exchanges for request, response in seq}
    path = os.path.join(directory, "rebalance-answers.pickle")
    with open(path, "wb") as f:
        pickle.dump(answers, f)
    floor = peer.Server(peer.FLOOR, [sys.executable, peer.__file__, "--floor", path])
    floor.start()
    try:
        asyncio.run(replay(floor.address, exchanges, floor.cpu_ns))  # warm
        return replays_ms(floor.address, exchanges, floor.cpu_ns, rounds)
    finally:
        floor.stop()


def rebalance_work_floor(
    exchanges: list[list[tuple[bytes, bytes]]], directory: str, rounds: int = 1
) -> float | None:
    """The CPU (ms) of the floor doing the rebalance's work (``benchmarks/group_floor.py``), taught the
    group the simulator's round began from, once its answers to the round are checked to be the
    simulator's (a JoinGroup's members in any order): the median of ``rounds`` replays; None (said why)
    when the simulator's round was not one JoinGroup and one SyncGroup per member (a member asked
    again), which it does not replay."""
    import json
    import pickle

    if not once_each(exchanges):
        apis = collections.Counter(
            tuple(struct.unpack_from(">h", r, 4)[0] for r, _ in seq) for seq in exchanges
        )
        print(f"  {WORK_FLOOR}: not measured: the round's exchanges per member were {dict(apis)}")
        return None
    joined = [peer.decode(11, 5, seq[0][1]) for seq in exchanges]
    state = {
        "group": GROUP,
        "generation": joined[0]["GenerationId"] - 1,
        "leader": joined[0]["Leader"],
        "members": [j["MemberId"] for j in joined],
        "protocol": joined[0]["ProtocolName"],
    }
    group, answers = os.path.join(directory, "rebalance.json"), os.path.join(directory, "none.pickle")
    with open(group, "w") as f:
        json.dump(state, f)
    with open(answers, "wb") as f:
        pickle.dump({}, f)
    floor = floor_server(WORK_FLOOR, answers, "--rebalance", group)
    floor.start()
    try:
        given: list[list[bytes]] = []
        asyncio.run(replay(floor.address, exchanges, floor.cpu_ns, given))  # warm, and checked

        def join(answer: bytes) -> dict:
            values = peer.decode(11, 5, answer)
            values["Members"] = sorted(values["Members"], key=lambda m: m["MemberId"])
            return values

        for seq, ours in zip(exchanges, given, strict=True):
            if join(ours[0]) != join(seq[0][1]) or ours[1] != seq[1][1]:
                raise RuntimeError(f"{WORK_FLOOR}: the rebalance answered otherwise than the simulator")
        return replays_ms(floor.address, exchanges, floor.cpu_ns, rounds)
    finally:
        floor.stop()


def coordinator(server: peer.Server, group: str | None = None) -> tuple[str, int]:
    key = group if group is not None else GROUP
    found = peer.decode(10, 3, peer.ask(server.address, peer.frame(10, 3, {"Key": key, "KeyType": 0})))
    if found["ErrorCode"] != 0:
        raise RuntimeError(f"{server.name}: FindCoordinator error {found['ErrorCode']}")
    return found["Host"], found["Port"]


class Request:
    def __init__(
        self, label: str, api_key: int, version: int, data: dict, key_space: str | None = None
    ) -> None:
        self.label, self.api_key, self.version, self.data = label, api_key, version, data
        #: The key space of its API (apiKey 68: ConsumerGroupHeartbeat is Kafka's), and the request each
        #: connection sends first so that it speaks that key space (ApiVersions naming librdkafka).
        self.key_space = key_space
        self.greeting = LIBRDKAFKA_HELLO() if key_space is not None else None

    def frame(self) -> bytes:
        return peer.frame(self.api_key, self.version, self.data, key_space=self.key_space)


def LIBRDKAFKA_HELLO() -> bytes:  # noqa: N802 - a constant made once the codec is loaded
    """ApiVersions v3 naming librdkafka: on the simulator, the connection then speaks Kafka's key space
    (apiKey 68 is ConsumerGroupHeartbeat); the mock answers it as any ApiVersions request."""
    return peer.frame(18, 3, {"ClientSoftwareName": "librdkafka", "ClientSoftwareVersion": "2.16.0"})


def consumer_member(address: tuple[str, int]) -> tuple[str, int]:
    """A member of the consumer group protocol joins CONSUMER_GROUP (ConsumerGroupHeartbeat v1, epoch 0):
    its id and epoch."""
    import uuid

    member = str(uuid.uuid4())
    join = {
        "GroupId": CONSUMER_GROUP, "MemberId": member, "MemberEpoch": 0, "RebalanceTimeoutMs": 60_000,
        "SubscribedTopicNames": [TOPIC], "SubscribedTopicRegex": "", "TopicPartitions": [],
    }  # fmt: skip
    peer.GREETING = LIBRDKAFKA_HELLO()
    try:
        answer = peer.decode(68, 1, peer.ask(address, peer.frame(68, 1, join, key_space="kafka")), "kafka")
    finally:
        peer.GREETING = None
    if answer["ErrorCode"] != 0:
        raise RuntimeError(
            f"ConsumerGroupHeartbeat join: error {answer['ErrorCode']} {answer['ErrorMessage']}"
        )
    return member, answer["MemberEpoch"]


#: The group of the consumer group protocol's heartbeat case (one member).
CONSUMER_GROUP = "bench-kip848"


def cases(member: str, generation: int, consumer: tuple[str, int] | None = None) -> list[Request]:
    found = []
    if consumer is not None:
        found.append(
            Request(
                "ConsumerGroupHeartbeat v1",
                68,
                1,
                {"GroupId": CONSUMER_GROUP, "MemberId": consumer[0], "MemberEpoch": consumer[1]},
                key_space="kafka",
            )
        )
    return found + [
        Request("Heartbeat v3", 12, 3,
                {"GroupId": GROUP, "GenerationId": generation, "MemberId": member, "GroupInstanceId": None}),
        Request("OffsetCommit v8", 8, 8, {
            "GroupId": GROUP, "GenerationIdOrMemberEpoch": generation, "MemberId": member, "GroupInstanceId": None,
            "Topics": [{"Name": TOPIC, "Partitions": [
                {"PartitionIndex": 0, "CommittedOffset": 42, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}],
        }),
    ]  # fmt: skip


def profile(requests: int, members: int, partitions: int, top: int = 30) -> None:
    """cProfile on an in-process simulator's event loop thread, per case: the rebalance (both rounds),
    Heartbeat, OffsetCommit."""
    import cProfile
    import pstats

    from controller.embedded import ServerThread

    global GROUP
    properties = {"group.initial.rebalance.delay.ms": 0}
    with ServerThread.start(seed=1, properties=properties) as thread:

        def profiled(label: str, run: Callable[[], object]) -> object:
            profiler = cProfile.Profile()
            thread.call(profiler.enable)  # the server's event loop thread only
            began = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - began
            thread.call(profiler.disable)
            print(f"\n{label} in {elapsed:.2f} s under cProfile")
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(top)
            stats.sort_stats("cumulative").print_stats(top * 2)
            return result

        host, port = thread.bootstrap.rsplit(":", 1)
        sim = peer.Server(peer.SIM, [])
        sim.address = (host, int(port))
        body = {"Topics": [{"Name": TOPIC, "NumPartitions": peer.PARTITIONS, "ReplicationFactor": peer.REPLICATION,
                            "Assignments": [], "Configs": []}], "timeoutMs": 60000, "validateOnly": False}  # fmt: skip
        made = peer.decode(19, 7, peer.ask(sim.address, peer.frame(19, 7, body)))
        if made["Topics"][0]["ErrorCode"] != 0:
            raise RuntimeError(f"CreateTopics: {made['Topics'][0]}")
        address = coordinator(sim)
        profiled(
            f"Rebalance of {members} members over {partitions:,} partitions (joins, then all rejoin)",
            lambda: asyncio.run(rebalance(address, None, members, partitions, REBALANCE_SESSION_MS)),
        )
        GROUP = "bench-one"
        address = coordinator(sim)
        joined = asyncio.run(rebalance(address, None, 1, partitions))
        consumer_address = coordinator(sim, CONSUMER_GROUP)
        consumer = consumer_member(consumer_address)
        for request in cases(joined["member"], joined["generation"], consumer):
            peer.CONNECTIONS = 64 if request.api_key == 8 else 8
            peer.GREETING = request.greeting
            at = consumer_address if request.greeting is not None else address
            asyncio.run(peer._load(at, request.frame(), min(requests, 2000)))  # warm
            frame = request.frame()
            profiled(
                f"{request.label}: {requests:,} requests",
                lambda frame=frame, at=at: asyncio.run(peer._load(at, frame, requests)),
            )
            peer.GREETING = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7, help="rejoin rounds of the rebalance (medians)")
    parser.add_argument("--commits", type=int, default=MIN_COMMITS, help="at least this many commits")
    parser.add_argument("--profile", action="store_true", help="profile the simulator's thread per case")
    parser.add_argument("--requests", type=int, default=20_000, help="requests per case with --profile")
    parser.add_argument(
        "--share-cycles", type=int, default=300, help="ShareFetch and ShareAcknowledge requests"
    )
    parser.add_argument(
        "--share-batch", type=int, default=10, help="records per produced batch for the share rows"
    )
    parser.add_argument("--share-only", action="store_true", help="only the share groups' rows")
    args = parser.parse_args()
    peer.load_codec()
    if args.profile:
        profile(args.requests, args.members, args.partitions)
        return
    mock = peer.mock_server()
    sim = peer.simulator()
    sim.cmd += ["--set", "group.initial.rebalance.delay.ms=2000"]
    rows: list[Row] = []
    try:
        mock.start()
        sim.start()
        peer.create_topics(mock, sim, [TOPIC, SHARE_TOPIC])
        if not args.share_only:
            rows += measure_rebalance(args, mock, sim)
            rows += measure_requests(args, mock, sim)
        try:
            share_rows = measure_share(args, mock, sim)
        except RuntimeError as exc:  # a peer refused the share run (reported; these rows are not gated)
            print(f"\nShare groups not measured: {exc}")
            share_rows = []
    finally:
        mock.stop()
        sim.stop()
    print(
        "\n| case | requests | mock CPU | simulator CPU | ratio | target | met? | Python floor | floor / mock "
        "| simulator / floor | floor answering at the tick | simulator / that floor "
        "| floor doing the row's work | that floor / mock | simulator / that floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, count, m, s, f, unit, w, k in rows:
        ratio = s / m if m > 0 else float("inf")
        target = target_of(label)
        floor = f"{f:.1f} {unit} | {f / m:.2f}x | {s / f:.2f}x" if f else "- | - | -"
        waiting = f"{w:.1f} {unit} | {s / w:.2f}x" if w else "- | -"
        working = f"{k:.1f} {unit} | {k / m:.2f}x | {s / k:.2f}x" if k else "- | - | -"
        print(
            f"| {label} | {count} | {m:.1f} {unit} | {s:.1f} {unit} | {ratio:.2f}x | ≤ {target:.1f}x | "
            f"{peer.verdict(ratio, target)} | {floor} | {waiting} | {working} |"
        )
    print(
        f"\n| case (not gated) | requests | mock CPU | simulator CPU | ratio | simulator, {FAST_TICK_MS} ms tick "
        "| ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, count, m, s_, f in share_rows:
        print(
            f"| {label} | {count} | {m:.1f} µs | {s_:.1f} µs | {s_ / m if m > 0 else float('inf'):.2f}x "
            f"| {f:.1f} µs | {f / m if m > 0 else float('inf'):.2f}x |"
        )
    missed = [row[0] for row in rows if row[3] > target_of(row[0]) * row[2]]
    print(
        f"\ntargets (simulator at most {TARGET:.1f}x the mock, OffsetCommit {TARGETS['OffsetCommit']:.1f}x): "
        + ("all met" if not missed else "missed: " + "; ".join(missed))
    )
    sys.exit(1 if missed else 0)


def target_of(label: str) -> float:
    """The most the simulator may spend against the mock in the row ``label``."""
    return next((t for prefix, t in TARGETS.items() if label.startswith(prefix)), TARGET)


def measure_rebalance(args: argparse.Namespace, mock: peer.Server, sim: peer.Server) -> list[Row]:
    """The rebalance on both servers (the same requests in the same order), and the floor's CPU for the
    simulator's exchanges of it."""
    addresses = {server.name: coordinator(server) for server in (mock, sim)}
    results = {}
    for server in (mock, sim):
        results[server.name] = asyncio.run(
            rebalance(
                addresses[server.name],
                server,
                args.members,
                args.partitions,
                REBALANCE_SESSION_MS,
                record=server is sim,
                rounds=args.rounds,
            )
        )
    with tempfile.TemporaryDirectory() as directory:
        floor_ms = rebalance_floor(results[peer.SIM]["recorded"], directory, args.rounds)
        working_ms = rebalance_work_floor(results[peer.SIM]["recorded"], directory, args.rounds)
    print(
        f"Rebalance of {args.members} members over {args.partitions:,} partitions (all rejoin, leader assigns), "
        f"medians of {args.rounds} rounds:"
    )
    for name, r in results.items():
        low, high = r["cpu_spread"]
        print(
            f"  {name:16} wall {r['wall_ms']:8.1f} ms  server CPU {r['cpu_ms']:7.1f} ms "
            f"({low:.1f} to {high:.1f}; generation {r['generation']})"
        )
    print(
        f"  {peer.FLOOR:16} server CPU {floor_ms:7.1f} ms (the simulator's rejoin exchanges, answered at once)"
    )
    if working_ms is not None:
        print(
            f"  {WORK_FLOOR:16} server CPU {working_ms:7.1f} ms (the same requests, the rebalance's work done)"
        )
    label = f"rebalance: {args.members} members rejoin, {args.partitions:,} partitions assigned"
    return [
        (
            label,
            "-",
            results[peer.MOCK]["cpu_ms"],
            results[peer.SIM]["cpu_ms"],
            floor_ms,
            "ms",
            None,
            working_ms,
        )
    ]


def measure_requests(args: argparse.Namespace, mock: peer.Server, sim: peer.Server) -> list[Row]:
    """Heartbeat and OffsetCommit: server CPU per request on both servers and the floor, the same count."""
    global GROUP
    GROUP = "bench-one"  # one member per server in a group of its own
    addresses = {server.name: coordinator(server) for server in (mock, sim)}
    results = {s.name: asyncio.run(rebalance(addresses[s.name], s, 1, args.partitions)) for s in (mock, sim)}
    # A member of the consumer group protocol on each (at its group's coordinator: the same broker for the
    # one-member groups here, as both servers place them).
    consumers = {s.name: consumer_member(coordinator(s, CONSUMER_GROUP)) for s in (mock, sim)}
    consumer_addresses = {s.name: coordinator(s, CONSUMER_GROUP) for s in (mock, sim)}
    idle = idle_ns([mock, sim], 2.0)
    per_case = {name: cases(r["member"], r["generation"], consumers[name]) for name, r in results.items()}
    rows = []
    print("\nServer CPU per request (µs), idle subtracted:")
    for i, label in enumerate(c.label for c in per_case[peer.SIM]):
        # A commit waits for the high watermark on the simulator (a 100 ms replication tick): more
        # connections, and at least MIN_COMMITS, so that the mock's share is many clock ticks too.
        commits = label.startswith("OffsetCommit")
        peer.CONNECTIONS = 64 if commits else 8
        peer.GREETING = per_case[peer.SIM][i].greeting
        case_addresses = consumer_addresses if peer.GREETING is not None else addresses
        for server in (mock, sim):
            request = per_case[server.name][i]
            answer = peer.ask(case_addresses[server.name], request.frame())
            values = peer.decode(request.api_key, request.version, answer, request.key_space)
            code = values["Topics"][0]["Partitions"][0]["ErrorCode"] if commits else values["ErrorCode"]
            if code != 0:
                raise RuntimeError(f"{server.name}: {label}: error {code}")
        with tempfile.TemporaryDirectory() as directory:
            sim.address, bootstrap = case_addresses[sim.name], sim.address
            floor = peer.floor_server(sim, per_case[sim.name][i], directory)  # taught the simulator's answer
            sim.address = bootstrap
            floor.start()
            try:
                floor_idle = idle_ns([floor], 1.0)[peer.FLOOR]
                case_addresses[peer.FLOOR] = floor.address
                idle[peer.FLOOR] = floor_idle
                per_case[peer.FLOOR] = per_case[peer.SIM]
                servers = (mock, sim, floor)
                warm = []
                for server in servers:
                    server.address, bootstrap = case_addresses[server.name], server.address
                    warm.append(peer.warm_up(server, per_case[server.name][i], 1.0))
                    server.address = bootstrap
                total = peer.request_count(warm[:2], args.seconds)
                if commits:
                    total = max(total, args.commits)
                row = {}
                for server in servers:
                    server.address, bootstrap = case_addresses[server.name], server.address
                    row[server.name] = measure(server, per_case[server.name][i], total, idle[server.name])
                    server.address = bootstrap
            finally:
                floor.stop()
                peer.GREETING = None
            waiting = None
            if commits:  # the floor again, answering as the simulator does: at the tick, one per connection
                tick_floor = floor_server(
                    WAITING_FLOOR, os.path.join(directory, "answers.pickle"), "--taught"
                )
                tick_floor.start()
                try:
                    tick_idle = idle_ns([tick_floor], 1.0)[WAITING_FLOOR]
                    peer.warm_up(tick_floor, per_case[peer.SIM][i], 1.0)
                    waiting = measure(tick_floor, per_case[peer.SIM][i], total, tick_idle)
                finally:
                    tick_floor.stop()
            working = measure_work_floor(
                sim,
                case_addresses[sim.name],
                per_case[peer.SIM][i],
                os.path.join(directory, "answers.pickle"),
                total,
            )
        m, s, f = (row[name] for name in (peer.MOCK, peer.SIM, peer.FLOOR))
        print(
            f"  {label:16} {total:>8,} requests  mock {m:8.1f}  simulator {s:8.1f}  floor {f:8.1f}"
            + (f"  floor answering at the tick {waiting:8.1f}" if waiting is not None else "")
            + f"  floor doing the work {working:8.1f}"
        )
        rows.append((label, f"{total:,}", m, s, f, "µs", waiting, working))
    return rows


def floor_server(name: str, answers: str, *flags: str) -> peer.Server:
    """``benchmarks/group_floor.py`` taught ``answers``, at the simulator's tick (``--taught``: the floor
    answering at the tick, which answers every request from what it was taught)."""
    script = str(Path(__file__).with_name("group_floor.py"))
    return peer.Server(name, [sys.executable, script, answers, str(TICK_MS), *flags])


def measure_work_floor(
    sim: peer.Server, address: tuple[str, int], request: Request, answers: str, total: int
) -> float:
    """The CPU per request of ``benchmarks/group_floor.py`` (taught the greeting's answer), once its answer
    to the case's request is checked to be the simulator's, byte for byte."""
    floor = floor_server(WORK_FLOOR, answers)
    floor.start()
    try:
        peer.GREETING = request.greeting
        theirs, ours = peer.ask(address, request.frame()), peer.ask(floor.address, request.frame())
        if theirs != ours:
            raise RuntimeError(
                f"{WORK_FLOOR}: {request.label}: answered {ours.hex()}, the simulator {theirs.hex()}"
            )
        idle = idle_ns([floor], 1.0)[WORK_FLOOR]
        peer.warm_up(floor, request, 1.0)
        return measure(floor, request, total, idle)
    finally:
        peer.GREETING = None
        floor.stop()


SHARE_TOPIC = "bench-share"
SHARE_GROUP = "bench-share-group"


def _share_member() -> str:
    """A member id as the share consumers make it: a UUID in Kafka's base64 form."""
    import base64
    import uuid

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _produce_batches(bootstrap: str, topic: str, batches: int, size: int) -> None:
    """``batches`` batches of ``size`` 100-byte records to partition 0 (confluent-kafka's producer)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": size, "acks": "all"}
    )
    for _ in range(batches):
        for _ in range(size):
            producer.produce(topic, value=b"x" * 100, partition=0)
        producer.flush(30)
    if producer.flush(30):
        raise RuntimeError("records not delivered")


#: ShareAcknowledge requests per round of the share rows: their batches are acquired just before.
SHARE_ROUND = 50


async def _share_run(server: peer.Server, cycles: int, batch: int, idle_per_s: float) -> dict[str, float]:
    """The share rows on one server: µs of server CPU per ShareFetch, per ShareAcknowledge and per Fetch."""
    found = await (await Wire.open(server.address)).send(10, 3, {"Key": SHARE_GROUP, "KeyType": 0})
    coordinator_wire = await Wire.open((found["Host"], found["Port"]))
    meta_wire = await Wire.open(server.address)
    metadata = await meta_wire.send(
        3, 12, {"Topics": [{"TopicId": ZERO_UUID, "Name": SHARE_TOPIC}], "AllowAutoTopicCreation": False,
                "IncludeTopicAuthorizedOperations": False})  # fmt: skip
    topic = metadata["Topics"][0]
    topic_id = topic["TopicId"]
    leader = next(p["LeaderId"] for p in topic["Partitions"] if p["PartitionIndex"] == 0)
    broker = next(b for b in metadata["Brokers"] if b["NodeId"] == leader)
    wire = await Wire.open((broker["Host"], broker["Port"]))
    member = _share_member()
    heartbeat = {"GroupId": SHARE_GROUP, "MemberId": member, "MemberEpoch": 0, "RackId": None,
                 "SubscribedTopicNames": [SHARE_TOPIC]}  # fmt: skip
    for _ in range(100):
        answer = await coordinator_wire.send(76, 1, heartbeat)
        if answer["ErrorCode"]:
            raise RuntimeError(f"{server.name}: ShareGroupHeartbeat error {answer['ErrorCode']}")
        heartbeat.update(MemberEpoch=answer["MemberEpoch"], SubscribedTopicNames=None)
        assigned = answer["Assignment"]
        if assigned and any(0 in t["Partitions"] for t in assigned["TopicPartitions"]):
            break
        await asyncio.sleep(0.1)

    async def keep_alive(interval: float) -> None:
        """The member heartbeats as a consumer does (its session ends after share.session.timeout.ms
        without one, and its share sessions with it: a slow run outlasted it)."""
        while True:
            await asyncio.sleep(interval)
            answer = await coordinator_wire.send(76, 1, heartbeat)
            if answer["ErrorCode"]:
                raise RuntimeError(f"{server.name}: ShareGroupHeartbeat error {answer['ErrorCode']}")
            heartbeat["MemberEpoch"] = answer["MemberEpoch"]

    beating = asyncio.ensure_future(keep_alive(answer["HeartbeatIntervalMs"] / 1000))
    try:
        return await _share_cycles(server, wire, member, topic_id, cycles, batch, idle_per_s, beating)
    finally:
        beating.cancel()
        for w in (wire, coordinator_wire, meta_wire):
            w.close()


async def _share_cycles(
    server: peer.Server,
    wire: Wire,
    member: str,
    topic_id: object,
    cycles: int,
    batch: int,
    idle_per_s: float,
    beating: asyncio.Future[None],
) -> dict[str, float]:
    """The measured part of :func:`_share_run`, while ``beating`` keeps the member's session."""
    epoch = 0

    async def share_fetch(acks: list[tuple[int, int]], max_records: int) -> list[tuple[int, int]]:
        nonlocal epoch
        body = {"GroupId": SHARE_GROUP, "MemberId": member, "ShareSessionEpoch": epoch, "MaxWaitMs": 0,
                "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": max_records, "BatchSize": max_records,
                "Topics": [{"TopicId": topic_id, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
                    {"FirstOffset": a, "LastOffset": b, "AcknowledgeTypes": [1]} for a, b in acks]}]}],
                "ForgottenTopicsData": []}  # fmt: skip
        answer = await wire.send(78, 1, body)
        epoch += 1
        if answer["ErrorCode"]:
            raise RuntimeError(f"{server.name}: ShareFetch error {answer['ErrorCode']}")
        got = []
        for t in answer["Responses"]:
            for p in t["Partitions"]:
                if p["ErrorCode"] or p["AcknowledgeErrorCode"]:
                    raise RuntimeError(
                        f"{server.name}: ShareFetch partition errors {p['ErrorCode']}, {p['AcknowledgeErrorCode']}"
                    )
                got += [(r["FirstOffset"], r["LastOffset"]) for r in p["AcquiredRecords"]]
        return got

    async def share_acknowledge(acks: list[tuple[int, int]]) -> None:
        nonlocal epoch
        body = {"GroupId": SHARE_GROUP, "MemberId": member, "ShareSessionEpoch": epoch,
                "Topics": [{"TopicId": topic_id, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
                    {"FirstOffset": a, "LastOffset": b, "AcknowledgeTypes": [1]} for a, b in acks]}]}]}  # fmt: skip
        answer = await wire.send(79, 1, body)
        epoch += 1
        errors = [p["ErrorCode"] for t in answer["Responses"] for p in t["Partitions"]]
        if answer["ErrorCode"] or any(errors):
            raise RuntimeError(f"{server.name}: ShareAcknowledge errors {answer['ErrorCode']}, {errors}")

    await share_fetch([], batch)  # opens the session; the share-partition starts at the end (latest)
    await asyncio.to_thread(
        _produce_batches, f"{server.address[0]}:{server.address[1]}", SHARE_TOPIC, 2 * cycles + 2, batch
    )
    out: dict[str, float] = {}
    epoch = 0  # a session opened again now that there are records (the mock's ends on an empty answer)
    held = await share_fetch([], batch)
    before, started = server_cpu_ns(server), time.perf_counter()
    for _ in range(cycles):
        held = await share_fetch(held, batch)
        if not held:
            raise RuntimeError(f"{server.name}: ShareFetch acquired nothing")
    out["ShareFetch"] = (
        (server_cpu_ns(server) - before - idle_per_s * (time.perf_counter() - started)) / cycles / 1000
    )
    # Acquired and acknowledged in rounds, each acquisition acknowledged within its lock's time (all of
    # them acquired first, the first locks ran out before a slow run acknowledged them: the mock answered
    # INVALID_RECORD_STATE); only the acknowledgements are measured.
    spent_ns, spent_s = 0, 0.0
    for start in range(0, cycles, SHARE_ROUND):
        count = min(SHARE_ROUND, cycles - start)
        pending = [await share_fetch(held if start == 0 and i == 0 else [], batch) for i in range(count)]
        before, started = server_cpu_ns(server), time.perf_counter()
        for acquired in pending:
            await share_acknowledge(acquired)
        spent_ns += server_cpu_ns(server) - before
        spent_s += time.perf_counter() - started
    out["ShareAcknowledge"] = (spent_ns - idle_per_s * spent_s) / cycles / 1000
    offset = 0
    fetch = {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0, "SessionId": 0,
             "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
             "Topics": [{"Topic": SHARE_TOPIC, "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                         "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": 100 * batch + 200}]}]}  # fmt: skip
    before, started = server_cpu_ns(server), time.perf_counter()
    for _ in range(cycles):
        fetch["Topics"][0]["Partitions"][0]["FetchOffset"] = offset
        answer = await wire.send(1, 12, fetch)
        part = answer["Responses"][0]["Partitions"][0]
        if part["ErrorCode"]:
            raise RuntimeError(f"{server.name}: Fetch error {part['ErrorCode']}")
        offset += batch
    out["Fetch"] = (
        (server_cpu_ns(server) - before - idle_per_s * (time.perf_counter() - started)) / cycles / 1000
    )
    if beating.done():
        beating.result()  # the heartbeats' error, if they stopped on one
    return out


#: The replication tick of the share rows' second simulator: each request answered within a millisecond.
FAST_TICK_MS = 1


def share_at_fast_tick(args: argparse.Namespace) -> dict[str, float]:
    """The simulator's share rows again, on a server whose replication ticks every :data:`FAST_TICK_MS`:
    the same work per request, without the ~100 ms the CPU idles before each answer at the default tick
    (after which it runs the next request cold: see :func:`cold_factor`)."""
    fast = peer.simulator("--set", f"simulator.replication.tick.ms={FAST_TICK_MS}")
    try:
        fast.start()
        peer.create_on(fast, [SHARE_TOPIC])
        idle = idle_ns([fast], 1.0)[fast.name]
        return asyncio.run(_share_run(fast, args.share_cycles, args.share_batch, idle))
    finally:
        fast.stop()


def cold_factor(rounds: int = 31, pause: float = TICK_MS / 1000) -> float:
    """How much more CPU the same Python work takes in this process when it follows ``pause`` seconds of
    sleep than when it runs back to back (medians of ``rounds``): the machine's price for a server that
    idles between requests, as the simulator does at a 100 ms tick (caches and the core's clock go cold).
    The mock answers at once, back to back."""
    data = [{"offset": i, "key": str(i), "runs": [i, i + 1]} for i in range(2_000)]

    def work() -> int:
        return sum(len(repr(d)) for d in data[:400]) + sum(d["offset"] for d in data)

    def median_ns(sleep: float) -> int:
        spent = []
        for _ in range(rounds):
            if sleep:
                time.sleep(sleep)
            started = time.thread_time_ns()
            work()
            spent.append(time.thread_time_ns() - started)
        return sorted(spent)[rounds // 2]

    median_ns(0)  # warm-up
    return median_ns(pause) / median_ns(0)


def measure_share(
    args: argparse.Namespace, mock: peer.Server, sim: peer.Server
) -> list[tuple[str, str, float, float, float]]:
    """The share groups' rows (see the module docstring): (label, requests, mock µs, simulator µs,
    simulator µs at a 1 ms tick)."""
    idle = idle_ns([mock, sim], 2.0)
    results = {
        s.name: asyncio.run(_share_run(s, args.share_cycles, args.share_batch, idle[s.name]))
        for s in (mock, sim)
    }
    fast = share_at_fast_tick(args)
    cold = cold_factor()
    labels = {
        "ShareFetch": f"ShareFetch v1 (accepts {args.share_batch} records, acquires {args.share_batch})",
        "ShareAcknowledge": f"ShareAcknowledge v1 (accepts {args.share_batch} records)",
        "Fetch": f"Fetch v12 baseline ({args.share_batch} records of one partition)",
    }
    print("\nShare groups, server CPU per request (µs), idle subtracted:")
    rows = []
    for key, label in labels.items():
        m, s_, f = results[peer.MOCK][key], results[peer.SIM][key], fast[key]
        print(f"  {label:52} mock {m:8.1f}  simulator {s_:8.1f}  at a {FAST_TICK_MS} ms tick {f:8.1f}")
        rows.append((label, f"{args.share_cycles:,}", m, s_, f))
    print(
        f"  the same Python work after {TICK_MS} ms of sleep, in this process: {cold:.2f}x its CPU back to back"
    )
    return rows


if __name__ == "__main__":
    main()
