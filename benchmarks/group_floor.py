"""The group rows' second Python floor: a server that does what each row needs and nothing else.

``peer.py --floor`` answers taught bytes: the least any Python server spends on a request. This floor
does a group coordinator's work for the requests of ``benchmarks/groups.py``'s rows, as plainly as
Python allows, on the same event loop (uvloop) and without the project's code:

- every request: its frame cut by the size prefix, its header read (apiKey, version, correlation id,
  client id, the tag section of a flexible header), its body read field by field;
- **Heartbeat v3**: the group and member looked up, the generation and the static instance checked,
  the member's session restarted (its deadline moved), the answer's error encoded;
- **ConsumerGroupHeartbeat v1**: the same for a member of the consumer group protocol (its epoch
  checked, fields that would change its subscription looked at), the answer (member id, epoch,
  heartbeat interval, no assignment) encoded;
- **OffsetCommit v8**: the member and generation checked, each partition's offset kept (a dict, and a
  record appended to the group's log, compacted as it grows), the answer encoded per partition; as the
  simulator must, one request of a connection is in progress at a time and each is answered at the
  next replication tick (a commit waits for the followers' copy).
- **the rebalance** (JoinGroup v5, SyncGroup v3): every member's rejoin read and kept (its protocols'
  metadata) and parked until every member of the group has rejoined; then the generation moves on and
  each is answered (the leader with every member's metadata); a follower's SyncGroup is parked until
  the leader's brings the assignments, and each member is answered its own. The group (its members, its
  leader, its generation) is taught the state the simulator's round began from, and every round begins
  from it again (the benchmark replays the same round twice).

In the per-request rows the members are learned from the first request of each (the simulator learned
them from their joins, which are not measured); every other request is checked against what was learned. Anything else (the
ApiVersions that makes a connection speak Kafka's key space) is answered from taught bytes, as
``peer.py --floor`` does. ``benchmarks/groups.py`` checks that this floor's answers are byte for byte the
simulator's before it measures it.

With ``--taught`` it does no work: it answers every request from the taught bytes, a commit at the
tick, one request of a connection in progress (the groups benchmark's floor answering at the tick).

    python benchmarks/group_floor.py ANSWERS TICK_MS [--taught] [--rebalance GROUP]   (started by
        benchmarks/groups.py)
"""

from __future__ import annotations

import asyncio
import collections
import json
import pickle
import signal
import struct
import sys
from typing import Any

HOST = "127.0.0.1"
#: Kafka's default ``group.consumer.heartbeat.interval.ms`` (the simulator's too).
HEARTBEAT_INTERVAL_MS = 5000
SESSION_MS = 45_000
_HEAD = struct.Struct(">hhih")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">iqi")
NONE, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, INVALID_REQUEST = 0, 22, 25, 42
FENCED_INSTANCE_ID, FENCED_MEMBER_EPOCH = 82, 110


def uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:  # one byte: every count and length of these requests
        return b, pos + 1
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def skip_tags(buf: bytes, pos: int) -> int:
    if buf[pos] == 0:  # no tagged fields
        return pos + 1
    count, pos = uvarint(buf, pos)
    for _ in range(count):
        _, pos = uvarint(buf, pos)
        size, pos = uvarint(buf, pos)
        pos += size
    return pos


