"""One replica's log: appends as leader and follower, reads as Kafka's, truncation, log start moves,
retention, epochs and timestamps; what a consumer reads back is checked with kafka-python's reader."""

from __future__ import annotations

import gc
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.records.batch import Compression, read_header, synthetic_size
from controller.records.checks import DEFAULT_LIMITS, ClientBatch, check_client_batch
from controller.records.epochs import EpochEntry
from controller.records.log import Log, StoredBatch, TimestampAndOffset, divergence_offset, join_batches
from tests.controller.records.batches import NOW, build, kafka_python_batches, kafka_python_records


def client(count: int = 3, **kwargs) -> ClientBatch:
    batch = check_client_batch(build(count, **kwargs), 9, DEFAULT_LIMITS, NOW, "t", 0)
    assert isinstance(batch, ClientBatch)
    return batch


def timed(*timestamps: int, compression: Compression = Compression.NONE) -> ClientBatch:
    data = build([(t, b"k", b"v" * 40, []) for t in timestamps], compression=compression)
    batch = check_client_batch(data, 9, DEFAULT_LIMITS, NOW, "t", 0)
    assert isinstance(batch, ClientBatch)
    return batch


def leader_log(*counts: int, epoch: int = 0) -> Log:
    log = Log()
    for count in counts:
        log.append_as_leader(client(count), epoch)
    return log


def offsets(batches: list[StoredBatch]) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in batches]


def test_leader_appends_take_the_next_offsets_and_the_epoch():
    log = Log()
    first = log.append_as_leader(client(3), 4)
    second = log.append_as_leader(client(2), 5)
    assert offsets([first, second]) == [(0, 2), (3, 4)]
    assert (log.log_start_offset, log.log_end_offset, len(log)) == (0, 5, 2)
    assert log.size_bytes == first.size + second.size == len(first.render()) + len(second.render())
    assert log.epochs.entries == (EpochEntry(4, 0), EpochEntry(5, 3))
    (theirs,) = kafka_python_batches(second.render())
    assert (theirs.base_offset, theirs.leader_epoch) == (3, 5) and theirs.validate_crc()


def test_followers_share_the_leaders_batches():
    leader = leader_log(3, 2, 4)
    followers = [Log() for _ in range(3)]
    for follower in followers:
        for entry in leader.read(follower.log_end_offset, leader.log_end_offset, 1 << 30):
            follower.append_copy(entry)
    for follower in followers:
        assert follower.log_end_offset == 9 and follower.epochs.entries == leader.epochs.entries
        assert all(a is b for a, b in zip(follower.batches(), leader.batches(), strict=True))
        assert all(a.source is b.source for a, b in zip(follower.batches(), leader.batches(), strict=True))
    with pytest.raises(ValueError):
        followers[0].append_copy(leader.batch_at(0))


def test_read_returns_whole_batches_below_the_bound():
    log = leader_log(3, 3, 3, 3)  # [0,2] [3,5] [6,8] [9,11]
    assert offsets(log.read(4, 12, 1 << 30)) == [(3, 5), (6, 8), (9, 11)]  # the first starts before 4
    assert offsets(log.read(4, 9, 1 << 30)) == [(3, 5), (6, 8)]  # the high watermark at a boundary
    assert offsets(log.read(4, 8, 1 << 30)) == [(3, 5)]  # a batch crossing it waits
    assert log.read(8, 8, 1 << 30) == [] and log.read(12, 12, 1 << 30) == []
    records = kafka_python_records(kafka_python_batches(join_batches(log.read(0, 12, 1 << 30)))[1])
    assert [r[0] for r in records] == [3, 4, 5]


def test_read_within_a_byte_budget_but_at_least_one_batch():
    log = leader_log(3, 3, 3)
    size = log.batch_at(0).size
    assert offsets(log.read(0, 9, 2 * size)) == [(0, 2), (3, 5)]
    assert offsets(log.read(0, 9, 2 * size - 1)) == [(0, 2)]
    assert offsets(log.read(0, 9, 1)) == [(0, 2)]  # minOneMessage
    assert log.read(0, 9, 1, min_one=False) == []
    assert offsets(log.read(0, 9, 0)) == [(0, 2)]


