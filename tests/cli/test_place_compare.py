"""``placement-sim place`` and ``placement-sim compare``: what a user sees on the terminal."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.placement.api import UsableBroker
from placement_sim.cli.commands.place import render_placement
from placement_sim.cli.main import main
from tests.support.placers import placer_file

REPO = Path(__file__).resolve().parents[2]

# Fluvio's "Replica Assignment" documentation, unbalanced racks: racks of 1, 2 and 3 SPUs.
UNBALANCED = [
    {"id": 0, "rack": "rack-a"},
    {"id": 1, "rack": "rack-b"},
    {"id": 2, "rack": "rack-b"},
    {"id": 3, "rack": "rack-c"},
    {"id": 4, "rack": "rack-c"},
    {"id": 5, "rack": "rack-c"},
]
MULTI_LEVEL = [{"id": i, "rack": f"/dc{i % 3 + 1}/r{i // 3 % 2 + 1}"} for i in range(12)]


@pytest.fixture
def unbalanced(tmp_path: Path) -> str:
    path = tmp_path / "unbalanced.json"
    path.write_text(json.dumps(UNBALANCED))
    return str(path)


@pytest.fixture
def multi_level(tmp_path: Path) -> str:
    path = tmp_path / "dcs.json"
    path.write_text(json.dumps({"brokers": MULTI_LEVEL}))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_place_prints_the_seed_tables(capsys: pytest.CaptureFixture[str], unbalanced: str) -> None:
    code, out, err = run(capsys, "place", "-p", "6", "-r", "3", "--placer", "fluvio", "--cluster", unbalanced)
    assert code == 0, err
    assert out.startswith("fluvio: 6 partition(s) x 3 replica(s) on 6 broker(s)\n")
    replica_map = [
        "| Partition |  Replicas   |",
        "|       0   |  [3, 2, 0]  |",
        "|       3   |  [4, 1, 5]  |",
        "|       5   |  [5, 3, 2]  |",
    ]
    per_rack = [
        "Partition |   Replicas    rack-a  rack-b  rack-c",
        "       0  |   [3, 2, 0]   [ ] 1   [ ] 1   [1]",
        "       1  |   [2, 0, 4]   [ ] 2   [1] 1   [1] 1",
        "       5  |   [5, 3, 2]   [1] 2   [2] 4   [3] 6",
    ]
    lines = out.splitlines()
    for line in replica_map + per_rack:
        assert line in lines
    assert lines.index(replica_map[0]) < lines.index(per_rack[0])
    leaders = next(line for line in lines if line.strip().startswith("Leaders"))
    followers = next(line for line in lines if line.strip().startswith("Followers"))
    assert leaders.split()[1:] == ["1", "2", "3"]
    assert followers.split()[1:] == ["2", "4", "6"]


# Fluvio's "Replica Assignment" documentation, balanced racks, as it prints the replica map with leaders
# and followers per SPU (4 racks x 3 SPUs, 12 partitions x 4 replicas).
DOCUMENTED_BALANCED_TABLE = """\
       0  |   [ 0, 4, 8, 9]      [1]     [ ] 1   [ ] 1   [ ] 1
       1  |   [ 4, 8, 9, 1]      [1] 1   [1] 1   [ ] 2   [ ] 2
       2  |   [ 8, 9, 1, 5]      [1] 2   [1] 2   [1] 2   [ ] 3
       3  |   [ 9, 1, 5, 6]      [1] 3   [1] 3   [1] 3   [1] 3
       4  |   [ 1, 5, 6,10]      [2] 3   [1] 4   [1] 4   [1] 4
       5  |   [ 5, 6,10, 2]      [2] 4   [2] 4   [1] 5   [1] 5
       6  |   [ 6,10, 2, 3]      [2] 5   [2] 5   [2] 5   [1] 6
       7  |   [10, 2, 3, 7]      [2] 6   [2] 6   [2] 6   [2] 6
       8  |   [ 2, 3, 7,11]      [3] 6   [2] 7   [2] 7   [2] 7
       9  |   [ 3, 7,11, 0]      [3] 7   [3] 7   [2] 8   [2] 8
      10  |   [ 7,11, 0, 4]      [3] 8   [3] 8   [3] 8   [2] 9
      11  |   [11, 0, 4, 8]      [3] 9   [3] 9   [3] 9   [3] 9
                    Leaders        3       3       3       3
                    Followers      9       9       9       9
