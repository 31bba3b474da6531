"""``kcat -L`` through a broker failure: the crashed broker stays listed, and leading, until its session
times out; then the brokers, leaders and ISRs kcat prints have moved on.

kcat's JSON (``-J``) carries each partition's leader, replicas and ISR, and the partition's error, but
no leader epoch.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from controller.embedded import ServerThread
from tests.clients.conftest import FAILOVER_LAYOUT, SESSION_TIMEOUT_MS, create_placed

CLIENT = "kcat"


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    assert path is not None, "kcat is not installed: `make system-deps` installs the Debian package"
    return path


def listing(kcat: str, server: ServerThread) -> tuple[list[int], dict[str, tuple[object, ...]]]:
    """``kcat -L -J``: the brokers, and ``topic-partition`` -> (leader, ISR, error or None)."""
    done = subprocess.run(
        [kcat, "-L", "-J", "-b", server.bootstrap, "-m", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    return sorted(b["id"] for b in found["brokers"]), {
        f"{t['topic']}-{p['partition']}": (p["leader"], [r["id"] for r in p["isrs"]], p.get("error"))
        for t in sorted(found["topics"], key=lambda t: t["topic"])
        for p in sorted(t["partitions"], key=lambda p: p["partition"])
    }


def test_a_crashed_broker_is_listed_and_leads_until_its_session_times_out(kcat: str, failover_cluster):
    server = failover_cluster
    create_placed(server, FAILOVER_LAYOUT)
    healthy = (
        [0, 1, 2],
        {
            "orders-0": (0, [0, 1, 2], None),
            "orders-1": (1, [1, 2, 0], None),
            "orders-2": (2, [2, 0, 1], None),
            "solo-0": (1, [1], None),
        },
    )
    assert listing(kcat, server) == healthy
    server.stop_broker(1, "crash")
    server.advance(SESSION_TIMEOUT_MS - 1)
    assert listing(kcat, server) == healthy
    server.advance(1)
    assert listing(kcat, server) == (
        [0, 2],
        {
            "orders-0": (0, [0, 2], None),
            "orders-1": (2, [2, 0], None),
            "orders-2": (2, [2, 0], None),
            "solo-0": (-1, [], "Broker: Leader not available"),  # its last in-sync replica left for the ELR
        },
    )


def test_every_request_decoded_cleanly(failover_cluster, wire_log):
    """Runs last: everything kcat sent decoded without unknown tagged fields."""
    wire_log.assert_clean(failover_cluster)