def test_truncation_removes_whole_batches_and_their_epochs():
    log = Log()
    log.append_as_leader(client(3), 1)
    log.append_as_leader(client(3), 2)
    log.append_as_leader(client(3), 3)
    removed = log.truncate_to(4)  # inside [3, 5]: the batch goes whole
    assert offsets(removed) == [(3, 5), (6, 8)]
    assert (log.log_end_offset, len(log), log.size_bytes) == (3, 1, log.batch_at(0).size)
    assert log.epochs.entries == (EpochEntry(1, 0),)
    assert log.truncate_to(3) == [] and log.log_end_offset == 3
    assert offsets(log.truncate_to(0)) == [(0, 2)] and (log.log_end_offset, log.size_bytes) == (0, 0)


def test_truncating_past_the_end_drops_an_epoch_with_no_batch():
    log = leader_log(3, epoch=1)
    log.become_leader(2)  # a leader that appended nothing in epoch 2
    assert log.epochs.entries == (EpochEntry(1, 0), EpochEntry(2, 3))
    assert log.truncate_to(10) == []
    assert log.epochs.entries == (EpochEntry(1, 0),) and log.log_end_offset == 3


def test_delete_records_moves_the_log_start_inside_a_batch():
    log = Log()
    for epoch in (1, 1, 2):
        log.append_as_leader(client(3), epoch)
    assert offsets(log.move_start(4)) == [(0, 2)]
    assert (log.log_start_offset, len(log)) == (4, 2)
    assert log.earliest() == TimestampAndOffset(-1, 4, 1)
    assert log.epochs.entries == (EpochEntry(1, 4), EpochEntry(2, 6))
    assert offsets(log.read(4, 9, 1 << 30)) == [(3, 5), (6, 8)]  # the batch holding 4 is served whole
    assert log.move_start(2) == []  # the start never goes back
    assert offsets(log.move_start(9)) == [(3, 5), (6, 8)] and len(log) == 0 and log.size_bytes == 0
    log.append_as_leader(client(1), 3)
    assert offsets(log.read(9, 10, 1 << 30)) == [(9, 9)]


def test_retention_by_bytes_keeps_at_least_the_limit_below_the_high_watermark():
    log = leader_log(2, 2, 2, 2, 2)
    size = log.batch_at(0).size
    assert offsets(log.retain_bytes(2 * size, upper_bound=10)) == [(0, 1), (2, 3), (4, 5)]
    assert (log.log_start_offset, log.size_bytes, len(log)) == (6, 2 * size, 2)
    assert log.retain_bytes(2 * size - 1, upper_bound=10) == []  # dropping one more leaves too little
    assert offsets(log.retain_bytes(size, upper_bound=8)) == [(6, 7)]
    assert log.retain_bytes(0, upper_bound=8) == []  # nothing at or above the high watermark goes
    assert log.retain_bytes(-1, upper_bound=10) == []


def test_a_removed_batch_is_no_longer_held_by_the_log():
    """Retention frees a removed batch's bytes at once: the log keeps no reference to it (its list is
    compacted lazily, its slot emptied now), so a log bounded by retention.bytes holds about its bound."""
    log = leader_log(*([2] * 10))
    removed = log.retain_bytes(2 * log.batch_at(0).size, upper_bound=20)
    assert len(removed) == 8
    holders = [
        r for entry in removed for r in gc.get_referrers(entry) if isinstance(r, list) and r is not removed
    ]
    assert holders == []
    assert offsets(list(log.batches())) == [(16, 17), (18, 19)] and log.batch_at(0) is None


def test_many_drops_from_the_start_stay_consistent():
    log = leader_log(*([1] * 300))
    for start in range(0, 300, 7):
        log.move_start(start)
        assert log.batch_at(start).base_offset == start and len(log) == 300 - start
    assert log.size_bytes == sum(b.size for b in log.batches())