def string(buf: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    if n < 0:
        return None, pos + 2
    return buf[pos + 2 : pos + 2 + n].decode(), pos + 2 + n


def compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = uvarint(buf, pos)
    if n == 0:
        return None, pos
    return buf[pos : pos + n - 1].decode(), pos + n - 1


def put_uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def put_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    raw = value.encode()
    put_uvarint(out, len(raw) + 1)
    out += raw


class Coordinator:
    """The groups' state: members by (group, member id), their generation or epoch, their sessions'
    deadlines, the committed offsets and each group's log of records."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        #: (group, member) -> [generation or epoch, instance id]
        self.members: dict[tuple[str, str], list[Any]] = {}
        self.deadlines: dict[tuple[str, str], float] = {}
        self.offsets: dict[tuple[str, str, int], tuple[int, int, str, float]] = {}
        self.logs: dict[str, list[tuple[Any, ...]]] = collections.defaultdict(list)
        #: group -> its rebalance (:class:`Rebalance`), when taught one.
        self.rebalances: dict[str, Rebalance] = {}

    def member(self, group: str, member_id: str, generation: int, instance: str | None) -> int:
        """The error of a request of ``member_id`` at ``generation``; its session restarts when none."""
        key = (group, member_id)
        known = self.members.get(key)
        if known is None:  # its first request: it joined (not measured)
            known = self.members[key] = [generation, instance]
        if instance != known[1]:
            return FENCED_INSTANCE_ID
        if generation != known[0]:
            return ILLEGAL_GENERATION
        self.deadlines[key] = self.clock() + SESSION_MS / 1000
        return NONE

    def heartbeat(self, buf: bytes, pos: int) -> bytes:
        group, pos = string(buf, pos)
        (generation,) = _I32.unpack_from(buf, pos)
        member_id, pos = string(buf, pos + 4)
        instance, pos = string(buf, pos)
        error = self.member(group or "", member_id or "", generation, instance)
        return struct.pack(">ih", 0, error)

    def consumer_heartbeat(self, buf: bytes, pos: int) -> bytes:
        group, pos = compact_string(buf, pos)
        member_id, pos = compact_string(buf, pos)
        (epoch,) = _I32.unpack_from(buf, pos)
        instance, pos = compact_string(buf, pos + 4)
        rack, pos = compact_string(buf, pos)
        (rebalance_timeout,) = _I32.unpack_from(buf, pos)
        pos += 4
        count, pos = uvarint(buf, pos)
        topics = None if count == 0 else []
        for _ in range(count - 1):
            name, pos = compact_string(buf, pos)
            topics.append(name)  # type: ignore[union-attr]
        regex, pos = compact_string(buf, pos)
        assignor, pos = compact_string(buf, pos)
        count, pos = uvarint(buf, pos)
        owned = None if count == 0 else []
        for _ in range(count - 1):
            topic_id = buf[pos : pos + 16]
            n, pos = uvarint(buf, pos + 16)
            owned.append((topic_id, struct.unpack_from(f">{n - 1}i", buf, pos)))  # type: ignore[union-attr]
            pos = skip_tags(buf, pos + 4 * (n - 1))
        skip_tags(buf, pos)
        if rebalance_timeout != -1 or (rack, topics, regex, assignor, owned) != (
            None,
            None,
            None,
            None,
            None,
        ):
            # A heartbeat that changes the member (a join, a new subscription) is not what the row sends.
            error = INVALID_REQUEST
        else:
            error = self.member(group or "", member_id or "", epoch, instance)
            if error == ILLEGAL_GENERATION:
                error = FENCED_MEMBER_EPOCH
        out = bytearray(struct.pack(">ih", 0, error))
        out.append(0)  # no error message
        put_compact_string(out, member_id)
        out += struct.pack(">ii", epoch if not error else 0, HEARTBEAT_INTERVAL_MS if not error else 0)
        out.append(0xFF)  # no assignment: the member's did not change
        out.append(0)
        return bytes(out)

    def join(self, buf: bytes, pos: int, reply: Reply) -> None:
        group, pos = string(buf, pos)
        pos += 8  # the session and rebalance timeouts
        member_id, pos = string(buf, pos)
        instance, pos = string(buf, pos)
        _, pos = string(buf, pos)  # the protocol type
        (count,) = _I32.unpack_from(buf, pos)
        pos += 4
        protocols = []
        for _ in range(count):
            name, pos = string(buf, pos)
            (n,) = _I32.unpack_from(buf, pos)
            protocols.append((name, buf[pos + 4 : pos + 4 + n]))
            pos += 4 + n
        rebalance = self.rebalances[group or ""]
        metadata = next((m for name, m in protocols if name == rebalance.protocol), b"")
        rebalance.join(member_id or "", instance, metadata, reply)

    def sync(self, buf: bytes, pos: int, reply: Reply) -> None:
        group, pos = string(buf, pos)
        (generation,) = _I32.unpack_from(buf, pos)
        member_id, pos = string(buf, pos + 4)
        _, pos = string(buf, pos)  # the instance id
        (count,) = _I32.unpack_from(buf, pos)
        pos += 4
        assignments = {}
        for _ in range(count):
            m, pos = string(buf, pos)
            (n,) = _I32.unpack_from(buf, pos)
            assignments[m or ""] = buf[pos + 4 : pos + 4 + n]
            pos += 4 + n
        self.rebalances[group or ""].sync(member_id or "", generation, assignments, reply)

    def commit(self, buf: bytes, pos: int) -> bytes:
        group, pos = compact_string(buf, pos)
        (generation,) = _I32.unpack_from(buf, pos)
        member_id, pos = compact_string(buf, pos + 4)
        instance, pos = compact_string(buf, pos)
        error = self.member(group or "", member_id or "", generation, instance)
        now = self.clock()
        log = self.logs[group or ""]
        out = bytearray(b"\x00\x00\x00\x00")
        topics, pos = uvarint(buf, pos)
        put_uvarint(out, topics)
        for _ in range(topics - 1):
            name, pos = compact_string(buf, pos)
            put_compact_string(out, name)
            partitions, pos = uvarint(buf, pos)
            put_uvarint(out, partitions)
            for _ in range(partitions - 1):
                index, offset, leader_epoch = _PARTITION.unpack_from(buf, pos)
                metadata, pos = compact_string(buf, pos + 16)
                pos = skip_tags(buf, pos)
                if not error:
                    key = (group or "", name or "", index)
                    self.offsets[key] = (offset, leader_epoch, metadata or "", now)
                    log.append((key, offset, leader_epoch, metadata, now))
                out += struct.pack(">ih", index, error)
                out.append(0)
            pos = skip_tags(buf, pos)
            out.append(0)
        out.append(0)
        if len(log) > 10_000:  # compacted: the last record per key
            self.logs[group or ""] = list({record[0]: record for record in log}.values())
        return bytes(out)


Reply = Any  # a parked request's answer: reply(body)


class Rebalance:
    """A group's join and sync phases: the members, the leader and the generation each round starts from,
    who has rejoined (with its metadata and its parked answer) and who waits for the leader's SyncGroup."""

    def __init__(self, generation: int, leader: str, members: list[str], protocol: str) -> None:
        self.start = (generation, leader, frozenset(members), protocol)
        self.generation, self.leader, self.members, self.protocol = self.start
        self.joined: dict[str, tuple[str | None, bytes, Reply]] = {}
        self.waiting: dict[str, Reply] = {}
        self.assignments: dict[str, bytes] | None = None
        self.synced = 0

    def join(self, member_id: str, instance: str | None, metadata: bytes, reply: Reply) -> None:
        if member_id not in self.members:
            reply(_join_answer(UNKNOWN_MEMBER_ID, -1, "", "", member_id, []))
            return
        self.joined[member_id] = (instance, metadata, reply)
        if len(self.joined) < len(self.members):
            return  # parked until every member has rejoined
        self.generation += 1
        self.assignments, self.synced = None, 0
        everyone = [(m, instance, metadata) for m, (instance, metadata, _) in self.joined.items()]
        joined, self.joined = self.joined, {}
        for m, (_, _, answer) in joined.items():
            answer(
                _join_answer(
                    NONE, self.generation, self.protocol, self.leader, m, everyone if m == self.leader else []
                )
            )

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes], reply: Reply) -> None:
        if member_id not in self.members:
            reply(_sync_answer(UNKNOWN_MEMBER_ID, b""))
            return
        if generation != self.generation:
            reply(_sync_answer(ILLEGAL_GENERATION, b""))
            return
        if member_id == self.leader:
            self.assignments = assignments
        self.waiting[member_id] = reply
        if self.assignments is None:
            return  # parked until the leader's SyncGroup
        waiting, self.waiting = self.waiting, {}
        for m, answer in waiting.items():
            answer(_sync_answer(NONE, self.assignments.get(m, b"")))
        self.synced += len(waiting)
        if self.synced == len(self.members):  # the round is over: the next begins where this one did
            self.generation, self.leader, self.members, self.protocol = self.start
            self.assignments, self.synced = None, 0


