"""The records path's cost per batch: a leader checking, stamping and appending a client's batch,
followers copying it, a consumer reading it, and idempotent producers' state, in microseconds per batch
and per MB of records.

The batch is what a producer of 1 KB records sends with the clients' default ``batch.size`` of 16 KB: 16
records of 1,000 bytes (key ``key-N``), built by kafka-python, uncompressed, and the same records gzip'd
(the leader reads every record, decompressing a compressed batch: ``controller.records.validator``, as
Kafka's ``LogValidator``). The
references, measured in the same run on the same bytes: a plain copy of the batch, and kafka-python's
own reading of it (``DefaultRecordBatch`` header and ``validate_crc``), the least a Python peer does per
batch. There is no target here; ``benchmarks/data_path.py`` (issue 18) compares a whole server with
librdkafka's mock cluster. Logs start over every 512 batches so that memory stays bounded.

    .venv/bin/python benchmarks/records.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # noqa: E402

from controller.records.batch import Compression, stamp_head  # noqa: E402
from controller.records.checks import DEFAULT_LIMITS, ClientBatch, check_client_batch  # noqa: E402
from controller.records.log import Log, join_batches  # noqa: E402
from controller.records.producers import ProducerStates  # noqa: E402
from controller.records.validator import validate_records  # noqa: E402

NOW = 1_700_000_000_000
RECORDS, RECORD_BYTES = 16, 1000
MB = 1 << 20
KEEP = 512  # batches a log holds before it starts over


def build(codec: Compression, producer: tuple[int, int, int] = (-1, -1, -1)) -> bytes:
    builder = DefaultRecordBatchBuilder(2, int(codec), False, *producer, batch_size=1 << 20)
    for i in range(RECORDS):
        value = bytes((i * 7 + j) % 251 for j in range(RECORD_BYTES))
        builder.append(i, NOW, b"key-%d" % i, value, [])
    return bytes(builder.build())


def checked(data: bytes) -> ClientBatch:
    batch = check_client_batch(data, 9, DEFAULT_LIMITS, NOW, "bench", 0)
    assert isinstance(batch, ClientBatch), batch
    return batch


def per_call_us(work: Callable[[], object], rounds: int, number: int = 2000) -> float:
    """The median over rounds of the mean time of one call, in microseconds."""
    times = sorted(timeit.repeat(work, number=number, repeat=rounds))
    return times[len(times) // 2] / number * 1e6


class LeaderPath:
    """Check, read the records, producer state, stamp and append, as the Produce handler runs them per
    partition, over a cycle of batches (an idempotent producer's batches differ in their sequences; at the
    end of the cycle the producer starts over on a fresh partition)."""

    def __init__(self, batches: list[bytes]) -> None:
        self.batches = batches
        self.index = 0
        self.log = Log()
        self.states = ProducerStates()

    def __call__(self) -> None:
        if self.index == len(self.batches):
            self.index = 0
            self.log, self.states = Log(), ProducerStates()
        batch = check_client_batch(self.batches[self.index], 9, DEFAULT_LIMITS, NOW, "bench", 0)
        self.index += 1
        assert isinstance(batch, ClientBatch)
        batch = validate_records(batch, DEFAULT_LIMITS, NOW, "bench-0")
        assert isinstance(batch, ClientBatch)
        assert self.states.check(batch.header, self.log.log_end_offset, "bench", 0) is None
        stored = self.log.append_as_leader(batch, 1)
        self.states.record(batch.header, stored.base_offset)


class FollowerCopy:
    def __init__(self, leader: Log) -> None:
        self.leader = list(leader.batches())
        self.log = Log()
        self.index = 0

    def __call__(self) -> None:
        if self.index == len(self.leader):
            self.log = Log()
            self.index = 0
        self.log.append_copy(self.leader[self.index])
        self.index += 1


def consumer_read(log: Log) -> Callable[[], bytes]:
    """One Fetch's worth (1 MB budget) from the start, up to the high watermark, joined for the answer."""
    return lambda: join_batches(log.read(log.log_start_offset, log.log_end_offset, MB))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    print(
        f"Python {sys.version.split()[0]}; median of {rounds} rounds; microseconds per batch (lower is better)\n"
    )
    print("| batch | operation | µs per batch | µs per MB of batches |")
    print("|---|---|---:|---:|")
    for codec in (Compression.NONE, Compression.GZIP):
        data = build(codec)
        idempotent = [build(codec, producer=(1, 0, RECORDS * i)) for i in range(KEEP)]
        batch = checked(data)
        full = Log()
        for _ in range(KEEP):
            full.append_as_leader(batch, 1)
        per_read = len(full.read(0, full.log_end_offset, MB))
        rows = [
            ("reference: copy the batch", per_call_us(lambda d=data: bytes(bytearray(d)), rounds)),
            (
                "reference: kafka-python reads header and CRC",
                per_call_us(lambda d=data: DefaultRecordBatch(d).validate_crc(), rounds),
            ),
            ("check a client's batch", per_call_us(lambda d=data: checked(d), rounds)),
            (
                "read every record (the validator)",
                per_call_us(lambda b=batch: validate_records(b, DEFAULT_LIMITS, NOW, "bench-0"), rounds),
            ),
            ("stamp its head (CreateTime)", per_call_us(lambda b=batch: stamp_head(b.data, 100, 1), rounds)),
            (
                "stamp its head (LogAppendTime, new CRC)",
                per_call_us(lambda b=batch: stamp_head(b.data, 100, 1, NOW), rounds),
            ),
            ("leader: check + read + stamp + append", per_call_us(LeaderPath([data] * KEEP), rounds)),
            ("leader, idempotent: + producer state", per_call_us(LeaderPath(idempotent), rounds)),
            ("follower copies it", per_call_us(FollowerCopy(full), rounds)),
            (
                f"consumer reads it ({per_read} batches a fetch)",
                per_call_us(consumer_read(full), rounds, number=200) / per_read,
            ),
        ]
        name = f"{RECORDS} x {RECORD_BYTES} B, {codec.name.lower()}, {len(data):,} B"
        for operation, micros in rows:
            print(f"| {name} | {operation} | {micros:,.2f} | {micros * MB / len(data):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