def test_end_offset_for_epoch_after_leader_changes():
    log = Log()
    log.append_as_leader(client(3), 0)
    log.become_leader(2)
    log.append_as_leader(client(2), 2)
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)  # no epoch 1 here: the largest below it
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert log.end_offset_for_epoch(3) is None and log.end_offset_for_epoch(-1) is None


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_offset_for_timestamp_from_what_the_append_read(codec):
    log = Log()
    log.append_as_leader(timed(NOW + 10, NOW + 5, NOW + 30, compression=codec), 1)
    log.append_as_leader(timed(NOW + 20, NOW + 40, compression=codec), 2)
    assert log.offset_for_timestamp(NOW) == TimestampAndOffset(NOW + 10, 0, 1)
    assert log.offset_for_timestamp(NOW + 11) == TimestampAndOffset(NOW + 30, 2, 1)
    assert log.offset_for_timestamp(NOW + 31) == TimestampAndOffset(NOW + 40, 4, 2)
    assert log.offset_for_timestamp(NOW + 41) is None
    assert log.max_timestamp() == TimestampAndOffset(NOW + 40, 4, 2)
    log.move_start(2)
    assert log.offset_for_timestamp(NOW) == TimestampAndOffset(NOW + 30, 2, 1)


def test_a_log_start_inside_a_batch_answers_from_the_steps():
    """The log start inside a batch, past a record that raised the batch's running maximum: Kafka reads
    the batch again and answers its record 1 (NOW + 5); the batch is not read again here, and the first
    record from the start on that raised the maximum is answered (docs/fidelity.md)."""
    log = Log()
    log.append_as_leader(timed(NOW + 10, NOW + 5, NOW + 30), 1)
    log.move_start(1)
    assert log.offset_for_timestamp(NOW) == TimestampAndOffset(NOW + 30, 2, 1)


def test_max_timestamp_is_the_first_record_with_it():
    log = Log()
    log.append_as_leader(timed(NOW + 1, NOW + 9, NOW + 9), 1)
    log.append_as_leader(timed(NOW + 9), 2)
    assert log.max_timestamp() == TimestampAndOffset(NOW + 9, 1, 1)
    assert Log().max_timestamp() is None


def test_log_append_time_batches_carry_the_leaders_time():
    log = Log()
    entry = log.append_as_leader(timed(NOW - 100, NOW - 50), 1, log_append_time_ms=NOW)
    assert entry.max_timestamp == NOW and read_header(entry.render()).log_append_time
    assert log.offset_for_timestamp(NOW - 60) == TimestampAndOffset(NOW, 0, 1)
    assert log.max_timestamp() == TimestampAndOffset(NOW, 0, 1)


@pytest.mark.parametrize("count", [1, 2, 63, 64, 65, 300, 8191, 8192, 8193])
def test_synthetic_runs_render_as_batches_kafka_python_reads(count):
    run = StoredBatch.synthetic(1_000, count, 3, NOW)
    data = run.render()
    assert len(data) == run.size == synthetic_size(count)
    (theirs,) = kafka_python_batches(data)
    assert theirs.validate_crc() and theirs.leader_epoch == 3 and theirs.producer_id == -1
    records = kafka_python_records(theirs)
    assert [r[0] for r in records] == list(range(1_000, 1_000 + count))
    assert all(r[1:] == (NOW, 0, None, None, []) for r in records)
    assert run.render() == data  # deterministic
    assert run.header() == read_header(data)._replace(crc=0)


def test_synthetic_runs_are_cut_where_real_batches_are_not():
    log = Log()
    log.append_as_leader(client(2), 1)
    log.append_synthetic(10, 1, NOW)
    assert offsets(log.read(0, 7, 1 << 30)) == [(0, 1), (2, 6)]  # the run's part below the bound
    follower = Log()
    for entry in log.read(0, 7, 1 << 30):
        follower.append_copy(entry)
    assert follower.log_end_offset == 7
    assert offsets(log.read(7, 12, 1 << 30)) == [(7, 11)]  # the rest of the run, from where it stopped
    for entry in log.read(7, 12, 1 << 30):
        follower.append_copy(entry)
    assert follower.log_end_offset == 12 and follower.size_bytes > log.size_bytes  # two runs' headers
    removed = log.truncate_to(5)
    assert offsets(removed) == [(5, 11)] and log.log_end_offset == 5
    assert log.size_bytes == sum(b.size for b in log.batches())
    assert kafka_python_records(kafka_python_batches(log.batch_at(4).render())[0])[-1][0] == 4


