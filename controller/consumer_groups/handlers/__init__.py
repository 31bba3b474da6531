"""The request handlers of the consumer group protocol (KIP-848): ConsumerGroupHeartbeat (apiKey 68 in
Kafka's key space) and ConsumerGroupDescribe (69)."""
