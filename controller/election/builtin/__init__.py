"""The built-in election policies, named in :data:`controller.election.loader.BUILTIN_POLICIES`.

- ``kafka``: Kafka's KRaft controller (``PartitionChangeBuilder``), the default;
- ``fluvio``: Fluvio's SC (with the numbers of Fluvio's implementation).
"""