def test_a_stored_batch_read_back_from_bytes():
    entry = leader_log(4, epoch=6).batch_at(0)
    again = StoredBatch.from_bytes(entry.render())
    assert (again.base_offset, again.last_offset, again.leader_epoch, again.size) == (0, 3, 6, entry.size)


@settings(max_examples=60)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 5), st.integers(0, 3)),
            st.tuples(st.just("synthetic"), st.integers(1, 40), st.integers(0, 3)),
            st.tuples(st.just("truncate"), st.integers(0, 60), st.just(0)),
            st.tuples(st.just("start"), st.integers(0, 60), st.just(0)),
            st.tuples(st.just("retain"), st.integers(0, 2000), st.integers(0, 60)),
        ),
        max_size=25,
    )
)
def test_the_log_stays_consistent(steps):
    log = Log()
    epoch = 0
    for kind, a, b in steps:
        if kind == "append":
            epoch += b
            log.append_as_leader(client(a), epoch)
        elif kind == "synthetic":
            epoch += b
            log.append_synthetic(a, epoch, NOW)
        elif kind == "truncate":
            log.truncate_to(a)
        elif kind == "start":
            log.move_start(min(a, log.log_end_offset))
        else:
            log.retain_bytes(a, b)
        batches = list(log.batches())
        assert log.size_bytes == sum(x.size for x in batches)
        assert log.log_start_offset <= log.log_end_offset
        if batches:
            assert batches[-1].last_offset + 1 == log.log_end_offset
            assert batches[0].base_offset <= log.log_start_offset <= batches[0].last_offset + 1
            assert all(x.last_offset + 1 == y.base_offset for x, y in zip(batches, batches[1:], strict=False))
        starts = [e.start_offset for e in log.epochs.entries]
        assert starts == sorted(set(starts)) and all(s <= log.log_end_offset for s in starts)
        if log.log_end_offset > log.log_start_offset:
            everything = log.read(log.log_start_offset, log.log_end_offset, 1 << 30)
            assert everything[-1].last_offset + 1 == log.log_end_offset


def test_a_follower_finds_where_it_diverges_from_its_new_leader():
    old = Log()  # the old leader, epoch 1: [0, 9] and [10, 19]
    old.append_as_leader(client(10), 1)
    old.append_as_leader(client(10), 1)
    new = Log()  # a follower that had copied [0, 9] only, elected uncleanly in epoch 2
    new.append_copy(old.batch_at(0))
    new.become_leader(2)
    new.append_as_leader(client(20), 2)  # [10, 29]: longer than the old leader's log
    assert divergence_offset(old, new) == 10  # not min(20, 30): [10, 19] of epoch 1 is not the leader's
    assert offsets(old.truncate_to(10)) == [(10, 19)]
    assert divergence_offset(old, new) == 10
    for entry in new.read(10, new.log_end_offset, 1 << 30):
        old.append_copy(entry)
    assert divergence_offset(old, new) == old.log_end_offset == 30


def test_divergence_through_epochs_the_follower_never_saw():
    leader = Log()
    leader.append_as_leader(client(5), 1)  # [0, 4] epoch 1
    follower = Log()
    follower.append_copy(leader.batch_at(0))
    follower.become_leader(3)  # led epoch 3 for a while, alone
    follower.append_as_leader(client(5), 3)  # [5, 9] epoch 3, never replicated
    leader.become_leader(4)
    leader.append_as_leader(client(2), 4)  # [5, 6] epoch 4
    # the leader has no epoch 3: it answers epoch 1 ending at 5; the follower cuts there
    assert divergence_offset(follower, leader) == 5
    assert divergence_offset(leader, leader) == leader.log_end_offset
    assert divergence_offset(Log(), leader) == 0
    behind = Log()
    behind.append_copy(leader.batch_at(0))
    assert divergence_offset(behind, leader) == 5  # a follower that is only behind keeps everything


