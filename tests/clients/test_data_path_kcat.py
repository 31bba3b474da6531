"""kcat (librdkafka's command-line client) produces lines with ``-P`` and reads them back with ``-C``:
what it reads is exactly what it produced, with the offsets the leader gave, in order."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.clients.data_path_support import (
    BULK,
    BULK_REPLICAS,
    by_partition,
    codecs_stored,
    expected_by_partition,
    new_topic,
    readable,
    start_cluster,
)

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


#: What the batches of ``kcat -z CODEC`` are stored as: what kcat sent. librdkafka before 2.8 checks gzip,
#: snappy and lz4 support by asking for Produce v0 exactly (confluentinc/librdkafka issue 4956); Kafka 4.x
#: serves Produce v3 and up (KIP-896) but advertises v0 in ApiVersions for that check, as the brokers
#: do, so kcat (built on librdkafka 2.0.2 here) compresses as it would against Kafka 4.4.
KCAT_STORES = {"gzip": "gzip", "lz4": "lz4", "zstd": "zstd"}


@pytest.mark.parametrize("codec", sorted(KCAT_STORES))
def test_kcat_round_trips_ten_thousand_keyed_records_with_a_header_compressed_or_not(
    kcat: str, cluster: ServerThread, codec: str
) -> None:
    """kcat's -H gives every record of one run the same headers: one run per partition, whose records
    share the "kind" header (bulk_record's "seq" header varies per record, so kcat leaves it out)."""
    topic = new_topic(cluster, BULK_REPLICAS)
    expected = expected_by_partition()
    for partition, records in expected.items():
        [kind] = {dict(headers)["kind"] for _, _, headers in records}
        lines = "".join(f"{key.decode()}:{value.decode()}\n" for key, value, _ in records)
        _run(kcat, "-P", "-b", cluster.bootstrap, "-t", topic, "-p", str(partition), "-K", ":",
             "-z", codec, "-H", f"kind={kind.decode()}", "-X", "acks=all", "-X", "linger.ms=5",
             stdin=lines)  # fmt: skip
    out = _run(kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
               "-f", "%p %o %k %s %h\\n")  # fmt: skip
    got = []
    for line in out.splitlines():
        partition, offset, key, value, headers = line.split(" ")
        pairs_ = [tuple(h.split("=", 1)) for h in headers.split(",")]
        got.append((int(partition), int(offset), key.encode(), value.encode(),
                    [(k, v.encode()) for k, v in pairs_]))  # fmt: skip
    assert codecs_stored(cluster, topic) == {KCAT_STORES[codec]}
    assert len(got) == BULK
    assert by_partition(got) == {
        p: [(key, value, [h for h in headers if h[0] == "kind"]) for key, value, headers in records]
        for p, records in expected.items()
    }
