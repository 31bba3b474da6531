"""The simulated controller: configuration, cluster state, placement, handlers, server, CLI."""
