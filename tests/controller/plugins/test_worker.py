"""A plugin's worker process as a user of ``placement-sim serve`` meets it: it starts without a word, and
Ctrl-C in the terminal (SIGINT to the whole process group) stops the server and its worker silently."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from protocol.client import BlockingClient
from tests.support.placers import placer_file

ROOT = Path(__file__).resolve().parents[3]


def test_ctrl_c_on_serve_with_a_plugin_stops_everything_without_a_word_on_stderr():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement_sim.cli.main",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--placer",
            placer_file("RoundRobin"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # a process group of its own, as a shell gives a foreground command
    )
    try:
        assert proc.stdout is not None
        bootstrap = None
        for line in proc.stdout:
            if line.startswith("listening on "):
                bootstrap = line.split()[2]
                break
        assert bootstrap is not None, proc.stderr.read() if proc.stderr else ""
        with BlockingClient.connect(bootstrap) as client:  # the plugin answers from its worker
            assert [len(r) for r in client.create_replica_placement(3, 2)] == [2, 2, 2]
        time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "stopped" in out
    assert err == ""  # no RuntimeWarning when the worker starts, no KeyboardInterrupt when it stops


def test_a_worker_whose_server_left_ends_without_a_word():
    """The server closed its end of the worker's channel (it stopped while the worker started): the worker
    finds the pipe broken when it says it is ready, and exits 0 with nothing on stderr."""
    import pickle

    from controller.plugins.isolation.worker import LENGTH, Load

    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.plugins.isolation"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the server's end of the channel, gone before the worker answers
    load = pickle.dumps(Load("controller.placement.loader:PLACERS", "striped", {}, list(sys.path)))
    proc.stdin.write(LENGTH.pack(len(load)) + load)
    proc.stdin.flush()
    try:
        status = proc.wait(timeout=60)
        stderr = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stderr.close()
    assert (status, stderr) == (0, "")
