"""Hostile array counts cost bounded memory: decoding and encoding long arrays keeps nothing per length
(the ``struct`` module caches the formats it is given, so a format per length would stay), a count
that the input cannot hold is refused before anything is allocated for it, and an array beyond its
cap is stepped over without building its elements."""

from __future__ import annotations

import gc
import struct
import sys
import time
import tracemalloc
from array import array
from collections.abc import Iterator

import pytest

from protocol import Capped, DecodeError
from protocol.wire import uvarint_bytes
from tests.protocol.test_caps import create_topics

MB = 1_000_000


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def int32s(count: int) -> bytes:
    """``count`` big-endian int32 values 0..99, repeating (small ints: decoding allocates no int)."""
    values = array("i", range(100)) * (count // 100 + 1)
    del values[count:]
    if sys.byteorder == "little":
        values.byteswap()
    return values.tobytes()


def elect_leaders(version: int, count: int, cut: bool = False) -> bytes:
    """An ElectLeadersRequest with one topic whose Partitions array holds ``count`` int32 values:
    classic counts and lengths in v0, compact ones (and tag sections) in v2. ``cut`` stops the input
    after the first half of the values."""
    values = int32s(count // 2 if cut else count)
    if version == 0:
        head = struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", count)
        tail = struct.pack(">i", 5)
    else:
        head = b"\x00" + uvarint_bytes(2) + b"\x02t" + uvarint_bytes(count + 1)
        tail = b"\x00" + struct.pack(">i", 5) + b"\x00"
    return head + values + (b"" if cut else tail)


def test_hand_built_requests_decode_as_expected(project_schemas):
    request = project_schemas.request(43)
    for version in (0, 2):
        value = request.decode(elect_leaders(version, 3), version)
        assert value["TopicPartitions"] == [{"Topic": "t", "Partitions": [0, 1, 2]}]
        assert value["TimeoutMs"] == 5
        assert request.encode(value, version) == elect_leaders(version, 3)


@pytest.mark.parametrize("version", [0, 2])
def test_long_int32_arrays_leave_no_formats_behind(project_schemas, traced, version):
    request = project_schemas.request(43)
    request.decode(elect_leaders(version, 1), version)  # compiled before the baseline
    bodies = [elect_leaders(version, 1_000_000 + 7 * k + version) for k in range(5)]  # five lengths
    start = time.perf_counter()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for body in bodies:
        value = request.decode(body, version)
        partitions = value["TopicPartitions"][0]["Partitions"]
        assert partitions[:3] == [0, 1, 2] and partitions[-1] == (len(partitions) - 1) % 100
        assert request.encode(value, version) == body
        del value, partitions
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    # One kept format for a million values would hold over 30 MB (a format code per value).
    assert held < 2 * MB, f"{held / MB:.1f} MB still held after decoding and encoding"
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize(
    ("version", "body", "field"),
    [
        # Four bytes of input announcing 2**31 - 1 topics.
        (0, struct.pack(">i", 2**31 - 1), "TopicPartitions"),
        # A topic whose Partitions announces 2**31 - 1 values, with none of them there.
        (0, struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", 2**31 - 1), "TopicPartitions[0].Partitions"),
        (2, b"\x00\x02\x02t" + uvarint_bytes(2**31), "TopicPartitions[0].Partitions"),
    ],
)
def test_counts_beyond_the_input_allocate_nothing(project_schemas, traced, version, body, field):
    request = project_schemas.request(43)
    request.decode(elect_leaders(version, 1), version)  # compiled before the baseline
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    with pytest.raises(DecodeError) as caught:
        request.decode(body, version)
    assert time.perf_counter() - start < 1
    assert tracemalloc.get_traced_memory()[1] - before < MB // 4
    assert caught.value.field == field
    assert "exceeds the" in caught.value.reason


@pytest.mark.parametrize("version", [0, 2])
def test_values_that_cannot_all_be_there_allocate_nothing(project_schemas, traced, version):
    """A count the bytes left could hold at one byte per value, but not at four: refused before a list
    or a format is made for it, naming the first missing value."""
    request = project_schemas.request(43)
    request.decode(elect_leaders(version, 1), version)
    count = 2_000_000
    body = elect_leaders(version, count, cut=True)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    with pytest.raises(DecodeError) as caught:
        request.decode(body, version)
    assert tracemalloc.get_traced_memory()[1] - before < MB // 4
    error = caught.value
    assert error.field == f"TopicPartitions[0].Partitions[{count // 2}]"
    assert error.reason == "truncated: 4 bytes needed, 0 left"


@pytest.mark.parametrize("version", [4, 7])
def test_an_array_beyond_its_cap_allocates_almost_nothing(project_schemas, version):
    """CreateTopics with 2,000,000 manual assignments (about 20 MB), capped at 500,000: stepped over,
    the whole decode allocates under 1 MB beyond the input (uncapped, the decoded assignments take
    hundreds of MB: see benchmarks/decode_size.py)."""
    request = project_schemas.request(19)
    caps = request.prepare_caps(version, {("Topics", "Assignments"): 500_000})
    body, _ = create_topics(version, 2_000_000)
    request.decode(create_topics(version, 3)[0], version, caps)  # compiled before the baseline
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = request.decode(body, version, caps)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    first, second = value["Topics"]
    assert first["Assignments"] == Capped(2_000_000, 500_000)
    assert second["Assignments"] == [
        {"PartitionIndex": 0, "BrokerIds": [0]},
        {"PartitionIndex": 1, "BrokerIds": [0]},
    ]
    assert peak < MB, f"{peak / MB:.2f} MB allocated while decoding"
