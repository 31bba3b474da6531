"""The simulated controller: configuration, cluster state, placement, handlers, server, CLI."""

# The wire layer first: it keeps the compiled code of the methods dataclasses writes (protocol.bytecode),
# which every class of this package is made with.
import protocol  # noqa: E402, F401
