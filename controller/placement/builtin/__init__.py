"""The built-in placers, one module each, named in :data:`controller.placement.loader.BUILTIN_PLACERS`.

- ``striped``: Kafka's KRaft ``StripedReplicaPlacer`` (the default);
- ``legacy``: Kafka's classic ``AdminUtils`` assignment (seed 001), also what ``ForceSimplePlacement`` uses;
- ``fluvio``: Fluvio's computed replica assignment (seed 000);
- ``fluvio-fair``: Fluvio's algorithm with a fair rack start;
- ``multi-level``: KIP-879's multi-level rack awareness (seed 002).

``java_random`` and ``java_collections`` reproduce the JVM behaviour the Kafka placers depend on.
"""
