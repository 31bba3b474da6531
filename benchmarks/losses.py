"""The seeded loss checker at scale: no acknowledged record lost without a report, seed after seed.

Part 1, the project's client: ``--seeds`` seeds (5,000 by default) of :func:`controller.losscheck.run_seed`
(5 brokers, a topic of 6 partitions x 3 replicas, min.insync.replicas 2, 3 producers, 80 steps of
crashes, hangs, isolations, controlled shutdowns, restarts, followers that stop copying, preferred and
unclean elections, reassignments and Produce faults, on a virtual clock; then every broker back and
every partition read from its beginning), the seeds taking the 16 configurations in turn, in
``--workers`` processes; then ``--transactional-seeds`` seeds (1,000 by default) with transactional
producers (each transaction committed or aborted as the seed draws; every partition read again as a
read_committed consumer: a committed transaction's records read or reported lost, an aborted one's
never returned), both policies, unclean elections off and on.

Part 2, real producers: the same schedules with confluent-kafka (librdkafka) and kafka-python producers
(``--client-seeds`` seeds each, one configuration each in turn), against a server in a background
thread whose virtual clock this process moves 50 ms at a time, 10 ms of wall time apart, while the
clients run; then every partition read back with the project's client. A producer without idempotence
has ``retries=0`` (each record is written at most once, so that a record read back is the write that
was acknowledged); with idempotence, the client's own retries.

Part 3, share groups: ``--share-seeds`` seeds (400 by default) of
:func:`controller.losscheck.share.run_share_seed`: the same schedules with acks=all idempotent producers
and two share consumers of the project's client that accept, release, reject or let locks expire through
the failures, then drain the topic (no record accepted delivered again without a reported lost
acknowledgement; every record of the final log accepted, archived with its cause, or under a reported
loss), in ``--workers`` processes; its table counts deliveries, acceptances and archived records.

Prints one table per part, a row per configuration: seeds, seeds that broke a rule, records acknowledged,
acknowledged records lost (each reported by ``lost_records()``, acks=all ones by unclean elections only),
and the median wall time of a seed. Exits 1 when any seed broke a rule (each is named, to replay alone
with ``run_seed(seed)``).

    .venv/bin/python benchmarks/losses.py [--seeds 5000] [--workers 2] [--client-seeds 16]
        [--transactional-seeds 1000] [--share-seeds 400]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.cluster import NO_LEADER, Process  # noqa: E402
from controller.embedded import ServerThread  # noqa: E402
from controller.losscheck import (  # noqa: E402
    CONFIGURATIONS,
    TRANSACTIONAL_CONFIGURATIONS,
    Acknowledged,
    Configuration,
    HighWatermarkWatch,
    Loss,
    ReadRecord,
    RunRecord,
    Setup,
    check_run,
    make_schedule,
    run_seed,
    summarize,
)
from controller.losscheck.checks import Unanswered  # noqa: E402
from controller.losscheck.runner import server_config  # noqa: E402
from controller.losscheck.share import SHARE_CONFIGURATIONS, run_share_seed  # noqa: E402
from controller.records.batch import iter_batches  # noqa: E402
from controller.records.records import read_batch_records  # noqa: E402
from protocol.client import BlockingClient  # noqa: E402
from protocol.codes import ApiKey, ErrorCode  # noqa: E402

SETUP = Setup()
#: Virtual milliseconds per clock move, and wall seconds between moves, while real clients run.
TICK_MS = 50
TICK_WALL = 0.01


# ------------------------------------------------------------------------------------- part 1


def _configuration(seed: int, transactional: bool) -> Configuration:
    table = TRANSACTIONAL_CONFIGURATIONS if transactional else CONFIGURATIONS
    return table[seed % len(table)]


def _project_chunk(
    seeds: list[int], transactional: bool = False
) -> list[tuple[int, str, bool, int, int, int, float, str]]:
    """Runs seeds in this (worker) process: per seed its configuration, ok, counts and wall time."""
    logging.disable(logging.WARNING)

    async def run_all() -> list[tuple[int, str, bool, int, int, int, float, str]]:
        rows = []
        for seed in seeds:
            started = time.perf_counter()
            try:
                result = await run_seed(seed, _configuration(seed, transactional))
            except Exception as exc:  # noqa: BLE001 - named in the report, the other seeds go on
                label = _configuration(seed, transactional).label
                rows.append(
                    (seed, label, False, 0, 0, 0, time.perf_counter() - started, f"seed {seed}: {exc!r}")
                )
                continue
            lost_all = sum(1 for a in result.run.missing() if a.acks == -1)
            rows.append(
                (
                    seed,
                    result.configuration.label,
                    result.ok,
                    len(result.run.acknowledged),
                    lost_all,
                    result.lost - lost_all,
                    time.perf_counter() - started,
                    "" if result.ok else result.describe(),
                )
            )
            if len(rows) % 100 == 0:
                print(f"  {len(rows)} of {len(seeds)} seeds of this worker run", file=sys.stderr, flush=True)
        return rows

    return asyncio.run(run_all())


def project_client(
    seeds: int, first: int, workers: int, transactional: bool = False
) -> list[tuple[int, str, bool, int, int, int, float, str]]:
    chunks = [(list(range(first + i, first + seeds, workers)), transactional) for i in range(workers)]
    if workers == 1:
        return _project_chunk(*chunks[0])
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return [row for rows in pool.starmap(_project_chunk, chunks) for row in rows]


# ------------------------------------------------------------------------------------- part 2


class _RealProducer:
    """One real client's producer, recording what it is told (callbacks run on its own thread)."""

    def __init__(
        self, library: str, bootstrap: str, configuration: Configuration, run: RunRecord, topic: str
    ):
        self.library = library
        self.run = run
        self.topic = topic
        self.acks = configuration.acks
        self.lock = threading.Lock()
        self.pending = 0
        idempotent = configuration.idempotent
        if library == "confluent-kafka":
            from confluent_kafka import Producer

            settings: dict[str, Any] = {
                "bootstrap.servers": bootstrap,
                "acks": "all" if self.acks == -1 else str(self.acks),
                "enable.idempotence": idempotent,
                "linger.ms": 0,
                "request.timeout.ms": 3000,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 500,
                "reconnect.backoff.max.ms": 500,
                "log_level": 0,
            }
            if not idempotent:
                settings["retries"] = 0
            self.client: Any = Producer(settings)
        else:
            from kafka import KafkaProducer

            self.client = KafkaProducer(
                bootstrap_servers=bootstrap,
                acks="all" if self.acks == -1 else self.acks,
                enable_idempotence=idempotent,
                retries=0 if not idempotent else 2**31 - 1,
                linger_ms=0,
                request_timeout_ms=3000,
                delivery_timeout_ms=120_000,
                metadata_max_age_ms=500,
                reconnect_backoff_max_ms=500,
                max_block_ms=5000,
            )

    def _done(self, partition: int, value: bytes, offset: int | None) -> None:
        with self.lock:
            self.pending -= 1
            if offset is not None and offset >= 0 and self.acks != 0:
                self.run.acknowledged.append(Acknowledged(self.topic, partition, offset, value, self.acks))
            else:
                self.run.unanswered.append(Unanswered(self.topic, partition, value))

    def produce(self, partition: int, value: bytes) -> None:
        with self.lock:
            self.pending += 1
        if self.library == "confluent-kafka":

            def delivered(err: Any, msg: Any) -> None:
                self._done(partition, value, msg.offset() if err is None else None)

            try:
                self.client.produce(self.topic, value=value, partition=partition, on_delivery=delivered)
            except BufferError:
                self._done(partition, value, None)
            self.client.poll(0)
        else:
            try:
                future = self.client.send(self.topic, value=value, partition=partition)
            except Exception:  # noqa: BLE001 - the client refused it (its buffer, its metadata): not written
                self._done(partition, value, None)
                return
            future.add_callback(lambda metadata: self._done(partition, value, metadata.offset))
            future.add_errback(lambda exc: self._done(partition, value, None))

    def poll(self) -> None:
        if self.library == "confluent-kafka":
            self.client.poll(0)

    def close(self) -> None:
        if self.library == "confluent-kafka":
            self.client.flush(0)
        else:
            self.client.close(timeout=0)


