"""Kafka's own command-line tools, run as a user types them, from the jars of ``make reference``.

Kafka's distribution starts each tool with a shell script (``bin/kafka-topics.sh``) that runs one class of
``kafka-tools`` on its class path with the tools' logging configuration; the published jars have no such
scripts, so :func:`write_scripts` writes one per tool, of the same name, that does the same.
:func:`run_tool` runs one directly.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.jvm import KAFKA_LOGGING, ROOT, java_command

__all__ = ["LOGGING", "TOOLS", "run_tool", "tool_command", "write_scripts"]

#: The tools' scripts in Kafka's distribution and the class each runs.
TOOLS: Mapping[str, str] = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs.sh": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-producer.sh": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups.sh": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-reassign-partitions.sh": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election.sh": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-get-offsets.sh": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records.sh": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs.sh": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-transactions.sh": "org.apache.kafka.tools.TransactionsCommand",
}

#: The tools' logging, as the distribution's ``config/tools-log4j2.yaml`` sets it: warnings on stderr.
LOGGING = ROOT / "harness" / "kafka" / "tools-log4j2.yaml"


def tool_command(script: str, args: Sequence[str] = ()) -> list[str]:
    """The command line ``bin/<script> args`` runs in Kafka's distribution: its class, with the SLF4J
    binding the distribution has (``make reference`` fetches it) and the tools' logging configuration."""
    return java_command(
        TOOLS[script],
        args,
        jvm_options=[f"-Dlog4j2.configurationFile={LOGGING}"],
        extra_classpath=[KAFKA_LOGGING / "*"],
    )


def run_tool(
    script: str, args: Sequence[str] = (), *, input: str | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Runs a tool to its end (bounded by ``timeout``): its exit status, stdout and stderr."""
    return subprocess.run(
        tool_command(script, args), input=input, capture_output=True, text=True, timeout=timeout, check=False
    )


def write_scripts(directory: Path) -> list[Path]:
    """One executable script per tool in ``directory``, named as in Kafka's ``bin/``."""
    written = []
    for script in TOOLS:
        path = directory / script
        command = " ".join(shlex.quote(part) for part in tool_command(script))
        path.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        path.chmod(0o755)
        written.append(path)
    return written
