"""Random request sequences, the same to the real Kafka and to the simulator, compared field by field.

Each example is one sequence of the hypothesis state machine over the generator table
(harness/differential/generators.py): topics, partitions, configs, every kind of Produce, Fetch at every
version, ListOffsets' special timestamps, OffsetForLeaderEpoch, DeleteRecords, InitProducerId, groups,
ElectLeaders; on three brokers also reassignments and a broker's failure (SIGKILL / SIGSTOP / SIGTERM
against ``stop_broker`` crash / hang / controlled) compared at settled points. A difference that
docs/fidelity.md does not list fails with the step, both answers and the differing fields.

CI runs a bounded number of sequences (``DIFFERENTIAL_EXAMPLES_SINGLE`` / ``_THREE`` raise them);
``benchmarks/differential.py`` runs ten thousand and more.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from harness.differential.machine import machine_for

SINGLE_EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES_SINGLE", "30"))
THREE_EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES_THREE", "4"))
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


def test_single_broker_sequences_answer_as_kafka(differential_single) -> None:
    machine = machine_for(differential_single)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=SINGLE_EXAMPLES, stateful_step_count=20, deadline=None, suppress_health_check=_SLOW
        ),
    )
    assert differential_single.counts, "no step ran"
    assert sum(c.steps for c in differential_single.counts.values()) >= SINGLE_EXAMPLES


def test_three_broker_sequences_answer_as_kafka(differential_three_racks) -> None:
    machine = machine_for(differential_three_racks)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=THREE_EXAMPLES, stateful_step_count=12, deadline=None, suppress_health_check=_SLOW
        ),
    )
    assert sum(c.steps for c in differential_three_racks.counts.values()) >= THREE_EXAMPLES
