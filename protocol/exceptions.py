"""The wire layer's exceptions: every failure it reports is one of these."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of the wire layer's errors."""


class SpecError(ProtocolError):
    """A spec file is malformed; names the file, the field (if any) and what is wrong."""

    def __init__(self, source: str, problem: str, field: str | None = None) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: field {field}" if field else source
        super().__init__(f"{where}: {problem}")


class CapsError(ProtocolError, ValueError):
    """Caps on array lengths that do not fit the message: an unknown field, a path that does not end in
    an array, a limit that is not an int >= 0 (see :mod:`protocol.caps`)."""


class DecodeError(ProtocolError):
    """Bytes that do not decode: truncated, overrunning lengths, bad varints, trailing bytes...

    ``message`` and ``version`` name the message being decoded, ``field`` the field path
    (``Topics[2].Partitions[0].ReplicaNodes``) or ``None`` when the problem is not inside a field,
    ``offset`` the byte offset in the input where the problem was found.
    """

    def __init__(
        self,
        reason: str,
        *,
        message: str | None = None,
        version: int | None = None,
        field: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.message = message
        self.version = version
        self.field = field
        self.offset = offset
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = []
        if self.message is not None:
            parts.append(self.message if self.version is None else f"{self.message} v{self.version}")
        if self.field:
            parts.append(f"field {self.field}")
        text = ": ".join([*parts, self.reason])
        if self.offset is not None:
            text += f" (at byte {self.offset})"
        return f"cannot decode {text}"

    def within(self, message: str, version: int) -> DecodeError:
        """The same error, attributed to ``message`` at ``version``."""
        return DecodeError(
            self.reason, message=message, version=version, field=self.field, offset=self.offset
        )


class EncodeError(ProtocolError):
    """Data that cannot be encoded: unknown field, wrong type, value out of range, field absent in version."""

    def __init__(
        self,
        reason: str,
        *,
        message: str | None = None,
        version: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.message = message
        self.version = version
        self.field = field
        parts = []
        if message is not None:
            parts.append(message if version is None else f"{message} v{version}")
        if field:
            parts.append(f"field {field}")
        super().__init__("cannot encode " + ": ".join([*parts, reason]))

    def within(self, message: str, version: int) -> EncodeError:
        """The same error, attributed to ``message`` at ``version``."""
        return EncodeError(self.reason, message=message, version=version, field=self.field)
