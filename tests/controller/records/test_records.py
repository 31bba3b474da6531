"""Records read back from batches kafka-python built, with every codec: the same offsets, timestamps,
keys, values and headers, before and after a leader stamps the batch."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.records.batch import Compression, stamp
from controller.records.records import (
    Record,
    UnavailableCodec,
    available_codecs,
    decompress,
    iter_records,
    read_batch_records,
)
from tests.controller.records.batches import NOW, build, kafka_python_batches, kafka_python_records, rewrite

optional_bytes = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=8), optional_bytes), max_size=3)
entries = st.lists(
    st.tuples(st.integers(NOW - 10**9, NOW + 10**9), optional_bytes, optional_bytes, headers),
    min_size=1,
    max_size=30,
)


def test_every_codec_is_readable_here():
    assert available_codecs() == frozenset(Compression)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=entries,
    codec=st.sampled_from(list(Compression)),
    base=st.integers(0, 2**40),
    epoch=st.integers(0, 99),
)
def test_records_read_back_as_kafka_python_reads_them(records, codec, base, epoch):
    # a compressible header, so that kafka-python does compress (it sends uncompressed what does not shrink)
    records = [(t, k, v, [*h, ("pad", b"z" * 200)]) for t, k, v, h in records]
    data = build(records, compression=codec)
    ours = read_batch_records(data)
    assert ours == [
        Record(i, t, k, v, tuple((name, value) for name, value in h))
        for i, (t, k, v, h) in enumerate(records)
    ]
    stored = stamp(data, base, epoch)
    theirs = kafka_python_records(kafka_python_batches(stored)[0])
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in read_batch_records(stored)] == [
        (o, t, k, v, h) for o, t, _, k, v, h in theirs
    ]


def test_log_append_time_records_carry_the_batch_time():
    stored = stamp(
        build([(NOW - 9, b"a", b"x", []), (NOW - 1, b"b", b"y", [])]), 10, 1, log_append_time_ms=NOW
    )
    assert [(r.offset, r.timestamp) for r in read_batch_records(stored)] == [(10, NOW), (11, NOW)]


def test_records_of_a_blob_of_batches():
    blob = stamp(build(2), 0, 1) + stamp(build(3, compression=Compression.GZIP), 2, 1)
    assert [r.offset for r in iter_records(blob)] == [0, 1, 2, 3, 4]


def test_snappy_without_xerial_framing():
    import snappy

    assert decompress(Compression.SNAPPY, snappy.compress(b"raw block")) == b"raw block"


def test_an_unknown_codec_id_cannot_be_read():
    with pytest.raises(UnavailableCodec):
        read_batch_records(rewrite(build(1), attributes=5))


def test_a_record_that_overruns_its_batch():
    data = bytearray(build([(NOW, b"key", b"value", [])]))
    data[61] = 0x7E  # the record's length: 63 bytes, more than the batch holds
    with pytest.raises(ValueError):
        read_batch_records(bytes(data))