def _string(value: str | None) -> bytes:
    if value is None:
        return b"\xff\xff"
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _join_answer(
    error: int,
    generation: int,
    protocol: str,
    leader: str,
    member_id: str,
    members: list[tuple[str, Any, bytes]],
) -> bytes:
    out = bytearray(struct.pack(">ihi", 0, error, generation))
    out += _string(protocol) + _string(leader) + _string(member_id) + struct.pack(">i", len(members))
    for m, instance, metadata in members:
        out += _string(m) + _string(instance) + struct.pack(">i", len(metadata)) + metadata
    return bytes(out)


def _sync_answer(error: int, assignment: bytes) -> bytes:
    return struct.pack(">ihi", 0, error, len(assignment)) + assignment


def main(path: str, tick_ms: int, work: bool = True, rebalance: str | None = None) -> None:
    """Serve on an ephemeral port until SIGTERM: the rows' requests with their work (``work``; else every
    request from the taught answers in ``path``, a commit still at the tick: the floor answering at the
    tick), anything else from the taught answers; ``rebalance``: a file of the group a rebalance round
    starts from (JSON: group, generation, leader, members, protocol)."""
    with open(path, "rb") as f:
        taught: dict[bytes, bytes] = pickle.load(f)
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    coordinator = Coordinator(loop.time)
    handlers = {
        (12, 3): (coordinator.heartbeat, False),
        (68, 1): (coordinator.consumer_heartbeat, True),
        (8, 8): (coordinator.commit, True),
    }
    parked = {(11, 5): coordinator.join, (14, 3): coordinator.sync}
    if not work:
        handlers.clear()
        parked.clear()
    if rebalance is not None:
        with open(rebalance) as f:
            state = json.load(f)
        coordinator.rebalances[state["group"]] = Rebalance(
            state["generation"], state["leader"], state["members"], state["protocol"]
        )
    waiting: list[Serving] = []

    def answer(request: bytes, transport: Any) -> bytes | None:
        api_key, version, correlation, length = _HEAD.unpack_from(request, 0)
        park = parked.get((api_key, version))
        if park is not None:  # answered when the group's phase ends (non-flexible: header v0)

            def reply(body: bytes) -> None:
                transport.write(struct.pack(">ii", len(body) + 4, correlation) + body)

            park(request, 10 + max(length, 0), reply)
            return None
        found = handlers.get((api_key, version))
        if found is None:
            rest = taught[request[:4] + request[8:]]
            return (4 + len(rest)).to_bytes(4, "big") + request[4:8] + rest
        handle, flexible = found
        pos = 10 + max(length, 0)
        if flexible:
            pos = skip_tags(request, pos)
        body = handle(request, pos)
        head = struct.pack(">ii", len(body) + 4 + flexible, correlation)
        return head + (b"\x00" if flexible else b"") + body

    class Serving(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.buffer = bytearray()
            self.frames: collections.deque[bytes] = collections.deque()
            self.busy = False

        def data_received(self, data: bytes) -> None:
            buffer = self.buffer
            buffer += data
            out = []
            pos, end = 0, len(buffer)
            while end - pos >= 4:
                size = int.from_bytes(buffer[pos : pos + 4], "big")
                if end - pos - 4 < size:
                    break
                request = bytes(buffer[pos + 4 : pos + 4 + size])
                pos += 4 + size
                if request[:2] == b"\x00\x08" or self.frames:  # a commit waits for the tick
                    self.frames.append(request)
                else:
                    answered = answer(request, self.transport)
                    if answered is not None:
                        out.append(answered)
            del buffer[:pos]
            if out:
                self.transport.write(b"".join(out))  # type: ignore[attr-defined]
            if not self.busy and self.frames:
                self.busy = True
                waiting.append(self)

        def answer(self) -> None:
            self.transport.write(answer(self.frames.popleft(), self.transport))  # type: ignore[attr-defined]
            self.busy = bool(self.frames)
            if self.busy:
                waiting.append(self)  # the next request of the connection waits for the next tick

    def tick() -> None:
        due = waiting[:]
        waiting.clear()
        for connection in due:
            connection.answer()
        loop.call_later(tick_ms / 1000, tick)

    server = loop.run_until_complete(loop.create_server(Serving, HOST, 0))
    print(f"listening on {HOST}:{server.sockets[0].getsockname()[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    loop.call_later(tick_ms / 1000, tick)
    loop.run_forever()


if __name__ == "__main__":
    flags = sys.argv[3:]
    main(
        sys.argv[1],
        int(sys.argv[2]),
        work="--taught" not in flags,
        rebalance=flags[flags.index("--rebalance") + 1] if "--rebalance" in flags else None,
    )