def test_appending_keeps_the_clients_bytes_without_copying_them():
    sent = build(3)
    entry = Log().append_as_leader(check_client_batch(sent, 9, DEFAULT_LIMITS, NOW, "t", 0), 2)
    assert entry.source is sent and len(entry.stamped_head) == 17
    longer = sent + sent[:20]  # a trailing partial batch: only the batch is kept
    entry = Log().append_as_leader(check_client_batch(longer, 9, DEFAULT_LIMITS, NOW, "t", 0), 2)
    assert entry.source == sent and entry.source is not longer
    stamped = Log().append_as_leader(check_client_batch(sent, 9, DEFAULT_LIMITS, NOW, "t", 0), 2, NOW)
    assert len(stamped.stamped_head) == 43  # up to MaxTimestamp, with the new CRC
    assert stamped.header() == read_header(stamped.render())


def test_a_batch_read_in_place_from_a_request_frame_is_kept_as_a_view_of_it():
    sent = build(3)
    frame = b"request header and other partitions" + sent + b"more"
    view = memoryview(frame)[35 : 35 + len(sent)]
    kept = Log().append_as_leader(check_client_batch(view, 9, DEFAULT_LIMITS, NOW, "t", 0), 2)
    copied = Log().append_as_leader(check_client_batch(sent, 9, DEFAULT_LIMITS, NOW, "t", 0), 2)
    assert isinstance(kept.source, memoryview) and kept.source.obj is frame
    assert kept.render() == copied.render() and kept.header() == copied.header()
    mutable = Log().append_as_leader(check_client_batch(bytearray(sent), 9, DEFAULT_LIMITS, NOW, "t", 0), 2)
    assert type(mutable.source) is bytes and mutable.render() == copied.render()  # copied: it could change
    big = b"x" * (2 * len(sent)) + sent  # a small part of its frame: a view would keep the frame whole
    small = Log().append_as_leader(
        check_client_batch(memoryview(big)[-len(sent) :], 9, DEFAULT_LIMITS, NOW, "t", 0), 2
    )
    assert type(small.source) is bytes and small.render() == copied.render()


def test_a_fetch_answer_joins_the_batches_as_stored():
    log = leader_log(2, 3)
    log.append_synthetic(4, 0, NOW)
    everything = log.read(0, log.log_end_offset, 1 << 30)
    joined = join_batches(everything)
    assert joined == b"".join(b.render() for b in everything)
    assert [b.last_offset for b in kafka_python_batches(joined)] == [1, 4, 8]


@settings(max_examples=40)
@given(
    appends=st.lists(st.tuples(st.booleans(), st.integers(1, 30)), min_size=1, max_size=12),
    steps=st.lists(st.integers(1, 25), min_size=1, max_size=40),
    budget=st.integers(0, 3000),
)
def test_a_follower_copying_in_pieces_ends_with_the_leaders_records(appends, steps, budget):
    leader = Log()
    for synthetic, count in appends:
        if synthetic:
            leader.append_synthetic(count, 1, NOW)
        else:
            leader.append_as_leader(client(min(count, 5)), 1)
    follower = Log()
    for step in itertools.islice(itertools.cycle(steps), 1000):
        if follower.log_end_offset == leader.log_end_offset:
            break
        bound = min(follower.log_end_offset + step, leader.log_end_offset)
        # a client's batch crossing the bound waits; a follower short of records to copy takes one batch
        got = leader.read(follower.log_end_offset, bound, budget) or leader.read(
            follower.log_end_offset, leader.log_end_offset, 0
        )
        assert len(got) >= 1
        for entry in got:
            follower.append_copy(entry)
    assert follower.log_end_offset == leader.log_end_offset
    ours = [
        r[0]
        for b in kafka_python_batches(join_batches(list(follower.batches())))
        for r in kafka_python_records(b)
    ]
    assert ours == list(range(leader.log_end_offset))
