"""Scenarios: a timeline of steps on the cluster's clock, read from a TOML file (docs/scenarios.md).

- :mod:`.spec`: the file read into typed steps (:func:`parse_scenario`, :func:`load_scenario`); a bad
  file is one :class:`ScenarioError` naming its line and key;
- :mod:`.player`: the steps played against a controller, each at its time (``serve --scenario``, the
  SimulatorScenarioLoad control);
- :mod:`.simulation`: a whole run in process on a virtual clock (``placement-sim simulate``).
"""

from controller.scenario.spec import Scenario, ScenarioError, load_scenario, parse_duration, parse_scenario

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_duration", "parse_scenario"]
