"""kcat (librdkafka's command-line client) produces lines with ``-P`` and reads them back with ``-C``:
what it reads is exactly what it produced, with the offsets the leader gave, in order."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import new_topic, readable, start_cluster

CLIENT = "kcat"


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    assert path is not None, "kcat is not installed: `make system-deps` installs the Debian package"
    return path


@pytest.fixture(scope="module")
def cluster(wire_log: WireLog) -> Iterator[ServerThread]:
    with start_cluster() as server:
        yield server
        wire_log.assert_clean(server)


def _run(kcat: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [kcat, *args, "-X", "socket.timeout.ms=5000", "-X", "message.timeout.ms=20000"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kcat_produces_lines_and_consumes_them_back(kcat: str, cluster: ServerThread) -> None:
    topic = new_topic(cluster, [[1, 2, 0]])
    lines = [f"key{i}:value {i}" for i in range(50)]
    _run(
        kcat,
        "-P",
        "-b",
        cluster.bootstrap,
        "-t",
        topic,
        "-p",
        "0",
        "-K",
        ":",
        "-X",
        "acks=all",
        stdin="\n".join(lines) + "\n",
    )
    assert [(k, v) for _, k, v in readable(cluster, topic, 0)] == [
        (b"key%d" % i, b"value %d" % i) for i in range(50)
    ]
    out = _run(
        kcat,
        "-C",
        "-b",
        cluster.bootstrap,
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-f",
        "%o %k %s\\n",
    )
    assert out.splitlines() == [f"{i} key{i} value {i}" for i in range(50)]
    tail = _run(
        kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-o", "-3", "-e", "-f", "%o %s\\n"
    )
    assert tail.splitlines() == ["47 value 47", "48 value 48", "49 value 49"]  # ListOffsets -1, then back 3
