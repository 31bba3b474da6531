"""What a plugin call can end in besides a result: one exception type, with a reason from an Enum."""

from __future__ import annotations

from enum import Enum

__all__ = ["PluginError", "Reason"]


class Reason(Enum):
    """Why a plugin call gave no usable result."""

    #: The plugin raised one of the exceptions its kind declares (``PluginError.declared`` names it).
    DECLARED = "declared"
    #: The plugin raised anything else.
    UNEXPECTED = "unexpected"
    #: The plugin returned something that cannot be used (or cannot be sent back from its worker).
    MALFORMED = "malformed"
    #: The plugin was still running when the call's deadline passed.
    TIMED_OUT = "timed out"
    #: The plugin's worker process ended during the call.
    WORKER_EXITED = "worker exited"
    #: The plugin's worker process grew past its memory limit during the call.
    OUT_OF_MEMORY = "out of memory"


class PluginError(Exception):
    """A plugin call that gave no usable result.

    ``label`` is the plugin as it is shown; ``message`` what happened (the exception's message for
    ``DECLARED``); ``exc_type`` the class name of what the plugin raised, if it raised; ``declared``
    the name of the declared exception class it is an instance of (``DECLARED`` only).
    """

    def __init__(
        self, reason: Reason, label: str, message: str, exc_type: str = "", declared: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.label = label
        self.message = message
        self.exc_type = exc_type
        self.declared = declared

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.reason, self.label, self.message, self.exc_type, self.declared))

    def __repr__(self) -> str:
        return f"PluginError({self.reason.name}, {self.label!r}, {self.message!r})"
