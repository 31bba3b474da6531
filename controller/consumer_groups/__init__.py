"""The consumer group protocol (KIP-848): groups whose coordinator assigns the partitions, members that
heartbeat with epochs and reconcile towards a target assignment, as Kafka 4.x's ``GroupMetadataManager``
runs them. See :mod:`controller.consumer_groups.service`."""
