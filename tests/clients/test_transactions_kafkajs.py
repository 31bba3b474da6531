"""kafkajs's transactional producer against the simulator (kafkajs installed by the Makefile into
``.cache/npm`` with npm): a transaction committed and one aborted; kafkajs's own read_committed consumer,
and confluent-kafka's, read exactly the committed records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.support.txn_clients import create, read_committed, txn_cluster

CLIENT = "kafkajs transactions"
ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".cache" / "npm" / "node_modules"
SCRIPT = Path(__file__).with_name("kafkajs") / "transactions.js"
TOPIC = "kafkajs-out"


@pytest.fixture
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    with txn_cluster() as started:
        create(started, TOPIC)
        yield started
    wire_log.assert_clean(started)


def test_kafkajs_commits_and_aborts_and_reads_only_the_committed(server: ServerThread) -> None:
    node = shutil.which("node")
    assert node is not None, "node is not installed (make test installs it with the system packages)"
    assert (NODE_MODULES / "kafkajs").is_dir(), "kafkajs is not installed: run `make npm`"
    run = subprocess.run(
        [node, str(SCRIPT), server.bootstrap, TOPIC],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    committed = sorted(map(tuple, result["committed"]))
    assert sorted(map(tuple, result["read"])) == committed
    assert sorted((p, v.encode()) for p, v in committed) == sorted(
        read_committed(server, TOPIC, 3, len(committed))
    )
    assert server.transactions()["kafkajs-txn"]["state"] == "CompleteAbort"
