"""What a plugin call can end in besides a result: one exception type, with a reason from an Enum; and the
rules both runners (in the server's process and in a worker's) apply to a call's outcome."""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["PluginError", "Reason", "attributes_of", "failure", "normalized"]


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


def attributes_of(kind: Any, plugin: Any) -> dict[str, Any]:
    """The attributes the server reads from a plugin (its kind's ``attributes``), as plain values."""
    return {name: getattr(plugin, name, None) for name in kind.attributes}


def failure(kind: Any, label: str, exc: BaseException) -> PluginError:
    """The error for a plugin that raised: one of its kind's declared exceptions, or anything else."""
    name = type(exc).__name__
    if isinstance(exc, MemoryError):
        return PluginError(Reason.OUT_OF_MEMORY, label, "the plugin ran out of memory", name)
    for declared in kind.declared:
        if isinstance(exc, declared):
            return PluginError(Reason.DECLARED, label, str(exc), name, declared.__name__)
    return PluginError(Reason.UNEXPECTED, label, f"{name}: {exc}", name)


def normalized(kind: Any, label: str, value: Any, portable: bool) -> Any:
    """The kind's plain form of a result; ``portable`` when it must cross a process boundary."""
    from controller.plugins.loader import MalformedResult

    try:
        return kind.normalize(value, portable)
    except MalformedResult as exc:
        raise PluginError(Reason.MALFORMED, label, str(exc)) from None
    except BaseException as exc:  # noqa: BLE001 - iterating a hostile result
        raise PluginError(
            Reason.MALFORMED, label, f"iterating the result raised {type(exc).__name__}: {exc}"
        ) from None
