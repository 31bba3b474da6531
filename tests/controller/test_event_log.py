"""The event log's entries read for SimulatorEvents: after a sequence number, at most a count, whatever
int64 and int32 a client sends (a sequence number past the newest, a count of 2**31 - 1)."""

from __future__ import annotations

from controller.events import EventLog, as_event


def test_entries_since_any_sequence_number_and_count() -> None:
    log = EventLog(lambda: 0, max_events=8)
    assert log.entries_since(0, 5) == []
    for i in range(10):  # the first two are dropped: the log keeps 8
        log.record("broker", f"broker {i}", [("state", "a", "b")], "test")
    assert [e[0] for e in log.entries_since(0, 3)] == [3, 4, 5]
    assert [e[0] for e in log.entries_since(-5, 2)] == [3, 4]
    assert [e[0] for e in log.entries_since(8, 2**31 - 1)] == [9, 10]
    assert (
        log.entries_since(10, 5) == log.entries_since(2**63 - 1, 2**31 - 1) == log.entries_since(3, 0) == []
    )
    assert as_event(log.entries_since(9, 1)[0]).subject == "broker 9"
    assert log.entries_since(3, -(2**31)) == []
    assert [e.seq for e in log.iter_since(8)] == [9, 10]
    assert [e.seq for e in log.iter_since(-(2**63))] == list(range(3, 11))
    assert list(log.iter_since(2**63 - 1)) == []
