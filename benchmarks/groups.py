"""Consumer groups: placement-sim against librdkafka's mock cluster (C), same requests, same load.

Both servers run in their own processes, started as in ``benchmarks/peer.py`` (6 brokers; the simulator
with ``group.initial.rebalance.delay.ms`` 2000 here, so that 100 members joining at once make one
generation, as the mock does with its own delay). This process speaks the wire to both, to the
coordinator each names in FindCoordinator.

- **Rebalance**: 100 members (JoinGroup v5, SyncGroup v3) in one Stable group subscribed to a topic of
  1,000 partitions (range-assigned by the leader here; the assignment is 1,000 partitions' worth of
  bytes); then all 100 rejoin at once, the leader assigns again and every member syncs. Measured from
  the first rejoin sent to the last SyncGroup answer: wall time and the server process's CPU.
- **Heartbeat v3** and **OffsetCommit v8** (one partition, the member's generation): server CPU per
  request, measured as in ``benchmarks/peer.py`` (closed loop of 8 connections x 8 requests, idle CPU
  subtracted, the same request count for both; 64 in flight per connection for commits). The simulator answers a commit once the high watermark
  of its ``__consumer_offsets`` partition covers it (replication factor 3, a follower copies per 100 ms
  tick), so its commits wait; the CPU per request is what is compared.

The run exits 1 when the simulator's CPU (per request, or for the rebalance) is above 1.0x the mock's.

``--profile`` instead runs the simulator in this process (``controller.embedded.ServerThread``) and
profiles its event loop's thread with cProfile while this process sends ``--requests`` Heartbeats, then
as many OffsetCommits, in the same closed loop; it prints the functions that took the most time.

    .venv/bin/python benchmarks/groups.py [--seconds 4] [--members 100] [--partitions 1000]
    .venv/bin/python benchmarks/groups.py --profile [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import peer  # noqa: E402

TARGET = 1.0
MIN_COMMITS = 20_000
GROUP = "bench-group"
TOPIC = "bench-00000"
SESSION_MS = 60_000
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

    @classmethod
    async def open(cls, address: tuple[str, int]) -> Wire:
        return cls(*await asyncio.open_connection(*address))

    async def send(self, api_key: int, version: int, data: dict) -> dict:
        self.correlation += 1
        self.writer.write(peer.frame(api_key, version, data, self.correlation))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        response = await self.reader.readexactly(size)
        if api_key == 14:  # the mock answers a failed SyncGroup with a null assignment: read the error alone
            return {"ErrorCode": struct.unpack_from(">h", response, 8)[0]}
        return peer.decode(api_key, version, response)

    def close(self) -> None:
        self.writer.close()


def join_body(member_id: str) -> dict:
    return {
        "GroupId": GROUP,
        "SessionTimeoutMs": SESSION_MS,
        "RebalanceTimeoutMs": REBALANCE_MS,
        "MemberId": member_id,
        "GroupInstanceId": None,
        "ProtocolType": "consumer",
        "Protocols": [{"Name": "range", "Metadata": subscription(TOPIC)}],
    }


async def member_round(wire: Wire, member_id: str, partitions: int) -> tuple[str, int]:
    """Join (parked until the group's join phase completes), then sync; again while the group rebalances."""
    for _ in range(20):
        joined = await wire.send(11, 5, join_body(member_id))
        if joined["ErrorCode"] == 79:  # MEMBER_ID_REQUIRED
            member_id = joined["MemberId"]
            joined = await wire.send(11, 5, join_body(member_id))
        if joined["ErrorCode"] == 27:  # REBALANCE_IN_PROGRESS
            continue
        if joined["ErrorCode"] != 0:
            raise RuntimeError(f"JoinGroup: error {joined['ErrorCode']}")
        member_id = joined["MemberId"]
        given = []
        if joined["Leader"] == member_id:
            plan = range_assign([m["MemberId"] for m in joined["Members"]], partitions)
            given = [{"MemberId": m, "Assignment": a} for m, a in plan.items()]
        synced = await wire.send(
            14,
            3,
            {
                "GroupId": GROUP,
                "GenerationId": joined["GenerationId"],
                "MemberId": member_id,
                "GroupInstanceId": None,
                "Assignments": given,
            },
        )
        if synced["ErrorCode"] == 0:
            return member_id, joined["GenerationId"]
        if synced["ErrorCode"] not in (22, 27):  # ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS: join again
            raise RuntimeError(
                f"SyncGroup: error {synced['ErrorCode']} (leader {joined['Leader'] == member_id}, {len(given)} given, gen {joined['GenerationId']})"
            )
    raise RuntimeError("the group never settled")


async def rebalance(
    address: tuple[str, int], server: peer.Server | None, members: int, partitions: int
) -> dict:
    wires = [await Wire.open(address) for _ in range(members)]
    try:
        first = await asyncio.gather(*(member_round(w, "", partitions) for w in wires))
        ids = [m for m, _ in first]
        cpu_ns = server.cpu_ns() if server is not None else 0
        started = time.perf_counter()
        again = await asyncio.gather(
            *(member_round(w, m, partitions) for w, m in zip(wires, ids, strict=True))
        )
        wall = time.perf_counter() - started
        cpu = (server.cpu_ns() - cpu_ns) / 1e9 if server is not None else 0.0
        generation = max(g for _, g in again)
        return {"wall_ms": wall * 1000, "cpu_ms": cpu * 1000, "generation": generation, "member": ids[0]}
    finally:
        for w in wires:
            w.close()


def coordinator(server: peer.Server) -> tuple[str, int]:
    found = peer.decode(10, 3, peer.ask(server.address, peer.frame(10, 3, {"Key": GROUP, "KeyType": 0})))
    if found["ErrorCode"] != 0:
        raise RuntimeError(f"{server.name}: FindCoordinator error {found['ErrorCode']}")
    return found["Host"], found["Port"]


class Request:
    def __init__(self, label: str, api_key: int, version: int, data: dict) -> None:
        self.label, self.api_key, self.version, self.data = label, api_key, version, data

    def frame(self) -> bytes:
        return peer.frame(self.api_key, self.version, self.data)


def cases(member: str, generation: int) -> list[Request]:
    return [
        Request("Heartbeat v3", 12, 3,
                {"GroupId": GROUP, "GenerationId": generation, "MemberId": member, "GroupInstanceId": None}),
        Request("OffsetCommit v8", 8, 8, {
            "GroupId": GROUP, "GenerationIdOrMemberEpoch": generation, "MemberId": member, "GroupInstanceId": None,
            "Topics": [{"Name": TOPIC, "Partitions": [
                {"PartitionIndex": 0, "CommittedOffset": 42, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}],
        }),
    ]  # fmt: skip


def profile(requests: int, partitions: int, top: int = 30) -> None:
    """cProfile on an in-process simulator's event loop thread, per case (Heartbeat, then OffsetCommit)."""
    import cProfile
    import pstats

    from controller.embedded import ServerThread

    global GROUP
    GROUP = "bench-one"
    properties = {"group.initial.rebalance.delay.ms": 0}
    with ServerThread.start(seed=1, properties=properties) as thread:
        host, port = thread.bootstrap.rsplit(":", 1)
        sim = peer.Server(peer.SIM, [])
        sim.address = (host, int(port))
        body = {"Topics": [{"Name": TOPIC, "NumPartitions": peer.PARTITIONS, "ReplicationFactor": peer.REPLICATION,
                            "Assignments": [], "Configs": []}], "timeoutMs": 60000, "validateOnly": False}  # fmt: skip
        made = peer.decode(19, 7, peer.ask(sim.address, peer.frame(19, 7, body)))
        if made["Topics"][0]["ErrorCode"] != 0:
            raise RuntimeError(f"CreateTopics: {made['Topics'][0]}")
        address = coordinator(sim)
        joined = asyncio.run(rebalance(address, None, 1, partitions))
        for request in cases(joined["member"], joined["generation"]):
            peer.CONNECTIONS = 64 if request.api_key == 8 else 8
            asyncio.run(peer._load(address, request.frame(), min(requests, 2000)))  # warm
            profiler = cProfile.Profile()
            thread.call(profiler.enable)  # the server's event loop thread only
            began = time.perf_counter()
            asyncio.run(peer._load(address, request.frame(), requests))
            elapsed = time.perf_counter() - began
            thread.call(profiler.disable)
            print(f"\n{request.label}: {requests:,} requests in {elapsed:.2f} s under cProfile")
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(top)
            stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="profile the simulator's thread per case")
    parser.add_argument("--requests", type=int, default=20_000, help="requests per case with --profile")
    args = parser.parse_args()
    peer.load_codec()
    if args.profile:
        profile(args.requests, args.partitions)
        return
    mock = peer.mock_server()
    sim = peer.simulator()
    sim.cmd += ["--set", "group.initial.rebalance.delay.ms=2000"]
    failed = False
    try:
        mock.start()
        sim.start()
        peer.create_topics(mock, sim, [TOPIC])
        addresses = {server.name: coordinator(server) for server in (mock, sim)}
        print(
            f"Rebalance of {args.members} members over {args.partitions:,} partitions (all rejoin, leader assigns):"
        )
        print(f"  {'server':18} {'wall ms':>9} {'server CPU ms':>14}")
        rebalances: dict[str, dict] = {}
        for server in (mock, sim):
            try:
                r = asyncio.run(rebalance(addresses[server.name], server, args.members, args.partitions))
            except (
                RuntimeError
            ) as exc:  # the mock's classic group refuses followers' SyncGroup (INVALID_REQUEST)
                print(f"  {server.name:18} not measured: {exc}")
                continue
            rebalances[server.name] = r
            print(f"  {server.name:18} {r['wall_ms']:9.1f} {r['cpu_ms']:14.1f}")
        if peer.MOCK in rebalances and peer.SIM in rebalances:
            ratio = rebalances[peer.SIM]["cpu_ms"] / max(rebalances[peer.MOCK]["cpu_ms"], 1e-3)
            print(f"  simulator / mock CPU: {ratio:.2f}x {'ok' if ratio <= TARGET else 'MISSED'}")
            failed |= ratio > TARGET
        elif peer.SIM not in rebalances:
            failed = True
        # One member per server in a group of its own, for the per-request cases.
        global GROUP
        GROUP = "bench-one"
        addresses = {server.name: coordinator(server) for server in (mock, sim)}
        results = {
            s.name: asyncio.run(rebalance(addresses[s.name], s, 1, args.partitions)) for s in (mock, sim)
        }
        idle = peer.idle_cpu([mock, sim], 2.0)
        print(f"\nServer CPU per request (µs), idle subtracted; target <= {TARGET:.1f}x the mock:")
        per_case = {name: cases(r["member"], r["generation"]) for name, r in results.items()}
        for i, label in enumerate(c.label for c in per_case[peer.SIM]):
            # A commit waits for the high watermark on the simulator (a 100 ms replication tick): more
            # connections, and at least MIN_COMMITS, so that the mock's share is many clock ticks too.
            commits = label.startswith("OffsetCommit")
            peer.CONNECTIONS = 64 if commits else 8
            for server in (mock, sim):
                request = per_case[server.name][i]
                answer = peer.ask(addresses[server.name], request.frame())
                values = peer.decode(request.api_key, request.version, answer)
                code = values["Topics"][0]["Partitions"][0]["ErrorCode"] if commits else values["ErrorCode"]
                if code != 0:
                    raise RuntimeError(f"{server.name}: {label}: error {code}")
            warm = []
            for server in (mock, sim):
                server.address, bootstrap = addresses[server.name], server.address
                warm.append(peer.warm_up(server, per_case[server.name][i], 1.0))
                server.address = bootstrap
            total = peer.request_count(warm, args.seconds)
            if commits:
                total = max(total, MIN_COMMITS)
            row = {}
            for server in (mock, sim):
                server.address, bootstrap = addresses[server.name], server.address
                row[server.name] = peer.measure(server, per_case[server.name][i], total, idle[server.name])
                server.address = bootstrap
            ratio = row[peer.SIM].cpu_us / max(row[peer.MOCK].cpu_us, 1e-9)
            failed |= ratio > TARGET
            print(
                f"  {label:16} {total:>8,} requests  mock {row[peer.MOCK].cpu_us:8.1f}  "
                f"sim {row[peer.SIM].cpu_us:8.1f}  {ratio:5.2f}x {'ok' if ratio <= TARGET else 'MISSED'}"
            )
    finally:
        mock.stop()
        sim.stop()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
