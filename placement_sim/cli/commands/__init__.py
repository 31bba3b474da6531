"""Subcommands of the placement-sim command line."""
