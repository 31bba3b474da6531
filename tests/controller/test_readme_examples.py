"""The docs' failover test is the suite's own, word for word; their election policy plugin, as printed
there, passes the conformance kit and elects as its docstring says."""

from __future__ import annotations

from pathlib import Path

from controller.election.testing import check_policy
from controller.embedded import ServerThread
from tests.support.docs import every_block, find_block

ROOT = Path(__file__).parents[2]
FAILOVER_TEST = ROOT / "tests/controller/dynamics/test_readme_failover.py"


def readme_block(first_line: str) -> str:
    return find_block(first_line)


def test_the_readme_failover_test_is_the_one_the_suite_runs() -> None:
    assert FAILOVER_TEST.read_text() in [block.text for block in every_block()]


def test_the_readme_policy_passes_the_conformance_kit(tmp_path: Path) -> None:
    path = tmp_path / "most_data.py"
    path.write_text(readme_block("# most_data.py"))
    report = check_policy(f"{path}:MostData", max_examples=100)
    assert report.passed and report.stats["elected"] > 0


def test_the_readme_policy_elects_the_replica_with_the_most_records(tmp_path: Path) -> None:
    path = tmp_path / "most_data.py"
    path.write_text(readme_block("# most_data.py"))
    brokers = [(0, "a"), (1, "b"), (2, "c")]
    with ServerThread.start(brokers=brokers, clock="virtual", policy=f"{path}:MostData") as server:
        server.call(lambda: server.server.controller.cluster.add_topic("orders", [[0, 1, 2]]))
        server.set_replication(1, records_per_s=0)  # broker 1's followers copy nothing
        server.set_log_end_offset("orders", 0, 0, 10)
        server.advance(100)  # a replication tick: broker 2 copies the 10 records, broker 1 none
        assert server.partition_state("orders", 0).log_end_offsets == {0: 10, 1: 0, 2: 10}
        server.stop_broker(0, "crash")
        server.advance(9000)
        state = server.partition_state("orders", 0)
    assert (state.leader, state.isr) == (2, (1, 2))  # Kafka's policy would elect 1, first in the ISR
