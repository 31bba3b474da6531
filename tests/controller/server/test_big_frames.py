"""Big frames (controller.connection.BIG_FRAME and up) are read into a buffer of their own: sent in
pieces they are answered as any other frame, in order with the frames after them, and one cut off
mid-way closes its connection as a disconnect mid-request and gives back every byte it held."""

from __future__ import annotations

import socket
import struct
import time

from controller.connection import BIG_FRAME
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

NAMES = [f"absent-{i:05d}" for i in range(6000)]


def big_metadata(correlation: int) -> bytes:
    frame = request_frame(
        3, 12, {"Topics": [{"Name": n} for n in NAMES], "AllowAutoTopicCreation": False}, correlation
    )
    assert len(frame) > 2 * BIG_FRAME
    return frame


def api_versions(correlation: int) -> bytes:
    return request_frame(18, 3, {"ClientSoftwareName": "big", "ClientSoftwareVersion": "1"}, correlation)


def test_a_big_frame_sent_in_pieces_is_answered_in_order_with_the_frames_after_it(placement_sim_server):
    sock = raw_connect(placement_sim_server.bootstrap)
    data = big_metadata(1) + api_versions(2) + big_metadata(3)
    for start in range(0, len(data), 50_000):
        sock.sendall(data[start : start + 50_000])
        time.sleep(0.01)
    for correlation in (1, 2, 3):
        frame = read_response(sock)
        assert frame is not None and struct.unpack_from(">i", frame)[0] == correlation
        if correlation == 2:
            assert SCHEMAS.response(18).decode(frame[4:], 3)["ErrorCode"] == 0
        else:
            topics = SCHEMAS.response(3).decode(frame[5:], 12)["Topics"]
            assert [t["Name"] for t in topics] == NAMES
            assert {t["ErrorCode"] for t in topics} == {3}  # UNKNOWN_TOPIC_OR_PARTITION
    sock.close()


def test_a_big_frame_cut_off_midway_closes_its_connection_and_holds_nothing(placement_sim_server):
    sock = raw_connect(placement_sim_server.bootstrap)
    frame = big_metadata(1)
    sock.sendall(frame[: len(frame) // 2])
    time.sleep(0.2)  # the server is reading the frame's rest into its own buffer by now
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    server = placement_sim_server.server
    deadline = time.monotonic() + 20
    while (
        placement_sim_server.stats["closed:disconnected mid-request"] == 0 or server.held_bytes
    ) and time.monotonic() < deadline:
        time.sleep(0.02)
    closes = {k: v for k, v in placement_sim_server.stats.items() if k.startswith("closed:")}
    assert closes == {"closed:disconnected mid-request": 1}
    assert server.held_bytes == 0
    good = raw_connect(placement_sim_server.bootstrap)
    good.sendall(api_versions(7))
    answer = read_response(good)
    assert answer is not None and struct.unpack_from(">i", answer)[0] == 7
    good.close()
