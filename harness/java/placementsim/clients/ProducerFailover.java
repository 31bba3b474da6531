package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An idempotent acks=all producer through a leader crash, then a consumer reading the topic back.
 *
 * <p>Arguments: bootstrap, topic, records. The topic is created first (3 partitions, replication factor 3,
 * with the Admin client), then the producer sends records "value-i" (keys "key-(i % 16)") at a
 * steady pace (10 ms every 10 records); every acknowledgement is an "ack" event (i, partition, offset) and
 * every failure a "record failed" event (i, error). When a third of them is acknowledged it emits "third"
 * and goes on sending while the test crashes a leader. When all are sent and flushed it emits "sent", and a consumer assigned
 * every partition reads from the beginning to the end offsets, one "read" event per record (partition,
 * offset, key, value), then "done".
 */
public final class ProducerFailover {
    private ProducerFailover() {
    }

    public static void main(String[] args) {
        Driver.main("ProducerFailover", () -> run(args[0], args[1], Integer.parseInt(args[2])));
    }

    static void run(String bootstrap, String topic, int records) throws Exception {
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3))).all().get();
        }
        Driver.emit("created", "topic", topic);
        AtomicInteger acked = new AtomicInteger();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Driver.client(bootstrap, Map.of(
                "acks", "all",
                "enable.idempotence", true,
                "max.in.flight.requests.per.connection", 5,
                "linger.ms", 5,
                "delivery.timeout.ms", 120_000,
                "key.serializer", StringSerializer.class.getName(),
                "value.serializer", StringSerializer.class.getName())))) {
            for (int i = 0; i < records; i++) {
                final int n = i;
                producer.send(new ProducerRecord<>(topic, "key-" + (i % 16), "value-" + i), (metadata, error) -> {
                    if (error == null) {
                        Driver.emit("ack", "i", n, "partition", metadata.partition(), "offset", metadata.offset());
                        if (acked.incrementAndGet() == records / 3) {
                            Driver.emit("third", "acked", records / 3);
                        }
                    } else {
                        Driver.emit("record failed", "i", n, "error", error.toString());
                    }
                });
                if (i % 10 == 9) {
                    Thread.sleep(10);  // a steady stream, much of it sent after the leader goes
                }
            }
            producer.flush();
        }
        Driver.emit("sent", "acked", acked.get());

        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Driver.client(bootstrap, Map.of(
                "enable.auto.commit", false,
                "key.deserializer", StringDeserializer.class.getName(),
                "value.deserializer", StringDeserializer.class.getName())))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.currentTimeMillis() + 60_000;
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not read to the end offsets " + end + " in 60 s");
                }
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    Driver.emit("read", "partition", record.partition(), "offset", record.offset(),
                        "key", record.key(), "value", record.value());
                }
            }
            Driver.emit("done", "end", end.entrySet().stream()
                .collect(java.util.stream.Collectors.toMap(e -> String.valueOf(e.getKey().partition()), Map.Entry::getValue)));
        }
    }
}
