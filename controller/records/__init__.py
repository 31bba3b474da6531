"""Records in the simulated cluster: the pieces of Kafka's data path, pure and without sockets.

- :mod:`~controller.records.batch`: RecordBatch v2 read in place (header, the batches of a ``records``
  blob) and the leader's stamp (offsets and epoch outside the CRC; LogAppendTime with a new CRC).
- :mod:`~controller.records.checks`: the checks Kafka makes on a client's batch, with Kafka's refusals,
  and a topic's limits (``max.message.bytes``, ``message.timestamp.*``).
- :mod:`~controller.records.epochs`: a replica's leader epoch cache (``LeaderEpochFileCache``).
- :mod:`~controller.records.log`: one replica's log (the clients' bytes kept as sent under a stamped head
  and shared between replicas, reads up to a bound and a byte budget, truncation, log start moves and
  retention, lookups by timestamp, synthetic runs), and where a follower's log diverges from its
  leader's (``divergence_offset``).
- :mod:`~controller.records.producers`: idempotent producers' sequence state per partition, rebuilt from
  a log, and the producer id allocator.
- :mod:`~controller.records.records`: the records inside batches (decompressed), for tests, the command
  line and timestamp lookups.
"""
