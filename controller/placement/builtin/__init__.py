"""The built-in placers, one module each, named in :data:`controller.placement.loader.BUILTIN_PLACERS`.

- ``striped``: Kafka's KRaft ``StripedReplicaPlacer`` (the default);
- ``legacy``: Kafka's classic ``AdminUtils.assignReplicasToBrokers`` (rack-aware since KIP-36), also what
  ``ForceSimplePlacement`` uses;
- ``fluvio``: Fluvio's computed replica assignment (the "Replica Assignment" page of Fluvio's architecture
  documentation);
- ``fluvio-fair``: Fluvio's current load-weighted scheduler (the SC's ``PartitionScheduler``);
- ``multi-level``: KIP-879's multi-level rack awareness.

``java_random`` and ``java_collections`` reproduce the JVM behaviour the Kafka placers depend on.
"""
