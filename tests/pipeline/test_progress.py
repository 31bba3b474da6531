"""What a user sees of a long sweep's progress: runs done, share, rate and time left."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

import pytest

from placement_sim.pipeline import progress
from placement_sim.pipeline.progress import ConsoleProgress, Ticker, format_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.4, "59s"), (60, "1m00s"), (754, "12m34s"), (3600, "1h00m"), (7384, "2h03m"), (-3, "0s")],
)
def test_durations_read_as_seconds_minutes_hours(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_lines_show_share_rate_and_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    stream = io.StringIO()
    report = ConsoleProgress(stream, interval=2.0)
    clock[0] = 110.0
    report(250, 1000)  # 25 runs/s: 750 left take 30 s
    clock[0] = 111.0
    report(300, 1000)  # within the interval: not printed
    clock[0] = 112.0
    report(300, 1000)
    clock[0] = 113.0
    report(1000, 1000)  # the end is always printed
    report(1000, 1000)  # but only once
    assert stream.getvalue().splitlines() == [
        "runs 250/1,000 (25%) in 10s, 25/s, about 30s left",
        "runs 300/1,000 (30%) in 12s, 25/s, about 28s left",
        "runs 1,000/1,000 (100%) in 13s",
    ]


def test_the_ticker_polls_until_stopped_and_survives_a_failing_poll() -> None:
    calls: list[int] = []

    def poll() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the first poll fails")

    ticker = Ticker(poll, interval=0.01)
    ticker.start()
    deadline = time.monotonic() + 10
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    ticker.stop()
    assert len(calls) >= 3 and not ticker.is_alive()
