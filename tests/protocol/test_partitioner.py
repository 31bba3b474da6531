"""Kafka's built-in partitioner: murmur2 with Kafka's own test vectors, keys placed as kafka-python's
Java-compatible partitioner places them, and the sticky partition of records without a key."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from protocol.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

#: Kafka's ``UtilsTest.testMurmur2``: the signed 32-bit hashes Java computes.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS.items())
def test_murmur2_gives_kafkas_values(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_to_positive_masks_as_kafka_does_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=1000))
def test_keys_land_where_kafka_pythons_java_compatible_partitioner_puts_them(
    key: bytes, partitions: int
) -> None:
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(bytearray(key))
    expected = (kafka_python_murmur2(bytearray(key)) & 0x7FFFFFFF) % partitions  # DefaultPartitioner's rule
    assert partition_for_key(key, partitions) == expected


def test_records_without_a_key_stick_to_one_partition_until_a_batch_is_full() -> None:
    partitioner = StickyPartitioner(batch_size=100, seed=7)
    chosen = []
    for _ in range(30):
        chosen.append(partitioner.partition(None, 6, available=[0, 2, 4]))
        partitioner.produced(20, 6, available=[0, 2, 4])
    runs = [chosen[i : i + 5] for i in range(0, 30, 5)]  # 5 records of 20 bytes fill 100
    assert all(len(set(run)) == 1 for run in runs)
    assert set(chosen) <= {0, 2, 4}  # only partitions with a leader
    assert len(set(chosen)) > 1
    again = StickyPartitioner(batch_size=100, seed=7)
    replay = []
    for _ in range(30):
        replay.append(again.partition(None, 6, available=[0, 2, 4]))
        again.produced(20, 6, available=[0, 2, 4])
    assert replay == chosen  # the same seed, the same choices


def test_a_keyed_record_does_not_move_the_sticky_partition() -> None:
    partitioner = StickyPartitioner(batch_size=10, seed=1)
    sticky = partitioner.partition(None, 8)
    assert partitioner.partition(b"k", 8) == partition_for_key(b"k", 8)
    assert partitioner.partition(None, 8) == sticky
    without_leaders = StickyPartitioner(seed=random.Random(3).randrange(100))
    assert 0 <= without_leaders.partition(None, 3, available=[]) < 3
