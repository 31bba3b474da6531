"""benchmarks/scale.py at small sizes, so that it cannot rot: its tables are printed and their figures are
sane (every request answered, every partition listed, every producer answered and kept). Its timings are
the benchmark's to judge, not this test's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _row(out: str, first: str) -> list[str]:
    for line in out.splitlines():
        if line.startswith(f"| {first} |"):
            return [cell.strip() for cell in line.strip("|").split("|")]
    raise AssertionError(f"no row {first!r} in:\n{out}")


def _number(cell: str) -> float:
    match = re.match(r"[\d,.]+", cell)
    assert match, cell
    return float(match.group().replace(",", ""))


def test_the_scale_benchmark_prints_its_tables_at_small_sizes() -> None:
    sizes = ["--connections", "40", "--client-processes", "2", "--seconds", "2"]
    sizes += ["--partitions", "3000", "--brokers", "12", "--producers", "120", "--producer-connections", "4"]
    done = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--rounds", "1", *sizes],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr  # 1: a timing target missed on a loaded machine
    for server in ("placement-sim", "librdkafka mock"):
        _, p50, p99, first, unanswered, cores, rss, per_connection, clients, idle, _ = _row(out, server)
        assert 0 < _number(p50) <= _number(p99), out
        assert unanswered == "0", out
        assert _number(rss) > 10 and _number(idle) > 0, out
    listed = _row(out, "Partitions listed (first round)")
    assert listed[1] == "3,000" and listed[2] == "3,000: met", out
    assert 500 < _number(_row(out, "Server RSS per partition")[1]) < 100_000, out
    assert "MB)" in _row(out, "Metadata of all topics, first")[1], out
    producer_rows = [line for line in out.splitlines() if line.startswith("| placement-sim | 100 |")]
    assert len(producer_rows) == 1, out
    cells = [cell.strip() for cell in producer_rows[0].strip("|").split("|")]
    assert cells[7] == "0" and cells[8] == "2 of 2", out  # no error; producers 0 and 100 of partition 0
    mock = [line for line in out.splitlines() if line.startswith("| librdkafka mock | 4 |")]
    assert len(mock) == 1 and mock[0].split("|")[8].strip() == "0", out
