package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A share group of Java share consumers ({@code KafkaShareConsumer}, explicit acknowledgement) through the
 * crash of a broker the test picks (the share coordinator's).
 *
 * <p>Arguments: bootstrap, topic, group, records, members. The topic is created (3 partitions, replication
 * factor 3), the group's {@code share.auto.offset.reset} set to earliest (IncrementalAlterConfigs on the
 * GROUP resource), and {@code records} records written (acks=all; "produced" with the end offsets). Then
 * {@code members} share consumers read it: each record is released at its first delivery when its number
 * is 3 modulo 10 (it must come back with delivery count 2), rejected when it is 5 modulo 17, accepted
 * otherwise; each poll's acknowledgements are committed with commitSync. Events: "read" (member,
 * partition, offset, value, count, type) per record delivered, "committed" (member, ok: [partition,
 * offset, type], failed: [partition, offset, error]) per commit. When a third of the records is done
 * (accepted or rejected, committed) the program emits "third" (the test crashes the broker then); when
 * every record is done, or after 150 s, "final" (done: how many). At "third" every member waits, its
 * acknowledgements committed, until the test sends "crashed".
 */
public final class ShareFailover {
    private ShareFailover() {
    }

    public static void main(String[] args) {
        Driver.main("ShareFailover", () -> run(args[0], args[1], args[2], Integer.parseInt(args[3]),
            Integer.parseInt(args[4])));
    }

    static void run(String bootstrap, String topic, String group, int records, int members) throws Exception {
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3))).all().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
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

        Set<String> done = ConcurrentHashMap.newKeySet();
        AtomicBoolean third = new AtomicBoolean();
        CountDownLatch resumed = new CountDownLatch(1);
        long deadline = System.currentTimeMillis() + 150_000;
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            final String member = "member-" + m;
            Thread thread = new Thread(() -> {
                try {
                    consume(bootstrap, topic, group, member, records, done, third, resumed, deadline);
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
        Driver.emit("final", "done", done.size());
    }

    static AcknowledgeType answer(String value, int deliveryCount) {
        int number = Integer.parseInt(value.substring("value-".length()));
        if (number % 10 == 3 && deliveryCount == 1) {
            return AcknowledgeType.RELEASE;
        }
        return number % 17 == 5 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
    }

    static void consume(String bootstrap, String topic, String group, String member, int records,
                        Set<String> done, AtomicBoolean third, CountDownLatch resumed, long deadline)
            throws Exception {
        Map<String, Object> settings = new HashMap<>();
        settings.put("group.id", group);
        settings.put("client.id", member);
        settings.put("share.acknowledgement.mode", "explicit");
        settings.put("max.poll.records", 20);
        settings.put("key.deserializer", StringDeserializer.class.getName());
        settings.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(Driver.client(bootstrap, settings))) {
            consumer.subscribe(List.of(topic));
            while (done.size() < records && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(100));
                Map<Integer, List<Object[]>> sent = new HashMap<>();
                for (ConsumerRecord<String, String> record : batch) {
                    int count = record.deliveryCount().map(Short::intValue).orElse(-1);
                    AcknowledgeType type = answer(record.value(), count);
                    consumer.acknowledge(record, type);
                    Driver.emit("read", "member", member, "partition", record.partition(), "offset",
                        record.offset(), "value", record.value(), "count", count, "type", type.toString());
                    sent.computeIfAbsent(record.partition(), p -> new ArrayList<>())
                        .add(new Object[] {record.offset(), type});
                }
                if (sent.isEmpty()) {
                    continue;
                }
                Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync(Duration.ofSeconds(30));
                List<List<Object>> ok = new ArrayList<>();
                List<List<Object>> failed = new ArrayList<>();
                sent.forEach((partition, acks) -> {
                    Optional<KafkaException> error = results.entrySet().stream()
                        .filter(e -> e.getKey().partition() == partition)
                        .map(Map.Entry::getValue)
                        .findFirst()
                        .orElse(Optional.of(new KafkaException("no result for the partition")));
                    for (Object[] ack : acks) {
                        if (error.isEmpty()) {
                            ok.add(List.of(partition, ack[0], ack[1].toString()));
                            if (ack[1] != AcknowledgeType.RELEASE) {
                                done.add(partition + ":" + ack[0]);
                            }
                        } else {
                            failed.add(List.of(partition, ack[0], error.get().toString()));
                        }
                    }
                });
                Driver.emit("committed", "member", member, "ok", ok, "failed", failed);
                if (done.size() >= records / 3 && third.compareAndSet(false, true)) {
                    Driver.emit("third");
                    Driver.await("crashed");
                    resumed.countDown();
                }
                if (third.get()) {
                    resumed.await();  // every member waits, its acknowledgements committed, for the crash
                }
            }
        }
    }
}
