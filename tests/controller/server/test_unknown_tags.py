"""Requests holding tagged fields their spec does not know: answered, counted, and logged once each with
where the fields are; the decoders report finding them, so that a clean body is not walked to look."""

from __future__ import annotations

import logging

from protocol import UNKNOWN_TAGGED_FIELDS
from protocol.codes import ApiKey
from tests.support.rawwire import raw_connect, read_response, request_frame


def _commit(
    metadata: str, partition_tags: dict[int, bytes] | None, top_tags: dict[int, bytes] | None
) -> dict:
    """An OffsetCommit v8 body; ``*_tags``: unknown tagged fields of the first partition, of the body."""
    partitions = [
        {"PartitionIndex": index, "CommittedOffset": 5, "CommittedMetadata": metadata} for index in range(2)
    ]
    if partition_tags:
        partitions[0][UNKNOWN_TAGGED_FIELDS] = partition_tags
    body = {
        "GroupId": "g",
        "GenerationIdOrMemberEpoch": -1,
        "MemberId": "",
        "Topics": [{"Name": "t", "Partitions": partitions}],
    }
    if top_tags:
        body[UNKNOWN_TAGGED_FIELDS] = top_tags
    return body


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "unknown tagged field" in r.getMessage()]


def test_unknown_tags_are_logged_with_where_they_are(placement_sim, caplog):
    caplog.set_level(logging.WARNING)
    before = placement_sim.stats["requests:unknown tagged fields"]
    with raw_connect(placement_sim.bootstrap) as sock:
        host, port = sock.getsockname()
        sock.sendall(request_frame(8, 8, _commit("", None, None), 1))
        assert read_response(sock) is not None
        assert _warnings(caplog) == []
        sock.sendall(request_frame(8, 8, _commit("", {7: b"ab"}, {5: b""}), 2))
        assert read_response(sock) is not None
        # A body above controller.offload.BIG_BODY (32 KiB) is decoded in a worker thread.
        sock.sendall(request_frame(8, 8, _commit("m" * 20_000, {9: b"\x01"}, None), 3))
        assert read_response(sock) is not None
        sock.sendall(request_frame(8, 8, _commit("m" * 20_000, None, None), 4))
        assert read_response(sock) is not None
    shown = f"{host}:{port}"
    assert _warnings(caplog) == [
        f"{shown}: apiKey 8 v8: unknown tagged field(s) ignored: body: tag(s) [5], "
        "Topics[0].Partitions[0]: tag(s) [7]",
        f"{shown}: apiKey 8 v8: unknown tagged field(s) ignored: Topics[0].Partitions[0]: tag(s) [9]",
    ]
    assert placement_sim.stats["requests:unknown tagged fields"] == before + 2


def test_a_body_a_fault_read_for_its_names_is_still_checked_for_unknown_tags(placement_sim, caplog):
    """A fault that names a topic in the body makes the faults decode it (the codec, for OffsetCommit); the
    dispatch answers from that decode, and says where its unknown tags are as when it decodes itself."""
    caplog.set_level(logging.WARNING)
    fault = placement_sim.server.faults.inject_error(
        ApiKey.OFFSET_COMMIT, "NOT_COORDINATOR", topic="t", partition=7
    )
    try:
        with raw_connect(placement_sim.bootstrap) as sock:
            host, port = sock.getsockname()
            sock.sendall(request_frame(8, 8, _commit("", None, None), 1))
            assert read_response(sock) is not None
            sock.sendall(request_frame(8, 8, _commit("", {7: b"ab"}, None), 2))
            assert read_response(sock) is not None
    finally:
        placement_sim.server.faults.clear()
    assert (fault.calls, fault.fired) == (0, 0)  # partition 7 is in neither body
    assert _warnings(caplog) == [
        f"{host}:{port}: apiKey 8 v8: unknown tagged field(s) ignored: Topics[0].Partitions[0]: tag(s) [7]"
    ]
