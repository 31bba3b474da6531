"""Running a plugin: inline (trusted built-ins) or in a worker process of its own (everything else).

:func:`start_runner` picks the runner; both runners answer :meth:`call` with the plugin's normalized
result or raise :class:`PluginError`, whose :class:`Reason` says what went wrong.
"""

from controller.plugins.isolation.outcome import PluginError, Reason
from controller.plugins.isolation.runner import InlineRunner, ProcessRunner, Runner, start_runner

__all__ = ["InlineRunner", "PluginError", "ProcessRunner", "Reason", "Runner", "start_runner"]
