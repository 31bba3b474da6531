"""Consumer groups: Kafka's classic group protocol (:mod:`.classic`, :mod:`.coordinator`) and the coordinator
as a broker, its state in ``__consumer_offsets`` on the replication model (:mod:`.durable`)."""