def _advance(server: ServerThread, ms: int, producers: list[_RealProducer]) -> None:
    """Moves the virtual clock ``ms`` in steps of TICK_MS, the clients running in between."""
    for _ in range(max(1, ms // TICK_MS)):
        server.advance(TICK_MS)
        for producer in producers:
            producer.poll()
        time.sleep(TICK_WALL)


def _read_back(server: ServerThread, run: RunRecord, topic: str) -> None:
    for index in range(SETUP.partitions):
        state = server.partition_state(topic, index)
        if state.leader == NO_LEADER:
            run.unreadable.append((topic, index))
            continue
        with BlockingClient.connect(server.brokers[state.leader], request_timeout=30) as client:
            offset = 0
            while offset < state.high_watermark:
                answer = client.send(
                    "FetchRequest",
                    {
                        "ReplicaId": -1,
                        "MaxWaitMs": 0,
                        "MinBytes": 1,
                        "MaxBytes": 1 << 24,
                        "IsolationLevel": 0,
                        "Topics": [
                            {
                                "Topic": topic,
                                "Partitions": [
                                    {
                                        "Partition": index,
                                        "FetchOffset": offset,
                                        "PartitionMaxBytes": 1 << 24,
                                        "CurrentLeaderEpoch": -1,
                                    }
                                ],
                            }
                        ],
                    },
                    version=11,
                )
                [partition] = answer["Responses"][0]["Partitions"]
                if partition["ErrorCode"] != ErrorCode.NONE or not partition["Records"]:
                    break
                for header, batch in iter_batches(partition["Records"]):
                    for record in read_batch_records(batch, header):
                        if record.offset >= offset:
                            sequence = header.base_sequence + (record.offset - header.base_offset)
                            run.read.append(
                                ReadRecord(
                                    topic,
                                    index,
                                    record.offset,
                                    record.value,
                                    header.partition_leader_epoch,
                                    header.producer_id,
                                    header.producer_epoch,
                                    sequence if header.producer_id >= 0 else -1,
                                )
                            )
                    offset = header.base_offset + header.last_offset_delta + 1


def real_client_seed(
    library: str, seed: int, configuration: Configuration
) -> tuple[bool, int, int, int, str]:
    """One schedule with real producers: ok, acknowledged, acks=all lost, acks=1 lost, description."""
    topic = SETUP.topic
    run = RunRecord(configuration.policy)
    steps = make_schedule(seed, SETUP.brokers, SETUP.partitions, SETUP.producers, SETUP.steps)
    with ServerThread(server_config(seed, configuration, SETUP)).run_in_background() as server:
        import random

        rng = random.Random(seed)
        assignment = [
            rng.sample(range(SETUP.brokers), SETUP.replication_factor) for _ in range(SETUP.partitions)
        ]
        configs = {
            "unclean.leader.election.enable": "true" if configuration.unclean else "false",
            "min.insync.replicas": str(SETUP.min_insync_replicas),
        }
        cluster = server.server.controller.cluster
        server.call(
            lambda: cluster.add_topic(topic, assignment, configs, now=server.server.controller.clock.now())
        )
        watch: HighWatermarkWatch = server.call(lambda: HighWatermarkWatch(server.server, topic, run))
        producers = [
            _RealProducer(library, server.bootstrap, configuration, run, topic)
            for _ in range(SETUP.producers)
        ]
        count = 0
        controls: dict[str, Callable[..., Any]] = {
            "start": server.start_broker,
            "stop copying": lambda b: server.set_replication(b, records_per_s=0),
            "copy again": lambda b: server.set_replication(b, records_per_s=None),
            "preferred election": lambda p: server.elect(topic, p, "preferred"),
            "unclean election": lambda p: server.elect(topic, p, "unclean"),
            "reassign": lambda p, replicas: server.reassign({(topic, p): list(replicas)}),
            "disconnect after produce": lambda b: server.faults.disconnect_on(
                ApiKey.PRODUCE, after=True, broker=b
            ).once(),
            "delay produce": lambda b, ms: server.faults.delay_on(ApiKey.PRODUCE, ms, broker=b).once(),
        }
        try:
            for step in steps:
                kind, args = step.kind, step.args
                if kind == "produce":
                    producer, partition, records = args
                    for _ in range(records):
                        count += 1
                        producers[producer].produce(partition, f"{library}-{seed}-{count}".encode())
                elif kind == "advance":
                    _advance(server, args[0], producers)
                elif kind in ("crash", "hang", "isolate", "controlled"):
                    if server.broker_state(args[0]) != "offline" and server.call(
                        lambda b=args[0]: (
                            cluster.broker_state(b).process not in (Process.CRASHED, Process.STOPPED)
                        )
                    ):
                        server.stop_broker(args[0], kind)
                else:
                    controls[kind](*args)
                for producer in producers:
                    producer.poll()
                time.sleep(TICK_WALL)
                server.call(watch.after_step)
            server.faults.clear()
            for broker in range(SETUP.brokers):
                server.set_replication(broker, records_per_s=None)
            for _ in range(10):
                # Its process, not its state: a crashed broker reads "running" until its session expires.
                stopped = server.call(
                    lambda: [
                        b.id
                        for b in (cluster.broker_state(i) for i in range(SETUP.brokers))
                        if b.process is not Process.UP or b.in_controlled_shutdown or b.fenced
                    ]
                )
                if not stopped:
                    break
                for broker in stopped:
                    server.start_broker(broker)
                _advance(server, 2000, producers)
            deadline = time.monotonic() + 120
            while any(p.pending for p in producers) and time.monotonic() < deadline:
                _advance(server, 500, producers)
            _advance(server, 2000, producers)
            server.call(watch.after_step)
        finally:
            for producer in producers:
                producer.close()
        _read_back(server, run, topic)
        run.losses = [Loss.of(lost) for lost in server.lost_records()]
    violations = check_run(run)
    lost_all = sum(1 for a in run.missing() if a.acks == -1)
    lost = len(run.missing())
    description = f"{library} seed {seed} ({configuration.label}): " + (
        "ok" if not violations else f"{len(violations)} violation(s)\n" + summarize(violations)
    )
    return not violations, len(run.acknowledged), lost_all, lost - lost_all, description


# ------------------------------------------------------------------------------------- part 3

#: A share seed's row: configuration, ok, records, deliveries, acceptances, archived records,
#: acceptances reported lost, wall time, description.
ShareRow = tuple[str, bool, int, int, int, int, int, float, str]


def _share_chunk(seeds: list[int]) -> list[ShareRow]:
    """Share seeds in this (worker) process, a :data:`ShareRow` each."""
    logging.disable(logging.WARNING)

    async def run_all() -> list[ShareRow]:
        rows = []
        for seed in seeds:
            label = SHARE_CONFIGURATIONS[seed % len(SHARE_CONFIGURATIONS)].label
            started = time.perf_counter()
            try:
                result = await run_share_seed(seed)
            except Exception as exc:  # noqa: BLE001 - named in the report, the other seeds go on
                seconds = time.perf_counter() - started
                rows.append((label, False, 0, 0, 0, 0, 0, seconds, f"share seed {seed}: {exc!r}"))
                continue
            share = result.run.extras["share"]
            archived = sum(a.last_offset - a.first_offset + 1 for a in share.archived)
            rows.append(
                (
                    label,
                    result.ok,
                    len(result.run.read),
                    len(share.deliveries),
                    len(share.accepted),
                    archived,
                    sum(len(offsets) for _, offsets in share.lost_acknowledgements),
                    time.perf_counter() - started,
                    "" if result.ok else "share " + result.describe(),
                )
            )
        return rows

    return asyncio.run(run_all())


def share_groups(seeds: int, first: int, workers: int) -> list[ShareRow]:
    chunks = [list(range(first + i, first + seeds, workers)) for i in range(workers)]
    if workers == 1:
        return _share_chunk(chunks[0])
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return [row for rows in pool.map(_share_chunk, chunks) for row in rows]


def _share_table(title: str, rows: list[ShareRow]) -> None:
    print(f"\n{title}")
    print(
        f"{'configuration':<42} {'seeds':>6} {'failed':>6} {'records':>8} {'delivered':>9} {'accepted':>8} "
        f"{'archived':>8} {'lost acks':>9} {'s/seed':>7}"
    )
    for configuration in SHARE_CONFIGURATIONS:
        entries = [row for row in rows if row[0] == configuration.label]
        if entries:
            print(
                f"{configuration.label:<42} {len(entries):>6} {sum(not e[1] for e in entries):>6} "
                f"{sum(e[2] for e in entries):>8} {sum(e[3] for e in entries):>9} {sum(e[4] for e in entries):>8} "
                f"{sum(e[5] for e in entries):>8} {sum(e[6] for e in entries):>9} "
                f"{statistics.median(e[7] for e in entries):>7.2f}"
            )


# ------------------------------------------------------------------------------------- tables


def _table(title: str, rows: list[tuple[str, bool, int, int, int, float]]) -> None:
    by: dict[str, list[tuple[bool, int, int, int, float]]] = defaultdict(list)
    for label, ok, acknowledged, lost_all, lost_one, seconds in rows:
        by[label].append((ok, acknowledged, lost_all, lost_one, seconds))
    print(f"\n{title}")
    print(
        f"{'configuration':<42} {'seeds':>6} {'failed':>6} {'acknowledged':>12} {'lost acks=all':>13} "
        f"{'lost acks=1':>11} {'s/seed':>7}"
    )
    for configuration in (*CONFIGURATIONS, *TRANSACTIONAL_CONFIGURATIONS):
        entries = by.get(configuration.label)
        if not entries:
            continue
        print(
            f"{configuration.label:<42} {len(entries):>6} {sum(not e[0] for e in entries):>6} "
            f"{sum(e[1] for e in entries):>12} {sum(e[2] for e in entries):>13} {sum(e[3] for e in entries):>11} "
            f"{statistics.median(e[4] for e in entries):>7.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--client-seeds", type=int, default=16)
    parser.add_argument("--transactional-seeds", type=int, default=1000)
    parser.add_argument("--share-seeds", type=int, default=400)
    args = parser.parse_args()
    failures: list[str] = []
    for transactional, seeds, what in (
        (False, args.seeds, "The project's client"),
        (True, args.transactional_seeds, "The project's client, transactional producers"),
    ):
        started = time.perf_counter()
        rows = project_client(seeds, args.first, args.workers, transactional)
        failures += [row[7] for row in rows if not row[2]]
        _table(
            f"{what}: {seeds} seeds from {args.first}, {time.perf_counter() - started:.0f} s "
            f"in {args.workers} process(es)",
            [
                (label, ok, acked, lost_all, lost_one, seconds)
                for _, label, ok, acked, lost_all, lost_one, seconds, _ in rows
            ],
        )
    logging.disable(logging.WARNING)
    for library in ("confluent-kafka", "kafka-python"):
        client_rows = []
        started = time.perf_counter()
        for seed in range(args.first, args.first + args.client_seeds):
            configuration = CONFIGURATIONS[seed % len(CONFIGURATIONS)]
            t = time.perf_counter()
            try:
                ok, acknowledged, lost_all, lost_one, description = real_client_seed(
                    library, seed, configuration
                )
            except Exception as exc:  # noqa: BLE001 - named in the report, the other seeds go on
                ok, acknowledged, lost_all, lost_one = False, 0, 0, 0
                description = f"{library} seed {seed}: {exc!r}"
            client_rows.append(
                (configuration.label, ok, acknowledged, lost_all, lost_one, time.perf_counter() - t)
            )
            if not ok:
                failures.append(description)
        _table(
            f"{library} producers: {args.client_seeds} seeds, {time.perf_counter() - started:.0f} s",
            client_rows,
        )
    if args.share_seeds:
        started = time.perf_counter()
        share_rows = share_groups(args.share_seeds, args.first, args.workers)
        failures += [row[8] for row in share_rows if not row[1]]
        _share_table(
            f"Share groups (the project's client): {args.share_seeds} seeds from {args.first}, "
            f"{time.perf_counter() - started:.0f} s in {args.workers} process(es)",
            share_rows,
        )
    if failures:
        print(f"\n{len(failures)} seed(s) broke a rule:")
        for description in failures:
            print(description)
        return 1
    print("\nno seed broke a rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
