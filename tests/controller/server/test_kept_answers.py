"""Answers kept for requests seen before (controller.dispatch.KeptAnswers): the same request again is answered
from them, with its own correlation id, without its handler; they follow the cluster (a change, and the
next request is worked out again); they are bounded; the requests are still counted and logged."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from controller import dispatch as dispatch_module
from controller.embedded import ServerThread
from controller.handlers import api_versions, metadata
from protocol import load_schemas
from protocol.client import BlockingClient
from protocol.framing import parse_response_header, response_header_version
from tests.support.rawwire import raw_connect, read_response, request_frame

SCHEMAS = load_schemas()


def ask(server: ServerThread, api_key: int, version: int, request: dict, correlation: int) -> dict:
    with raw_connect(server.bootstrap) as sock:
        sock.sendall(request_frame(api_key, version, request, correlation))
        frame = read_response(sock)
    assert frame is not None
    got, offset = parse_response_header(frame, response_header_version(SCHEMAS, api_key, version))
    assert got == correlation
    return SCHEMAS.response(api_key).decode(frame[offset:], version)


def create(server: ServerThread, name: str, partitions: int) -> None:
    with BlockingClient.connect(server.bootstrap) as client:
        topic = {
            "Name": name,
            "NumPartitions": partitions,
            "ReplicationFactor": 1,
            "Assignments": [],
            "Configs": [],
        }
        answer = client.send("CreateTopicsRequest", {"Topics": [topic], "timeoutMs": 5000})
    assert answer["Topics"][0]["ErrorCode"] == 0


def test_metadata_asked_again_is_answered_without_its_handler_until_the_cluster_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: Counter[str] = Counter()
    answer = metadata._answer

    def counting(ctx, image, entries, version):  # type: ignore[no-untyped-def]
        made[",".join(sorted(t.name if hasattr(t, "name") else t["Name"] for t in entries.result))] += 1
        return answer(ctx, image, entries, version)

    monkeypatch.setattr(metadata, "_answer", counting)
    with ServerThread.start(seed=1) as server:
        create(server, "orders", 2)
        named = {"Topics": [{"Name": "orders"}], "AllowAutoTopicCreation": False}
        first = ask(server, 3, 12, named, correlation=1)
        assert ask(server, 3, 12, named, correlation=2) == first
        assert ask(server, 3, 12, named, correlation=3) == first
        assert made["orders"] == 1
        ask(server, 3, 11, named, correlation=4)  # another version: worked out
        assert made["orders"] == 2
        create(server, "payments", 1)  # a change: worked out again, and it shows
        assert ask(server, 3, 12, named, correlation=5) == first
        assert made["orders"] == 3
        every = ask(server, 3, 12, {"Topics": None, "AllowAutoTopicCreation": False}, correlation=6)
        assert sorted(t["Name"] for t in every["Topics"]) == ["orders", "payments"]
        assert server.stats["requests:3"] == 6  # every request counted, kept answers too


def test_metadata_that_creates_topics_is_never_kept() -> None:
    with ServerThread.start(seed=1, properties={"auto.create.topics.enable": "true"}) as server:
        request = {"Topics": [{"Name": "made-on-demand"}], "AllowAutoTopicCreation": True}
        first = ask(server, 3, 12, request, correlation=1)
        again = ask(server, 3, 12, request, correlation=2)
    assert first["Topics"][0]["ErrorCode"] == 0 and again["Topics"][0]["ErrorCode"] == 0
    assert first["Topics"][0]["TopicId"] == again["Topics"][0]["TopicId"]


def test_api_versions_is_worked_out_once_per_request_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    handle = api_versions.handle

    def counting(ctx, request, version):  # type: ignore[no-untyped-def]
        calls.append(request.get("ClientSoftwareName", ""))
        return handle(ctx, request, version)

    monkeypatch.setattr(api_versions, "handle", counting)  # before the server loads its handlers
    with ServerThread.start(seed=1) as server:
        good = {"ClientSoftwareName": "tool", "ClientSoftwareVersion": "1.0"}
        bad = {"ClientSoftwareName": "bad name", "ClientSoftwareVersion": "1.0"}
        answers = [ask(server, 18, 3, good, correlation=i) for i in range(3)]
        refused = [ask(server, 18, 3, bad, correlation=10 + i) for i in range(2)]
        v0 = [ask(server, 18, 0, {}, correlation=20 + i) for i in range(2)]
    assert calls == ["tool", "bad name", ""]
    assert answers[0] == answers[1] == answers[2] and answers[0]["ErrorCode"] == 0
    assert [a["ErrorCode"] for a in refused] == [42, 42]  # INVALID_REQUEST, both times
    assert v0[0] == v0[1] and {k["ApiKey"] for k in v0[0]["ApiKeys"]} >= {3, 18, 68}


def test_kept_answers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch_module, "KEPT_ANSWERS", 10)
    with ServerThread.start(seed=1) as server:
        for i in range(40):
            request = {"Topics": [{"Name": f"unknown-{i}"}], "AllowAutoTopicCreation": False}
            answer = ask(server, 3, 12, request, correlation=i)
            assert [(t["Name"], t["ErrorCode"]) for t in answer["Topics"]] == [(f"unknown-{i}", 3)]
        image = server.server.controller.current_image()
        assert image is not None
        kept = image.derived[dispatch_module.KeptAnswers]
        assert isinstance(kept, dispatch_module.KeptAnswers) and len(kept.answers) == 10


def test_a_kept_answer_is_still_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with ServerThread.start(seed=1) as server, caplog.at_level(logging.DEBUG, logger="controller.dispatch"):
        for i in range(2):
            ask(server, 18, 2, {}, correlation=100 + i)
    lines = [r.getMessage() for r in caplog.records if "apiKey 18 v2 correlation" in r.getMessage()]
    assert [line.split("correlation ")[1].split()[0] for line in lines] == ["100", "101"]
