"""``placement-sim serve`` as a user runs it: a real process, real signals."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protocol.client import ErrorResponse, KafkaClient
from tests.support.placers import placer_file
from tests.support.rawwire import raw_connect, read_response, request_frame

CLI = [sys.executable, "-m", "placement_sim.cli.main"]


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc, line = start_line(*args)
    return proc, line.split()[2]  # listening on HOST:PORT (PROTOCOL)


def start_line(*args: str) -> tuple[subprocess.Popen[str], str]:
    """The server started, and its start line."""
    proc = subprocess.Popen(
        [*CLI, "serve", "--listen", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("listening on "):
            return proc, line.rstrip("\n")
    proc.wait(10)
    raise AssertionError(f"server did not start: {proc.stderr.read() if proc.stderr else ''}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_and_stops_cleanly_on_signals(sig):
    proc, bootstrap = start("--seed", "1")
    try:
        host, port = bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0

        async def ask() -> list[list[int]]:
            async with await KafkaClient.connect(bootstrap) as client:
                return await client.create_replica_placement(6, 3)

        replicas = asyncio.run(ask())
        assert len(replicas) == 6 and all(len(set(r)) == 3 for r in replicas)
    finally:
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "stopped" in out
    assert "Traceback" not in err


def test_serve_reads_a_properties_file(tmp_path: Path):
    config = tmp_path / "server.properties"
    config.write_text(
        "# a two-rack cluster\nreplica.placer.class.name=legacy\n"
        "simulator.brokers=10:a,11:a,20:b,21:b\nsimulator.seed=4\nsimulator.placer.legacy.fixed.start.index=0\n"
    )
    proc, bootstrap = start("--config", str(config))
    try:

        async def ask() -> list[list[int]]:
            async with await KafkaClient.connect(bootstrap) as client:
                return await client.create_replica_placement(4, 2)

        replicas = asyncio.run(ask())
        assert {b for rs in replicas for b in rs} == {10, 11, 20, 21}
        assert all({r // 10 for r in rs} == {1, 2} for rs in replicas)  # one replica per rack
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


@pytest.mark.parametrize(
    ("lines", "named"),
    [
        ("socket.request.max.bytes=lots\n", "socket.request.max.bytes"),
        ("simulator.brokers=0:a,x:b\n", "simulator.brokers"),
        ("simulator.brokers.fenced=9\n", "simulator.brokers.fenced"),
        ("listeners=nowhere\n", "listeners"),
        ("simulator.placer.isolation=sometimes\n", "simulator.placer.isolation"),
        ("replica.placer.class.name=no.such.Placer\n", "no.such"),
        ("listeners=SASL_PLAINTEXT://127.0.0.1:0\n", "simulator.sasl.users: listener SASL_PLAINTEXT"),
        ("listeners=SSL://127.0.0.1:0\n", "ssl.keystore.location: listener SSL (SSL) needs a keystore"),
    ],
)
def test_bad_configuration_stops_startup_naming_the_key(tmp_path: Path, lines: str, named: str):
    config = tmp_path / "server.properties"
    config.write_text(lines)
    result = subprocess.run(
        [*CLI, "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert named in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_configuration_file(tmp_path: Path):
    result = subprocess.run(
        [*CLI, "serve", "--config", str(tmp_path / "absent.properties")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "absent.properties" in result.stderr


def test_a_plugin_from_a_file_is_shown_by_its_path_in_the_start_line_the_log_and_client_errors(
    tmp_path: Path,
):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "mine.py").write_text(
        "from controller.placement import ReplicaPlacementError, ReplicaPlacer\n\n"
        "class Refusing(ReplicaPlacer):\n"
        "    def place(self, spec, cluster):\n"
        "        raise ReplicaPlacementError('no room')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen(
        [*CLI, "-v", "serve", "--listen", "127.0.0.1:0", "--placer", "plugins/mine.py:Refusing"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    bootstrap = proc.stdout.readline().split()[2]  # listening on HOST:PORT (PROTOCOL)
    try:

        async def ask() -> str:
            async with await KafkaClient.connect(bootstrap) as client:
                try:
                    await client.create_replica_placement(1, 1)
                except ErrorResponse as exc:
                    return exc.message or ""
            return ""

        message = asyncio.run(ask())
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert first.startswith("placer plugins/mine.py:Refusing; brokers 0@rack-1")
    assert message == "plugins/mine.py:Refusing: no room"
    assert "placer plugins/mine.py:Refusing runs in worker process" in err
    assert "_placement_sim_plugin_" not in first + message + err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_cleanly_with_connections_open(sig):
    """An idle connection, one mid-frame, one pipelining, one waiting for a placer that hangs: the
    server still exits at once with status 0, and nothing on stderr looks like a failure."""
    proc, bootstrap = start("--seed", "1", "--placer", placer_file("Hanging"))
    try:
        idle = raw_connect(bootstrap)
        idle.sendall(request_frame(18, 0, {}, 1))
        assert read_response(idle) is not None
        partial = raw_connect(bootstrap)
        partial.sendall(b"\x00\x00\x10\x00\x00\x12")
        piped = raw_connect(bootstrap)
        piped.sendall(request_frame(18, 0, {}, 1) * 1000)
        waiting = raw_connect(bootstrap)
        waiting.sendall(request_frame(68, 0, {"NumPartitions": 1, "ReplicationFactor": 1}, 1))
        time.sleep(1.0)  # the placer is hanging in its worker now
    finally:
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in out
    for bad in ("Traceback", "Exception", "Task was destroyed", "Error", "never awaited"):
        assert bad not in err, err


def test_listen_keeps_the_configured_listeners_security_protocol(tmp_path: Path, placement_sim_certificates):
    """``--listen HOST:PORT`` moves a SASL_SSL listener, and it stays SASL_SSL (it was served as PLAINTEXT):
    the start line names the protocol, a TLS client is served and a plaintext one is not."""
    import ssl

    from controller.security_testing import secured_properties

    config = tmp_path / "sasl_ssl.properties"
    properties = secured_properties("SASL_SSL", placement_sim_certificates, {"alice": "alice-secret"})
    properties["listeners"] = "SASL_SSL://127.0.0.1:9"  # moved by --listen
    config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    proc, line = start_line("--config", str(config))
    bootstrap = line.split()[2]
    assert proc.stdout is not None
    brokers = proc.stdout.readline()  # the next line (read here: communicate() skips what is buffered)
    try:
        assert line == f"listening on {bootstrap} (SASL_SSL)"
        host = bootstrap.rsplit(":", 1)[0]
        context = ssl.create_default_context(cafile=str(placement_sim_certificates.ca_file))
        with context.wrap_socket(raw_connect(bootstrap, timeout=5), server_hostname=host) as tls:
            tls.sendall(request_frame(18, 0, {}))
            assert read_response(tls) is not None
        with raw_connect(bootstrap, timeout=5) as plain:
            plain.sendall(request_frame(18, 0, {}))
            assert read_response(plain) is None  # not TLS: the handshake fails and the server closes
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert brokers.startswith("brokers on ") and brokers.endswith(" (SASL_SSL)\n")


def test_listen_with_a_listener_name_that_has_no_protocol_is_refused(tmp_path: Path):
    result = subprocess.run(
        [*CLI, "serve", "--listen", "NOWHERE://127.0.0.1:0"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "listeners: listener NOWHERE has no security protocol" in result.stderr
