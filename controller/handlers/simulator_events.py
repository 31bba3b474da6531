"""SimulatorEvents (1008): the event log after a sequence number (``ServerThread.events(since)``), at most
MaxEvents of them and never more than :data:`EVENTS_PER_ANSWER`, with the newest sequence number: a
client follows the log by asking again from the last event it got. Each change's values are sent as the
log prints them."""

from __future__ import annotations

from typing import Any

from controller.answers import Sized
from controller.events import Event, as_event, show_value
from controller.handlers import RequestContext, _control
from controller.handlers._control import VERSIONS, error_response, served
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SIMULATOR_EVENTS

#: The most events one answer carries, whatever MaxEvents asks (the client's own default): a whole log of a
#: million events took seconds of a worker thread to answer, and clients asking for it at once held back
#: every other answer made off the event loop (18 connections left unanswered in a million-frame fuzz run).
EVENTS_PER_ANSWER = 10_000

__all__ = ["API_KEY", "VERSIONS", "error_response", "handle", "served"]


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Sized:
    _control.check(ctx)
    since, limit = request["SinceSeq"], request["MaxEvents"]
    if since < 0 or limit < 0:
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.INVALID_REQUEST,
                "ErrorMessage": "SinceSeq and MaxEvents must not be negative", "LastSeq": 0, "Events": []}  # fmt: skip
    log = ctx.controller.cluster.events
    # The log's entries are taken as they are (references: a million cost a few milliseconds), and the
    # answer is made from them afterwards, off the event loop when big: an event's changes are never
    # changed in place. Each event counts as several entries: most change a few fields.
    entries = log.entries_since(since, min(limit, EVENTS_PER_ANSWER))
    last = log.last_seq

    def response() -> dict[str, Any]:
        events = [_event(as_event(entry)) for entry in entries]
        return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "LastSeq": last, "Events": events}

    return Sized(response, 4 * len(entries))


def _event(event: Event) -> dict[str, Any]:
    return {
        "Seq": event.seq,
        "TimeMs": event.time,
        "Kind": event.kind,
        "Subject": event.subject,
        "Changes": [
            {"Field": name, "Before": show_value(before), "After": show_value(after)}
            for name, before, after in event.changes
        ],
        "Cause": event.cause,
    }
