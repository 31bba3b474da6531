"""placement-sim's command line (:mod:`placement_sim.cli`) and its PySpark jobs (:mod:`placement_sim.pipeline`).

The wire layer and the simulated controller are the top-level packages ``protocol`` and ``controller``;
this package holds what sits above them, under a name of its own.
"""
