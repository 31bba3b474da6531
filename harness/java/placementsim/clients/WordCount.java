package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Kafka Streams' word count through a broker crash: lines in, a count per word out.
 *
 * <p>Arguments: bootstrap, processing guarantee (at_least_once or exactly_once_v2), lines. The input topic
 * "lines" (3 partitions) and the output topic "counts" are created
 * with replication factor 3; the application (one stream thread, an in-memory store, its changelog and
 * repartition topics with replication factor 3) starts and reaches RUNNING ("running"). A producer writes
 * lines "w(i % 7) w(i % 11) w(i % 13)" in two halves: after the first ("half") the program waits for the
 * test's "go" (the test crashes a broker meanwhile), then writes the second. A consumer of "counts" keeps
 * the latest count per word until every count reaches what the lines hold or 120 s pass, and the program
 * emits "counts" (what it read) with "expected" (what the lines hold) and the application's state.
 */
public final class WordCount {
    private WordCount() {
    }

    public static void main(String[] args) {
        Driver.main("WordCount", () -> run(args[0], args[1], Integer.parseInt(args[2])));
    }

    static String line(int i) {
        return String.format(Locale.ROOT, "w%d w%d w%d", i % 7, 7 + i % 11, 18 + i % 13);
    }

    static void run(String bootstrap, String guarantee, int lines) throws Exception {
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            admin.createTopics(List.of(new NewTopic("lines", 3, (short) 3), new NewTopic("counts", 3, (short) 3))).all().get();
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("lines", Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(value -> Arrays.asList(value.toLowerCase(Locale.ROOT).split("\\W+")))
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts-store"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = Driver.client(bootstrap, Map.of());
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "word-count");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("word-count").toString());
        props.put(StreamsConfig.consumerPrefix("group.protocol"), "classic");
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10_000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 500);

        Map<String, Long> expected = new TreeMap<>();
        for (int i = 0; i < lines; i++) {
            for (String word : line(i).split(" ")) {
                expected.merge(word, 1L, Long::sum);
            }
        }
        List<String> states = new ArrayList<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.setStateListener((now, before) -> {
                synchronized (states) {
                    states.add(now.toString());
                }
            });
            streams.start();
            long deadline = System.currentTimeMillis() + 120_000;
            while (streams.state() != KafkaStreams.State.RUNNING) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not RUNNING in 120 s: " + streams.state());
                }
                Thread.sleep(50);
            }
            Driver.emit("running");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Driver.client(bootstrap, Map.of(
                    "acks", "all",
                    "key.serializer", StringSerializer.class.getName(),
                    "value.serializer", StringSerializer.class.getName())))) {
                for (int i = 0; i < lines; i++) {
                    producer.send(new ProducerRecord<>("lines", "line-" + i, line(i)), (metadata, error) -> {
                        if (error != null) {
                            Driver.emit("record failed", "error", error.toString());
                        }
                    });
                    if (i == lines / 2) {
                        producer.flush();
                        Driver.emit("half", "lines", i + 1);
                        Driver.await("go");
                    }
                    if (i % 20 == 19) {
                        Thread.sleep(20);  // a steady stream while the broker is down
                    }
                }
                producer.flush();
            }
            Driver.emit("written", "lines", lines);

            Map<String, Long> counts = new TreeMap<>();
            try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(Driver.client(bootstrap, Map.of(
                    "key.deserializer", StringDeserializer.class.getName(),
                    "value.deserializer", LongDeserializer.class.getName(),
                    "isolation.level", "read_committed")))) {
                List<TopicPartition> partitions = new ArrayList<>();
                for (int p = 0; p < 3; p++) {
                    partitions.add(new TopicPartition("counts", p));
                }
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
                deadline = System.currentTimeMillis() + 120_000;
                while (!counts.equals(expected) && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                        counts.put(record.key(), record.value());
                    }
                }
            }
            Driver.emit("counts", "counts", counts, "expected", expected, "state", streams.state().toString(),
                "states", new ArrayList<>(states));
        }
    }
}
