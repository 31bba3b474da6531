"""The leader epoch cache, case by case as Kafka's LeaderEpochFileCacheTest pins LeaderEpochFileCache
(each test names the Kafka test it follows)."""

from __future__ import annotations

import pytest

from controller.records.epochs import EpochEntry, LeaderEpochCache

UNDEFINED = (-1, -1)


def cache_of(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_add_epoch_and_offset():  # shouldAddEpochAndMessageOffsetToCache
    cache = cache_of((2, 10))
    assert cache.latest_epoch() == 2 and cache.entries == (EpochEntry(2, 10),)
    assert cache.end_offset_for(2, 11) == (2, 11)


def test_an_assigned_epoch_keeps_its_start():
    # shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned, shouldNotUpdateEpochAndStartOffsetIfItDidNotChange
    cache = cache_of((2, 9))
    assert cache.assign(2, 10) is False
    assert cache.entries == (EpochEntry(2, 9),)


def test_latest_epoch_ends_at_the_log_end():  # shouldReturnLogEndOffsetIfLatestEpochRequested
    assert cache_of((2, 11), (2, 12)).end_offset_for(2, 14) == (2, 14)


@pytest.mark.parametrize("entries", [(), ((2, 11), (3, 12))])
def test_undefined_epoch_asks_nothing(entries):
    # shouldReturnUndefinedOffsetIfUndefinedEpochRequested, shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested
    assert cache_of(*entries).end_offset_for(-1, 73) == UNDEFINED


def test_empty_cache():  # shouldReturnUnsupportedIfNoEpochRecorded
    cache = LeaderEpochCache()
    assert cache.end_offset_for(0, 0) == UNDEFINED
    assert cache.latest_epoch() is None and cache.earliest_entry() is None and len(cache) == 0


def test_epoch_older_than_any_cached():  # shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch
    assert cache_of((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0) == (4, 11)


def test_same_epoch_earlier_start_truncates():  # shouldTruncateIfMatchingEpochButEarlierStartingOffset
    cache = cache_of((5, 11), (6, 12), (7, 13))
    assert cache.assign(7, 12) is True
    assert cache.entries == (EpochEntry(5, 11), EpochEntry(7, 12))
    assert cache.end_offset_for(5, 0) == (5, 12) and cache.end_offset_for(6, 0) == (5, 12)


def test_end_of_an_epoch_is_the_next_ones_start():
    # shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch,
    # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    assert cache_of((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)).end_offset_for(2, 17) == (2, 15)
    cache = cache_of((0, 10), (2, 13), (4, 17))
    assert [cache.end_offset_for(e, 0) for e in (1, 2, 3)] == [(0, 13), (2, 17), (2, 17)]


def test_epoch_newer_than_any_cached():  # shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked
    assert cache_of((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_monotonic_epochs_and_offsets():
    # shouldEnforceMonotonicallyIncreasingEpochs
    cache = cache_of((1, 5), (2, 6), (1, 7))
    assert cache.entries == (EpochEntry(1, 7),)
    assert cache.end_offset_for(1, 8) == (1, 8) and cache.end_offset_for(2, 8) == UNDEFINED
    # shouldEnforceOffsetsIncreaseMonotonically, shouldEnforceMonotonicallyIncreasingStartOffsets
    assert cache_of((2, 6), (3, 5)).entries == (EpochEntry(3, 5),)
    assert cache_of((2, 9), (3, 9)).entries == (EpochEntry(3, 9),)


def test_leaders_changing_many_times():  # shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes
    cache = cache_of((0, 0), (1, 0))
    assert cache.latest_epoch() == 1
    assert cache.end_offset_for(1, 0) == (1, 0) and cache.end_offset_for(0, 0) == (0, 0)
    assert cache.end_offset_for(1, 5) == (1, 5)
    cache.assign(2, 5)
    assert [cache.end_offset_for(e, 10) for e in (2, 1, 0)] == [(2, 10), (1, 5), (0, 0)]


def test_truncate_from_end_is_inclusive():  # shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries
    cache = cache_of((2, 6), (3, 8), (4, 11))
    assert cache.truncate_from_end(8) == [EpochEntry(4, 11), EpochEntry(3, 8)]
    assert cache.entries == (EpochEntry(2, 6),)
    assert cache.truncate_from_end(100) == [] and cache.truncate_from_end(-1) == []


@pytest.mark.parametrize(
    ("start", "entries"),
    [
        (8, (EpochEntry(3, 8), EpochEntry(4, 11))),  # shouldPreserveResetOffsetOnClearEarliestIfOneExists
        (
            9,
            (EpochEntry(3, 9), EpochEntry(4, 11)),
        ),  # shouldUpdateSavedOffsetWhenOffsetToClearToIsBetweenEpochs
        (5, (EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11))),  # before every entry: nothing changes
        (11, (EpochEntry(4, 11),)),
        (15, (EpochEntry(4, 15),)),
    ],
)
def test_truncate_from_start(start, entries):
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(start)
    assert cache.entries == entries


def test_epoch_for_offset_and_entries():
    cache = cache_of((2, 6), (3, 8), (4, 11))
    assert [cache.epoch_for_offset(o) for o in (5, 6, 7, 8, 10, 11, 99)] == [None, 2, 2, 3, 3, 4, 4]
    assert cache.epoch_entry(3) == EpochEntry(3, 8) and cache.epoch_entry(5) is None
    assert cache.earliest_entry() == EpochEntry(2, 6) and cache.latest_entry() == EpochEntry(4, 11)


def test_negative_entries_are_refused():
    with pytest.raises(ValueError):
        LeaderEpochCache().assign(-1, 0)
    with pytest.raises(ValueError):
        LeaderEpochCache().assign(0, -1)
