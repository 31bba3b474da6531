"""Cluster files: the brokers and existing assignments for ``--cluster FILE``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from controller.placement.api import UsableBroker
from placement_sim.cli.clusterfile import ClusterFileError, load_cluster_file


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    return path


def test_full_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "brokers": [
                {"id": 0, "rack": "/dc1/r1"},
                {"id": 1, "rack": "/dc1/r2", "fenced": True},
                {"id": 2},
            ],
            "assignments": {"orders": [[0, 1], [1, 2]], "events": {"0": [2, 0], "3": [0]}},
        },
    )
    cluster = load_cluster_file(path)
    assert cluster.brokers == (
        UsableBroker(0, "/dc1/r1", False),
        UsableBroker(1, "/dc1/r2", True),
        UsableBroker(2, None, False),
    )
    assert dict(cluster.assignments) == {
        ("orders", 0): (0, 1),
        ("orders", 1): (1, 2),
        ("events", 0): (2, 0),
        ("events", 3): (0,),
    }


def test_plain_list_of_brokers(tmp_path: Path) -> None:
    cluster = load_cluster_file(write(tmp_path, [{"id": 5, "rack": "r1"}, {"id": 7, "rack": None}, 9]))
    assert cluster.brokers == (
        UsableBroker(5, "r1", False),
        UsableBroker(7, None, False),
        UsableBroker(9, None, False),
    )
    assert dict(cluster.assignments) == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"brokers": []}, '"brokers" must be a non-empty list'),
        ({"broker": [{"id": 0}]}, r"unknown key\(s\) \['broker'\]"),
        ([{"id": 0}, {"id": "1"}], r'brokers\[1\]: "id" must be a non-negative integer'),
        ([{"id": 0}, {"id": -1}], r'brokers\[1\]: "id" must be a non-negative integer, got -1'),
        ([{"id": 0}, {"id": 0}], r"brokers\[1\]: broker id 0 appears twice"),
        ([{"id": 0, "rack": 3}], r'brokers\[0\]: "rack" must be a non-empty string or null'),
        ([{"id": 0, "fenced": "yes"}], r'brokers\[0\]: "fenced" must be true or false'),
        ([{"id": 0, "racks": "r1"}], r"brokers\[0\]: unknown key\(s\) \['racks'\]"),
        ([{"rack": "r1"}], r'brokers\[0\]: missing "id"'),
        ([["r1"]], r"brokers\[0\]: expected an object"),
        (
            {"brokers": [0, 1], "assignments": {"t": [[0, 7]]}},
            r"assignments\['t'\]\[0\]: unknown broker id\(s\) \[7\]",
        ),
        (
            {"brokers": [0, 1], "assignments": {"t": [[0, 0]]}},
            r"assignments\['t'\]\[0\]: a broker appears twice",
        ),
        (
            {"brokers": [0, 1], "assignments": {"t": [[]]}},
            r"assignments\['t'\]\[0\]: expected a non-empty list",
        ),
        ({"brokers": [0, 1], "assignments": {"t": {"x": [0]}}}, r"assignments\['t'\]: partition 'x' is not"),
        (
            {"brokers": [0, 1], "assignments": {"t": 3}},
            r"assignments\['t'\]: expected a list of replica lists",
        ),
        ({"brokers": [0, 1], "assignments": []}, r"assignments: expected an object"),
        ("brokers", 'expected an object with "brokers"'),
    ],
)
def test_errors_name_the_file_and_the_entry(tmp_path: Path, data: object, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(ClusterFileError, match=message) as info:
        load_cluster_file(path)
    assert str(info.value).startswith(str(path))


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match=r"cannot read cluster file .*missing\.json"):
        load_cluster_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"brokers": [\n{"id": 0},\n]}')
    # The json module's wording and position for a trailing comma changed in Python 3.13.
    if sys.version_info >= (3, 13):
        where = "Illegal trailing comma before end of array at line 2 column 10"
    else:
        where = "Expecting value at line 3 column 1"
    with pytest.raises(ClusterFileError) as info:
        load_cluster_file(bad)
    assert str(info.value) == f"{bad}: not valid JSON: {where}"
