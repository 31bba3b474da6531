"""simulator.event.loop: uvloop where it is installed, asyncio's loop otherwise or when asked."""

from __future__ import annotations

import asyncio

import pytest

import controller.eventloop
from controller.config import ConfigError
from controller.eventloop import loop_factory, loop_name, new_event_loop


def test_auto_and_uvloop_run_uvloop_where_it_is_installed() -> None:
    assert controller.eventloop.uvloop is not None  # a test dependency and a runtime one
    for choice in ("auto", "uvloop"):
        loop = new_event_loop(choice)
        try:
            assert loop_name(loop) == "uvloop"
        finally:
            loop.close()
    loop = new_event_loop("asyncio")
    try:
        assert loop_name(loop) == "asyncio"
    finally:
        loop.close()


def test_without_uvloop_auto_runs_asyncio_and_uvloop_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(controller.eventloop, "uvloop", None)
    assert loop_factory("auto") is asyncio.new_event_loop
    with pytest.raises(ConfigError, match="uvloop is not installed"):
        loop_factory("uvloop")
