"""``placement-sim place --bootstrap``: the placement from a running server, shown as the in-process one."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from placement_sim.cli.main import main

UNBALANCED = [(0, "rack-a"), (1, "rack-b"), (2, "rack-b"), (3, "rack-c"), (4, "rack-c"), (5, "rack-c")]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_server_placement_is_printed_as_the_in_process_one(capsys, placement_sim_factory, tmp_path: Path):
    server = placement_sim_factory(placer="fluvio", brokers=UNBALANCED)
    code, remote, err = run(capsys, "place", "--bootstrap", server.bootstrap, "-p", "6", "-r", "3")
    assert code == 0, err
    cluster = tmp_path / "unbalanced.json"
    cluster.write_text(json.dumps([{"id": i, "rack": r} for i, r in UNBALANCED]))
    code, local, err = run(
        capsys, "place", "--placer", "fluvio", "--cluster", str(cluster), "-p", "6", "-r", "3"
    )
    assert code == 0, err
    assert remote.splitlines()[0] == f"{server.bootstrap}: 6 partition(s) x 3 replica(s) on 6 broker(s)"
    assert local.splitlines()[0] == "fluvio: 6 partition(s) x 3 replica(s) on 6 broker(s)"
    # Fluvio's documented unbalanced example: the same replica map and per-rack totals either way.
    assert remote.splitlines()[1:] == local.splitlines()[1:]
    replica_map = re.findall(r"^\|\s+(\d+)\s+\|\s+(\[[\d, ]+\])\s+\|$", remote, re.MULTILINE)
    assert replica_map == [
        ("0", "[3, 2, 0]"), ("1", "[2, 0, 4]"), ("2", "[0, 4, 1]"),
        ("3", "[4, 1, 5]"), ("4", "[1, 5, 3]"), ("5", "[5, 3, 2]"),
    ]  # fmt: skip
    assert "Leaders       1       2       3" in remote


def test_json_names_the_server_and_every_broker_with_its_rack(capsys, placement_sim_factory):
    server = placement_sim_factory(brokers=[(0, "a"), (1, "b"), (2, "c"), (3, "a", True)])
    code, out, err = run(
        capsys, "place", "--bootstrap", server.bootstrap, "-p", "2", "-r", "2",
        "--broker-ids", "0,1", "--start-partition", "4", "--topic", "orders", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["bootstrap"] == server.bootstrap
    assert [p["partition"] for p in doc["partitions"]] == [4, 5]
    assert all(sorted(p["replicas"]) == [0, 1] for p in doc["partitions"])
    assert [(b["id"], b["rack"], b["fenced"]) for b in doc["brokers"]] == [
        (0, "a", False), (1, "b", False), (2, "c", False), (3, "a", True),
    ]  # fmt: skip


def test_force_simple_asks_for_kafkas_classic_rack_unaware_placement(capsys, placement_sim_factory):
    server = placement_sim_factory(properties={"simulator.placer.legacy.fixed.start.index": "0"})
    code, out, err = run(
        capsys, "place", "--bootstrap", server.bootstrap, "-p", "3", "-r", "3", "--force-simple", "--json"
    )
    assert code == 0, err
    # Leader p, followers right after it: the rack-unaware walk from start index 0 (racks ignored).
    assert [p["replicas"] for p in json.loads(out)["partitions"]] == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]


def test_a_refusal_prints_the_error_name_and_the_servers_message(capsys, placement_sim_server):
    code, out, err = run(capsys, "place", "--bootstrap", placement_sim_server.bootstrap, "-p", "3", "-r", "7")
    assert code == 1
    assert out == ""
    assert err.strip() == (
        "placement-sim: INVALID_REPLICATION_FACTOR (38): The target replication factor of 7 cannot be "
        "reached because only 6 broker(s) are registered or some brokers have all their log directories cordoned."
    )
    code, out, err = run(
        capsys, "place", "--bootstrap", placement_sim_server.bootstrap, "-p", "0", "-r", "1", "--json"
    )
    assert code == 1
    error = json.loads(out)["error"]
    assert (error["code"], error["kind"]) == ("INVALID_PARTITIONS", "ErrorResponse")
    assert error["message"] == "Number of partitions was set to an invalid non-positive value: 0."


def test_options_for_in_process_placement_are_refused_with_bootstrap(capsys, placement_sim_server):
    code, out, err = run(
        capsys,
        "place",
        "--bootstrap",
        placement_sim_server.bootstrap,
        "-p",
        "1",
        "-r",
        "1",
        "--placer",
        "legacy",
        "--seed",
        "3",
    )
    assert code == 2
    assert "--placer, --seed: the server places with its own placer and brokers" in err
    code, out, err = run(capsys, "place", "-p", "1", "-r", "1", "--force-simple")
    assert code == 2
    assert "give --bootstrap" in err


def test_no_server_is_a_clear_error(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the command runs: nothing listens there
    code, out, err = run(
        capsys, "place", "--bootstrap", f"127.0.0.1:{port}", "-p", "1", "-r", "1", "--timeout", "5"
    )
    assert code == 1
    assert f"127.0.0.1:{port} refused" in err


@pytest.mark.parametrize(
    "args",
    [
        ["-p", "0", "-r", "1"],
        ["-p", "3", "-r", "7"],
        ["-p", "2", "-r", "2", "--broker-ids", "0,9"],
        ["-p", "2", "-r", "0"],
    ],
    ids=["no partitions", "too many replicas", "unknown broker", "no replicas"],
)
def test_in_process_and_server_refuse_alike(capsys, placement_sim_server, args):
    """Both go through the server's placement service: the same error and message for the same request."""
    code, local, _ = run(capsys, "place", *args, "--json")
    assert code == 1
    code, remote, _ = run(capsys, "place", "--bootstrap", placement_sim_server.bootstrap, *args, "--json")
    assert code == 1
    local_error, remote_error = json.loads(local)["error"], json.loads(remote)["error"]
    assert (local_error["code"], local_error["message"]) == (remote_error["code"], remote_error["message"])
