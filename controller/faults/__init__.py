"""Request faults: a server that answers some requests with an error, late, never, or by closing the
connection, as Kafka's wire fault proxy does (KAFKA-21074).

- :mod:`.spec`: what a fault matches, does and when it fires; the compact syntax of ``simulator.faults``;
- :mod:`.registry`: the faults a server holds (``server.faults``) and what a request they fire on gets.

The dispatch asks :meth:`Faults.intercept` about every request while any fault is registered
(:mod:`controller.dispatch`); the control APIs (SimulatorFaultsAdd/List/Clear), ``simulator.faults`` and
``placement-sim faults`` add, list and clear them.
"""

from controller.faults.registry import Fault, Faults
from controller.faults.spec import FaultSpec, FaultSyntaxError, format_faults, parse_faults

__all__ = ["Fault", "FaultSpec", "FaultSyntaxError", "Faults", "format_faults", "parse_faults"]
