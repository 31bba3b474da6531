"""Fixtures for the server tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fast_idle_server(placement_sim_factory):
    return placement_sim_factory(
        properties={"connections.max.idle.ms": "400", "socket.request.max.bytes": "4096"}
    )
