package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A consumer group of Java consumers through the crash of its coordinator.
 *
 * <p>Arguments: bootstrap, topic, group, records, members, and optionally the group protocol ({@code
 * classic}, the default, or {@code consumer}: KIP-848, the server-side assignor). The topic is created (6
 * partitions, replication factor 3) and filled with {@code records} records (acks=all; "produced" with the
 * end offsets). Then {@code members} consumers (that group.protocol, no auto-commit) read it in small
 * polls, committing synchronously after each: "read" (member, partition, offset, value) per record, "committed" (member,
 * offsets) per commit that succeeded, "commit failed" (member, error) per one that did not, "assigned"
 * (member, partitions) per rebalance. When a third of the records has been read the program emits
 * "third" (the test crashes the coordinator then). When every record has been read and committed the
 * members leave, and the group's committed offsets as the Admin client lists them are "final".
 */
public final class GroupFailover {
    private GroupFailover() {
    }

    public static void main(String[] args) {
        Driver.main("GroupFailover", () -> run(args[0], args[1], args[2], Integer.parseInt(args[3]),
            Integer.parseInt(args[4]), args.length > 5 ? args[5] : "classic"));
    }

    static void run(String bootstrap, String topic, String group, int records, int members, String protocol)
            throws Exception {
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            admin.createTopics(List.of(new NewTopic(topic, 6, (short) 3))).all().get();
        }
        Map<Integer, Long> end = new TreeMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Driver.client(bootstrap, Map.of(
                "acks", "all",
                "key.serializer", StringSerializer.class.getName(),
                "value.serializer", StringSerializer.class.getName())))) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i), (metadata, error) -> {
                    if (error != null) {
                        Driver.emit("record failed", "error", error.toString());
                    } else {
                        synchronized (end) {
                            end.merge(metadata.partition(), metadata.offset() + 1, Math::max);
                        }
                    }
                });
            }
            producer.flush();
        }
        Driver.emit("produced", "end", end);

        Set<String> read = ConcurrentHashMap.newKeySet();
        Map<Integer, Long> committed = new ConcurrentHashMap<>();
        AtomicBoolean third = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            final String member = "member-" + m;
            Thread thread = new Thread(() -> {
                try {
                    consume(bootstrap, topic, group, protocol, member, records, end, read, committed, third);
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                    Driver.emit("member failed", "member", member, "error", e.toString());
                }
            }, member);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException("a member failed", errors.get(0));
        }
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            Map<Integer, Long> listed = new TreeMap<>();
            offsets.forEach((tp, om) -> listed.put(tp.partition(), om.offset()));
            Driver.emit("final", "committed", listed);
        }
    }

    static void consume(String bootstrap, String topic, String group, String protocol, String member,
                        int records,
                        Map<Integer, Long> end, Set<String> read, Map<Integer, Long> committed,
                        AtomicBoolean third) throws Exception {
        Map<String, Object> settings = new HashMap<>();
        settings.put("group.id", group);
        settings.put("group.protocol", protocol);
        settings.put("client.id", member);
        settings.put("enable.auto.commit", false);
        settings.put("auto.offset.reset", "earliest");
        settings.put("max.poll.records", 20);
        if (protocol.equals("classic")) {  // the consumer protocol takes both from the group's configs
            settings.put("session.timeout.ms", 10_000);
            settings.put("heartbeat.interval.ms", 500);
        }
        settings.put("key.deserializer", StringDeserializer.class.getName());
        settings.put("value.deserializer", StringDeserializer.class.getName());
        long deadline = System.currentTimeMillis() + 180_000;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Driver.client(bootstrap, settings))) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    Driver.emit("assigned", "member", member,
                        "partitions", partitions.stream().map(TopicPartition::partition).sorted().toList());
                }
            });
            while (!(read.size() >= records && end.entrySet().stream()
                    .allMatch(e -> committed.getOrDefault(e.getKey(), 0L) >= e.getValue()))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not every record read and committed in 180 s: read "
                        + read.size() + ", committed " + committed + ", end " + end);
                }
                ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(100));
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> record : batch) {
                    Driver.emit("read", "member", member, "partition", record.partition(), "offset",
                        record.offset(), "value", record.value());
                    read.add(record.partition() + ":" + record.offset());
                    offsets.put(new TopicPartition(topic, record.partition()), new OffsetAndMetadata(record.offset() + 1));
                }
                if (!offsets.isEmpty()) {
                    try {
                        consumer.commitSync(offsets, Duration.ofSeconds(30));
                        Map<Integer, Long> done = new TreeMap<>();
                        offsets.forEach((tp, om) -> {
                            done.put(tp.partition(), om.offset());
                            committed.merge(tp.partition(), om.offset(), Math::max);
                        });
                        Driver.emit("committed", "member", member, "offsets", done);
                    } catch (Exception e) {
                        Driver.emit("commit failed", "member", member, "error", e.toString());
                    }
                    Thread.sleep(50);  // slow readers: the coordinator goes while they read
                }
                if (read.size() >= records / 3 && third.compareAndSet(false, true)) {
                    Driver.emit("third", "read", read.size());
                }
            }
        }
    }
}
