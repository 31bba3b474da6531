"""Kafka's own placement and election code, in one long-lived JVM (harness/java/.../KafkaRules.java).

``KafkaRules().ask([...])`` sends questions as JSON lines and returns the answers in order: the questions
go in from a thread of their own while the answers are read, so a batch of thousands costs one round
trip. Every batch is bounded by a timeout; a JVM that does not answer in time is killed and the call
raises.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from harness.jvm import harness_classes, java_command

__all__ = ["KafkaRules", "KafkaRulesError"]

MAIN = "placementsim.reference.KafkaRules"


class KafkaRulesError(RuntimeError):
    """The JVM failed, died or did not answer in time."""


class KafkaRules:
    """The JVM running Kafka's ``StripedReplicaPlacer`` and ``PartitionChangeBuilder`` (see the Java class
    for the questions it answers). A context manager; :meth:`close` ends the JVM."""

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        command = java_command(MAIN, extra_classpath=[harness_classes()])
        # stderr: SLF4J's note that it has no logger binding; nothing else is written there.
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1 << 16,
        )
        self._lock = threading.Lock()
        self.version: Mapping[str, Any] = self.ask([{"op": "version"}])[0]

    def __enter__(self) -> KafkaRules:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ask(self, questions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The answers to ``questions``, in order; KafkaRulesError when the JVM fails one or all."""
        if not questions:
            return []
        process = self._process
        if process.poll() is not None:
            raise KafkaRulesError(f"the JVM has ended (exit status {process.returncode})")
        assert process.stdin is not None and process.stdout is not None
        payload = "".join(json.dumps(q, separators=(",", ":")) + "\n" for q in questions)
        with self._lock:
            timer = threading.Timer(self.timeout, process.kill)
            writer = threading.Thread(target=self._write, args=(payload,), daemon=True)
            timer.start()
            writer.start()
            try:
                lines = [process.stdout.readline() for _ in questions]
            finally:
                timer.cancel()
                writer.join(self.timeout)
        if not all(lines):
            raise KafkaRulesError(
                f"the JVM gave no answer within {self.timeout:.0f} s (exit status {process.poll()})"
            )
        answers = [json.loads(line) for line in lines]
        for question, answer in zip(questions, answers, strict=True):
            if "failed" in answer:
                raise KafkaRulesError(f"{answer['failed']}: {answer['message']} (question: {question})")
        return answers

    def _write(self, payload: str) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(payload)
            stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the JVM died: the reader sees its stdout end

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(timeout=10)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                process.kill()
                process.wait(timeout=10)
