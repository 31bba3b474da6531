"""Share groups (KIP-932, "queues for Kafka"): :mod:`controller.share.service` joins them to the server."""
