"""SCRAM credentials as cluster metadata (KIP-554): per user and mechanism, a salt, an iteration count, and the
stored and server keys RFC 5802 derives from the password (never the password), as Kafka's
``ScramControlManager`` keeps them (``UserScramCredentialRecord``).

The users of ``simulator.sasl.users`` have theirs from the start (each SCRAM mechanism salted with its
password, ``simulator.sasl.scram.iterations``), as ``kafka-storage format --add-scram`` gives a new
cluster its first ones; DescribeUserScramCredentials and AlterUserScramCredentials (:meth:`describe`,
:meth:`alter`) read and change them as Kafka's controller does. The SASL layer
(:class:`controller.security.Security`) looks a user's credential up here at each authentication: a
changed credential takes effect at the next one, and sessions already authenticated stay so, as in Kafka.
Every change is an event of the cluster's event log (kind ``scram``), without a salt or a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.events import EventLog
from controller.security import ScramCredential, initial_scram_credentials, salted_credential
from protocol.codes import ErrorCode

__all__ = ["MAX_ITERATIONS", "MECHANISMS", "MIN_ITERATIONS", "ScramCredentials"]

#: The wire's mechanism codes (Kafka's ``ScramMechanism``).
MECHANISMS: dict[int, str] = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_CODES = {name: code for code, name in MECHANISMS.items()}
#: Kafka's bounds of an iteration count (``ScramMechanism.minIterations``, ``ScramControlManager``).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384

_DUPLICATE = "A user credential cannot be altered twice in the same request"


class ScramCredentials:
    """Every SCRAM credential of the cluster: mechanism name -> user -> credential."""

    def __init__(
        self,
        users: Iterable[tuple[str, str | None, str]],
        iterations: int,
        events: EventLog | None = None,
    ) -> None:
        self._events = events
        self.by_mechanism = initial_scram_credentials(users, iterations)

    def for_mechanism(self, mechanism: str) -> Mapping[str, ScramCredential]:
        """The credentials the SASL layer checks a ``mechanism`` login against (read at each login)."""
        return self.by_mechanism[mechanism]

    # ------------------------------------------------------------------------------------- the APIs

    def describe(self, users: list[str] | None) -> list[dict[str, Any]]:
        """DescribeUserScramCredentials' results (Kafka's ``ScramImage.describe``): every user with a
        credential when ``users`` is empty or None; a user asked twice is DUPLICATE_RESOURCE, one without a
        credential RESOURCE_NOT_FOUND."""
        asked: dict[str, bool] = {}
        if not users:
            for credentials in self.by_mechanism.values():
                asked.update(dict.fromkeys(credentials, False))
        else:
            for user in users:
                asked[user] = user in asked
        results = []
        for user, twice in asked.items():
            result: dict[str, Any] = {
                "User": user,
                "ErrorCode": 0,
                "ErrorMessage": None,
                "CredentialInfos": [],
            }
            if twice:
                result["ErrorCode"] = ErrorCode.DUPLICATE_RESOURCE
                result["ErrorMessage"] = (
                    f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                )
            else:
                infos = [
                    {"Mechanism": _CODES[mechanism], "Iterations": credentials[user].iterations}
                    for mechanism, credentials in self.by_mechanism.items()
                    if user in credentials
                ]
                if infos:
                    result["CredentialInfos"] = infos
                else:
                    result["ErrorCode"] = ErrorCode.RESOURCE_NOT_FOUND
                    result["ErrorMessage"] = (
                        f"Attempt to describe a user credential that does not exist: {user}"
                    )
            results.append(result)
        return results

    def alter(
        self, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]], cause: str
    ) -> list[dict[str, Any]]:
        """AlterUserScramCredentials' results (Kafka's ``ScramControlManager.alterCredentials``): one per
        user; a user named twice in the request (whatever the mechanisms) is refused with
        DUPLICATE_RESOURCE, and a user's changes are made only when all of them are valid."""
        errors: dict[str, tuple[int, str]] = {}
        deleting: dict[str, dict[str, Any]] = {}
        upserting: dict[str, dict[str, Any]] = {}
        for deletion in deletions:
            user = deletion["Name"]
            if user in errors:
                continue
            if deleting.pop(user, None) is not None:
                errors[user] = (ErrorCode.DUPLICATE_RESOURCE, _DUPLICATE)
                continue
            error = _check_user_and_mechanism(user, deletion["Mechanism"])
            if error is None and user not in self.by_mechanism[MECHANISMS[deletion["Mechanism"]]]:
                error = (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            if error is not None:
                errors[user] = error
            else:
                deleting[user] = deletion
        for upsertion in upsertions:
            user = upsertion["Name"]
            if user in errors:
                continue
            if deleting.pop(user, None) is not None or upserting.pop(user, None) is not None:
                errors[user] = (ErrorCode.DUPLICATE_RESOURCE, _DUPLICATE)
                continue
            error = _check_user_and_mechanism(user, upsertion["Mechanism"])
            if error is None:
                iterations = upsertion["Iterations"]
                if iterations < MIN_ITERATIONS:
                    error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
                elif iterations > MAX_ITERATIONS:
                    error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if error is not None:
                errors[user] = error
            else:
                upserting[user] = upsertion
        results = []
        for user, deletion in deleting.items():
            mechanism = MECHANISMS[deletion["Mechanism"]]
            del self.by_mechanism[mechanism][user]
            self._record(user, mechanism, "deleted", cause)
            results.append({"User": user, "ErrorCode": 0, "ErrorMessage": None})
        for user, upsertion in upserting.items():
            mechanism = MECHANISMS[upsertion["Mechanism"]]
            self.by_mechanism[mechanism][user] = salted_credential(
                mechanism,
                bytes(upsertion["SaltedPassword"]),
                bytes(upsertion["Salt"]),
                upsertion["Iterations"],
            )
            self._record(user, mechanism, f"set ({upsertion['Iterations']} iterations)", cause)
            results.append({"User": user, "ErrorCode": 0, "ErrorMessage": None})
        for user, (code, message) in errors.items():
            results.append({"User": user, "ErrorCode": code, "ErrorMessage": message})
        return results

    def _record(self, user: str, mechanism: str, what: str, cause: str) -> None:
        if self._events is not None:
            self._events.record("scram", f"user {user}", [(mechanism, None, what)], cause)


def _check_user_and_mechanism(user: str, mechanism: int) -> tuple[int, str] | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
