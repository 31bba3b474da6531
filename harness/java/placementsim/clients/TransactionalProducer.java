package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

/**
 * A transactional producer (Kafka's transactions, KIP-98, with offsets committed in them) through the crash
 * of its transaction coordinator's broker, read back by a read_committed and a read_uncommitted consumer.
 *
 * <p>Arguments: bootstrap, topic, transactional id, group, transactions, records per transaction. The topic
 * (3 partitions, replication factor 3) and an input topic "&lt;topic&gt;-in" (1 partition) are created.
 * Transaction t sends records "t-j" (partition j % 3), then the group's offset t + 1 on the input topic
 * (sendOffsetsToTransaction), and commits ("committed", t), or, when t % 4 == 3, flushes (so that its records
 * are in the log) and aborts ("aborted", t).
 * A commit that times out is retried, as Kafka's documentation says ("commit retried", t, error); any other
 * failure is "txn failed" (t, error) and aborts the transaction. Halfway through, transaction t = n / 2 is
 * left open after its records are acknowledged ("open", t) until the test writes "go" (the test crashes
 * the coordinator's broker between the two). After the last transaction ("sent"), a second producer of the
 * same transactional id fences the first: the first one's next transaction fails ("fenced", error) and
 * nothing of it may be read. Then a read_committed consumer reads every partition to its last stable offset
 * ("read": partition, offset, value, then "committed read" with the end offsets), and a read_uncommitted one
 * to the high watermark ("uncommitted read": values).
 */
public final class TransactionalProducer {
    private TransactionalProducer() {
    }

    public static void main(String[] args) {
        Driver.main("TransactionalProducer", () -> run(args[0], args[1], args[2], args[3],
            Integer.parseInt(args[4]), Integer.parseInt(args[5])));
    }

    static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        return new KafkaProducer<>(Driver.client(bootstrap, Map.of(
            "transactional.id", transactionalId,
            "transaction.timeout.ms", 60_000,
            "max.block.ms", 30_000,
            "delivery.timeout.ms", 60_000,
            "linger.ms", 5,
            "key.serializer", StringSerializer.class.getName(),
            "value.serializer", StringSerializer.class.getName())));
    }

    static void run(String bootstrap, String topic, String transactionalId, String group, int transactions,
                    int perTransaction) throws Exception {
        String input = topic + "-in";
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3), new NewTopic(input, 1, (short) 3)))
                .all().get();
        }
        ConsumerGroupMetadata groupMetadata;
        try (KafkaConsumer<String, String> member = new KafkaConsumer<>(Driver.client(bootstrap, Map.of(
                "group.id", group,
                "key.deserializer", StringDeserializer.class.getName(),
                "value.deserializer", StringDeserializer.class.getName())))) {
            groupMetadata = member.groupMetadata();  // not joined: the offsets commit as a simple group's
        }
        TopicPartition source = new TopicPartition(input, 0);
        KafkaProducer<String, String> producer = producer(bootstrap, transactionalId);
        try {
            producer.initTransactions();
            Driver.emit("initialized", "transactional_id", transactionalId);
            for (int t = 0; t < transactions; t++) {
                producer.beginTransaction();
                for (int j = 0; j < perTransaction; j++) {
                    producer.send(new ProducerRecord<>(topic, j % 3, "key-" + j, t + "-" + j));
                }
                producer.sendOffsetsToTransaction(Map.of(source, new OffsetAndMetadata(t + 1)), groupMetadata);
                if (t == transactions / 2) {
                    producer.flush();  // the records are written (acknowledged) in the open transaction
                    Driver.emit("open", "t", t);
                    Driver.await("go");
                }
                if (t % 4 == 3) {
                    producer.flush();  // written first (unsent records an abort would drop unwritten)
                    producer.abortTransaction();
                    Driver.emit("aborted", "t", t);
                } else {
                    commit(producer, t);
                }
            }
            Driver.emit("sent", "transactions", transactions);

            try (KafkaProducer<String, String> successor = producer(bootstrap, transactionalId)) {
                successor.initTransactions();  // bumps the epoch: the first producer is a zombie now
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(topic, 0, "zombie", "zombie")).get();
                    producer.commitTransaction();
                    Driver.emit("txn failed", "t", -1, "error", "the fenced producer committed");
                } catch (ExecutionException | KafkaException e) {
                    Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
                    Driver.emit("fenced", "error", cause.getClass().getSimpleName());
                }
            }
        } finally {
            producer.close(Duration.ofSeconds(5));
        }

        List<String> uncommitted = new ArrayList<>();
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Driver.client(bootstrap, Map.of(
                    "enable.auto.commit", false,
                    "isolation.level", isolation,
                    "key.deserializer", StringDeserializer.class.getName(),
                    "value.deserializer", StringDeserializer.class.getName())))) {
                List<TopicPartition> partitions = List.of(
                    new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2));
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                long deadline = System.currentTimeMillis() + 60_000;
                while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException(isolation + ": not read to the end offsets " + end + " in 60 s");
                    }
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                        if (isolation.equals("read_committed")) {
                            Driver.emit("read", "partition", record.partition(), "offset", record.offset(),
                                "value", record.value());
                        } else {
                            uncommitted.add(record.value());
                        }
                    }
                }
                if (isolation.equals("read_committed")) {
                    Map<String, Long> ends = new TreeMap<>();
                    end.forEach((tp, offset) -> ends.put(String.valueOf(tp.partition()), offset));
                    Driver.emit("committed read", "end", ends);
                }
            }
        }
        Driver.emit("uncommitted read", "values", uncommitted);
    }

    /** Commits transaction t, retrying a commit that timed out (the outcome is then still to be learnt). */
    static void commit(KafkaProducer<String, String> producer, int t) {
        for (int attempt = 1; ; attempt++) {
            try {
                producer.commitTransaction();
                Driver.emit("committed", "t", t);
                return;
            } catch (TimeoutException e) {
                Driver.emit("commit retried", "t", t, "error", e.toString());
                if (attempt == 5) {
                    throw e;
                }
            } catch (ProducerFencedException e) {
                throw e;
            } catch (KafkaException e) {
                Driver.emit("txn failed", "t", t, "error", e.toString());
                producer.abortTransaction();
                return;
            }
        }
    }
}
