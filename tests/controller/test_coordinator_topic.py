"""A coordinator's internal topic leaves nothing of itself in the replication model once closed: its
high-watermark watcher goes with it (a watcher left behind would keep the model from coasting on a
virtual clock, and call a closed coordinator)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controller.coordinator_topic import CoordinatorTopic


def topic(replication: Any, name: str = "__transaction_state") -> CoordinatorTopic:
    return CoordinatorTopic(name, 50, 3, {}, None, None, replication, None, 100)  # type: ignore[arg-type]


def test_close_unregisters_its_watermark_watcher_and_only_its_own() -> None:
    replication = SimpleNamespace(watermark_watchers={})
    closed = topic(replication)
    assert set(replication.watermark_watchers) == {"__transaction_state"}
    closed.close()
    assert replication.watermark_watchers == {}
    # A topic of the same name made since (a coordinator started again) keeps its watcher.
    older, newer = topic(replication), topic(replication)
    older.close()
    assert replication.watermark_watchers == {"__transaction_state": newer._high_watermark_moved}
