"""pytest plugin registered under ``pytest11``: fixtures that start placement-sim servers."""