"""


def table_rows(text: str) -> list[tuple[str, ...]]:
    """Partition rows as (partition, replicas, cells...) and the totals rows, spacing ignored."""
    rows: list[tuple[str, ...]] = []
    for line in text.splitlines():
        row = re.match(r"^\s*(\d+)\s+\|\s+\[([\d, ]+)\](.*)$", line)
        if row:
            replicas = ",".join(r.strip() for r in row[2].split(","))
            cells = re.findall(r"\[([ \d]+)\](?: (\d+))?", row[3])
            rows.append((row[1], replicas, *(f"{lead.strip()}/{follow}" for lead, follow in cells)))
        elif line.strip().startswith(("Leaders", "Followers")):
            rows.append(tuple(line.split()))
    return rows


def test_place_reproduces_the_seed_example_1_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "balanced.json"
    path.write_text(json.dumps([{"id": i, "rack": f"rack-{'abcd'[i // 3]}"} for i in range(12)]))
    code, out, err = run(capsys, "place", "-p", "12", "-r", "4", "--placer", "fluvio", "--cluster", str(path))
    assert code == 0, err
    per_rack = out.split("running totals", 1)[1]
    assert "Partition |   Replicas        rack-a  rack-b  rack-c  rack-d" in per_rack
    assert table_rows(per_rack) == table_rows(DOCUMENTED_BALANCED_TABLE)
    assert len(table_rows(per_rack)) == 14


def test_place_json(capsys: pytest.CaptureFixture[str], unbalanced: str) -> None:
    code, out, _ = run(
        capsys, "place", "-p", "2", "-r", "3", "--placer", "fluvio", "--cluster", unbalanced,
        "--start-partition", "4", "--set", "simulator.placer.fluvio.start.index=4", "--json",
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc["placer"] == "fluvio"
    assert doc["partitions"] == [
        {"partition": 4, "replicas": [1, 5, 3]},
        {"partition": 5, "replicas": [5, 3, 2]},
    ]
    assert doc["racks"] == [
        {"rack": "rack-a", "brokers": [0], "leaders": 0, "followers": 0},
        {"rack": "rack-b", "brokers": [1, 2], "leaders": 1, "followers": 1},
        {"rack": "rack-c", "brokers": [3, 4, 5], "leaders": 1, "followers": 3},
    ]
    assert doc["brokers"][5] == {"id": 5, "rack": "rack-c", "fenced": False, "leaders": 1, "followers": 1}


def test_place_on_the_default_cluster_with_a_seed_is_repeatable(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "place", "-p", "12", "-r", "3", "--seed", "9")
    second = run(capsys, "place", "-p", "12", "-r", "3", "--seed", "9")
    assert first == second
    assert first[0] == 0
    assert "striped: 12 partition(s) x 3 replica(s) on 6 broker(s)" in first[1]
    assert "rack-1  rack-2  rack-3" in first[1]


def test_place_broker_ids_and_topic(capsys: pytest.CaptureFixture[str], multi_level: str) -> None:
    code, out, _ = run(
        capsys, "place", "-p", "4", "-r", "2", "--placer", "multi-level", "--cluster", multi_level,
        "--broker-ids", "0,1,2", "--topic", "orders", "--seed", "1", "--json",
    )  # fmt: skip
    assert code == 0
    for partition in json.loads(out)["partitions"]:
        assert set(partition["replicas"]) <= {0, 1, 2}


def test_place_errors_name_the_error_and_exit_non_zero(
    capsys: pytest.CaptureFixture[str], unbalanced: str
) -> None:
    code, out, err = run(capsys, "place", "-p", "3", "-r", "8", "--placer", "fluvio", "--cluster", unbalanced)
    assert code == 1 and out == ""
    assert (
        err.strip()
        == "placement-sim: InvalidReplicationFactorError (INVALID_REPLICATION_FACTOR): need 2 more SPU"
    )
    code, out, err = run(
        capsys, "place", "-p", "3", "-r", "2", "--placer", "multi-level", "--cluster", unbalanced
    )
    assert code == 1  # the placer does not apply to flat rack ids: it says so with the wire error
    assert "PlacerNotApplicableError (REPLICA_PLACEMENT_FAILED)" in err and "starting with '/'" in err
    code, out, _ = run(capsys, "place", "-p", "3", "-r", "8", "--placer", "fluvio", "--json")
    assert code == 1
    assert json.loads(out)["error"] == {
        "kind": "InvalidReplicationFactorError",
        "code": "INVALID_REPLICATION_FACTOR",
        "message": "need 2 more SPU",
    }
    code, _, err = run(capsys, "place", "-p", "1", "-r", "1", "--placer", "no-such-placer")
    assert code == 2 and err.startswith("placement-sim: unknown placer 'no-such-placer'")


def test_place_bad_cluster_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('[{"id": 0}, {"id": 0}]')
    code, _, err = run(capsys, "place", "-p", "1", "-r", "1", "--cluster", str(path))
    assert code == 2
    assert err.strip() == f"placement-sim: {path}: brokers[1]: broker id 0 appears twice"


def test_place_defers_to_the_default_and_rejects_malformed_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plugin = tmp_path / "plugins.py"
    plugin.write_text(
        "from controller.placement.api import ReplicaPlacer\n"
        "class Deferring(ReplicaPlacer):\n"
        "    def place(self, spec, cluster):\n"
        "        return None\n"
        "class Repeating(ReplicaPlacer):\n"
        "    def place(self, spec, cluster):\n"
        "        return [[0, 0]] * spec.num_partitions\n"
    )
    deferred = run(
        capsys, "place", "-p", "5", "-r", "2", "--placer", f"{plugin}:Deferring", "--seed", "4", "--json"
    )
    striped = run(capsys, "place", "-p", "5", "-r", "2", "--placer", "striped", "--seed", "4", "--json")
    assert deferred[0] == 0
    assert json.loads(deferred[1])["partitions"] == json.loads(striped[1])["partitions"]
    code, _, err = run(capsys, "place", "-p", "2", "-r", "2", "--placer", f"{plugin}:Repeating")
    assert code == 1
    assert (
        "MalformedPlacement (REPLICA_PLACEMENT_FAILED)" in err and "partition 0 repeats broker(s) [0]" in err
    )


def test_render_placement_without_racks_has_a_column_per_broker() -> None:
    brokers = [UsableBroker(i, None, False) for i in (0, 1, 2)]
    text = render_placement(brokers, 0, [[0, 1], [1, 2], [2, 0]])
    lines = text.splitlines()
    assert "[leaders] followers per broker, running totals" in lines
    assert any(line.split()[:5] == ["Partition", "|", "Replicas", "broker", "0"] for line in lines)
    assert "       1  |   [1, 2]     [1]       [1] 1     [ ] 1" in lines
    assert "       2  |   [2, 0]     [1] 1     [1] 1     [1] 1" in lines


def test_compare_prints_metrics_side_by_side(capsys: pytest.CaptureFixture[str], multi_level: str) -> None:
    code, out, err = run(
        capsys, "compare", "-p", "60", "-r", "3", "--cluster", multi_level, "--seed", "5",
        "--placers", "striped,fluvio,multi-level",
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    header = next(line for line in lines if line.split() == ["striped", "fluvio", "multi-level"])
    assert header
    rows = {line.split()[0]: line.split()[1:] for line in lines if line and line.split()[0] != "striped"}
    assert rows["placed"] == ["yes", "yes", "yes"]
    assert rows["partitions"] == ["60", "60", "60"]
    assert rows["replicas"] == ["180", "180", "180"]
    assert rows["racks"] == ["6", "6", "6"]
    # Multi-level spreads every partition over the three data centres: losing one leaves none offline.
    assert rows["rack_failure_max_offline_partitions"][2] == "0"
    assert rows["rack_violations"][2] == "0"


def test_a_placer_that_does_not_apply_is_not_applicable_and_the_comparison_succeeds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The default cluster's racks are flat names: multi-level does not apply, which is no error.
    code, out, _ = run(capsys, "compare", "-p", "6", "-r", "3", "--seed", "1")
    assert code == 0
    lines = out.splitlines()
    placed = next(line for line in lines if line.startswith("placed")).split()
    assert placed == ["placed", "yes", "yes", "yes", "yes", "n/a", "[5]"]
    assert (
        "[5] multi-level: not applicable: Multi-level rack awareness needs every rack id to be a path "
        "starting with '/' (like /dc1/rack2): broker 0 has 'rack-1'"
    ) in out
    code, out, _ = run(capsys, "compare", "-p", "6", "-r", "3", "--placers", "fluvio,multi-level", "--json")
    assert code == 0
    multi_level = json.loads(out)["placers"][1]
    assert multi_level["not_applicable"].startswith("Multi-level rack awareness needs every rack id")
    assert multi_level["error"]["code"] == "REPLICA_PLACEMENT_FAILED"


def test_a_placer_that_fails_is_shown_with_its_error_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    raising = placer_file("Raising")
    code, out, _ = run(
        capsys, "compare", "-p", "6", "-r", "3", "--placers", f"fluvio,multi-level,{raising}", "--seed", "1"
    )
    assert code == 1
    lines = out.splitlines()
    placed = next(line for line in lines if line.startswith("placed")).split()
    assert placed == ["placed", "yes", "n/a", "[2]", "no", "[3]"]
    assert any(
        line.startswith("[2] multi-level: not applicable: Multi-level rack awareness") for line in lines
    )
    assert any(
        line.startswith(f"[3] {raising}: ReplicaPlacementError (REPLICA_PLACEMENT_FAILED)") for line in lines
    )


def test_compare_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = tmp_path / "c.json"
    cluster.write_text(json.dumps({"brokers": UNBALANCED, "assignments": {"old": [[0, 1, 3]]}}))
    code, out, _ = run(
        capsys,
        "compare",
        "-p",
        "6",
        "-r",
        "3",
        "--cluster",
        str(cluster),
        "--placers",
        "fluvio,fluvio-fair",
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert [p["placer"] for p in doc["placers"]] == ["fluvio", "fluvio-fair"]
    fluvio = doc["placers"][0]["metrics"]
    assert fluvio["summary"]["partitions"] == 7  # the existing partition counts too
    assert fluvio["summary"]["rack_violations"] == 3
    assert {r["rack"]: r["leaders"] for r in fluvio["racks"]} == {"rack-a": 2, "rack-b": 2, "rack-c": 3}


def test_the_installed_command(unbalanced: str) -> None:
    exe = Path(sys.executable).parent / "placement-sim"
    proc = subprocess.run(
        [str(exe), "place", "-p", "6", "-r", "3", "--placer", "fluvio", "--cluster", unbalanced],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "|       3   |  [4, 1, 5]  |" in proc.stdout.splitlines()
