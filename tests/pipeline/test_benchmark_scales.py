"""The failure grid benchmark's size fit (benchmarks/pipeline.py ``--failure-scales``): where Spark overtakes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "pipeline.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("pipeline_benchmark", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fit_finds_the_fixed_cost_and_the_cost_per_run(bench) -> None:
    fixed, each = bench._fit([(200, 12.0), (400, 22.0), (800, 42.0)])
    assert fixed == pytest.approx(2.0)
    assert each == pytest.approx(0.05)


def test_spark_overtakes_where_the_two_lines_cross(bench, capsys) -> None:
    # Single process 2 s + 50 ms a run; Spark 20 s + 25 ms a run: equal at 720 runs.
    bench._report_scales([(200, 12.0, 25.0), (400, 22.0, 30.0), (1600, 82.0, 60.0)], "local[2]")
    out = capsys.readouterr().out
    assert "| 400                 |             22.0 |                 30.0 |  0.73 |" in out
    assert "single process 2.0s + 50.0 ms a run; Spark's job 20.0s + 25.0 ms a run" in out
    assert "Spark is the faster from about 720 runs" in out


def test_spark_never_overtakes_when_a_run_costs_it_as_much(bench, capsys) -> None:
    bench._report_scales([(200, 10.0, 25.0), (400, 20.0, 35.0)], "local[2]")
    assert "does not overtake at any size" in capsys.readouterr().out


def test_one_size_alone_prints_no_fit(bench, capsys) -> None:
    bench._report_scales([(200, 10.0, 25.0)], "local[2]")
    assert capsys.readouterr().out == ""
