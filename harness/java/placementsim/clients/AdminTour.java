package placementsim.clients;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

/**
 * The Admin client across what the simulator serves, one step after another, each step's answer an event
 * the test checks: topics (create, list, describe, add partitions, delete), configs (describe,
 * incremental alter), offsets (list earliest, latest, by time; delete records), groups (list, describe,
 * list, alter and delete offsets, delete the group), reassignments (alter, list, until done), leader
 * elections (preferred), log directories, producers, the cluster.
 *
 * <p>Arguments: bootstrap. Between steps the program waits for the test's "next" when a step's event says
 * {"wait": true} (the test changes the cluster then).
 */
public final class AdminTour {
    private AdminTour() {
    }

    public static void main(String[] args) {
        Driver.main("AdminTour", () -> run(args[0]));
    }

    static String error(ExecutionException e) {
        return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
    }

    static void run(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Driver.client(bootstrap, Map.of()))) {
            // ---- the cluster
            DescribeClusterResult cluster = admin.describeCluster();
            Driver.emit("cluster", "id", cluster.clusterId().get(), "controller", cluster.controller().get().id(),
                "brokers", cluster.nodes().get().stream().map(n -> List.of(n.id(), n.rack())).sorted((a, b) ->
                    Integer.compare((Integer) a.get(0), (Integer) b.get(0))).toList());

            // ---- topics
            admin.createTopics(List.of(new NewTopic("tour", 3, (short) 3),
                new NewTopic("tour-configs", 1, (short) 2).configs(Map.of("cleanup.policy", "compact")))).all().get();
            try {
                admin.createTopics(List.of(new NewTopic("tour", 1, (short) 1))).all().get();
                Driver.emit("create again", "error", null);
            } catch (ExecutionException e) {
                Driver.emit("create again", "error", error(e));
            }
            try {
                admin.createTopics(List.of(new NewTopic("too-many-replicas", 1, (short) 4))).all().get();
                Driver.emit("create rf 4", "error", null);
            } catch (ExecutionException e) {
                Driver.emit("create rf 4", "error", error(e));
            }
            Driver.emit("list topics", "names", new TreeMap<>(admin.listTopics().namesToListings().get()).keySet());
            admin.createPartitions(Map.of("tour", NewPartitions.increaseTo(4))).all().get();
            TopicDescription tour = admin.describeTopics(List.of("tour")).allTopicNames().get().get("tour");
            Driver.emit("describe topic", "name", tour.name(), "internal", tour.isInternal(),
                "partitions", tour.partitions().stream().map(AdminTour::partition).toList());

            // ---- configs
            ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, "tour-configs");
            admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            Config config = admin.describeConfigs(List.of(topicResource)).all().get().get(topicResource);
            Driver.emit("topic configs", "retention.ms", entry(config, "retention.ms"),
                "cleanup.policy", entry(config, "cleanup.policy"));
            ConfigResource brokerResource = new ConfigResource(ConfigResource.Type.BROKER, "0");
            Config broker = admin.describeConfigs(List.of(brokerResource)).all().get().get(brokerResource);
            Driver.emit("broker configs", "num.partitions", entry(broker, "num.partitions"),
                "entries", broker.entries().size());

            // ---- records, offsets, producers
            long before;
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Driver.client(bootstrap, Map.of(
                    "acks", "all",
                    "enable.idempotence", true,
                    "key.serializer", StringSerializer.class.getName(),
                    "value.serializer", StringSerializer.class.getName())))) {
                before = System.currentTimeMillis();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("tour", 0, "k" + i, "v" + i)).get();
                }
            }
            TopicPartition tour0 = new TopicPartition("tour", 0);
            Driver.emit("offsets",
                "earliest", admin.listOffsets(Map.of(tour0, OffsetSpec.earliest())).partitionResult(tour0).get().offset(),
                "latest", admin.listOffsets(Map.of(tour0, OffsetSpec.latest())).partitionResult(tour0).get().offset(),
                "max timestamp", admin.listOffsets(Map.of(tour0, OffsetSpec.maxTimestamp())).partitionResult(tour0).get().offset(),
                "by time", admin.listOffsets(Map.of(tour0, OffsetSpec.forTimestamp(before))).partitionResult(tour0).get().offset());
            DescribeProducersResult producers = admin.describeProducers(List.of(tour0));
            List<ProducerState> states = producers.partitionResult(tour0).get().activeProducers();
            Driver.emit("producers", "count", states.size(),
                "last sequence", states.isEmpty() ? null : states.get(0).lastSequence());
            admin.deleteRecords(Map.of(tour0, RecordsToDelete.beforeOffset(4))).all().get();
            ListOffsetsResult.ListOffsetsResultInfo earliest =
                admin.listOffsets(Map.of(tour0, OffsetSpec.earliest())).partitionResult(tour0).get();
            Driver.emit("deleted records", "earliest", earliest.offset());

            // ---- groups
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Driver.client(bootstrap, Map.of(
                    "group.id", "tour-group",
                    "group.protocol", "classic",
                    "enable.auto.commit", false,
                    "key.deserializer", StringDeserializer.class.getName(),
                    "value.deserializer", StringDeserializer.class.getName())))) {
                consumer.assign(List.of(tour0));
                consumer.commitSync(Map.of(tour0, new OffsetAndMetadata(7, "seven")));
            }
            Driver.emit("list groups", "groups", admin.listGroups().all().get().stream()
                .map(GroupListing::groupId).sorted().toList());
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of("tour-group"))
                .describedGroups().get("tour-group").get();
            Driver.emit("describe group", "state", group.groupState().toString(), "members", group.members().size(),
                "coordinator", group.coordinator().id());
            Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets("tour-group").partitionsToOffsetAndMetadata().get();
            Driver.emit("group offsets", "offset", offsets.get(tour0).offset(), "metadata", offsets.get(tour0).metadata());
            admin.alterConsumerGroupOffsets("tour-group", Map.of(tour0, new OffsetAndMetadata(9))).all().get();
            Driver.emit("altered offsets", "offset", admin.listConsumerGroupOffsets("tour-group")
                .partitionsToOffsetAndMetadata().get().get(tour0).offset());
            admin.deleteConsumerGroupOffsets("tour-group", Set.of(tour0)).all().get();
            Driver.emit("deleted offsets", "offsets", admin.listConsumerGroupOffsets("tour-group")
                .partitionsToOffsetAndMetadata().get().size());
            admin.deleteConsumerGroups(List.of("tour-group")).all().get();
            Driver.emit("deleted group", "groups", admin.listGroups().all().get().stream()
                .map(GroupListing::groupId).filter(g -> g.equals("tour-group")).toList());

            // ---- log directories
            Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(List.of(0, 1, 2)).allDescriptions().get();
            Map<Integer, List<String>> replicas = new TreeMap<>();
            dirs.forEach((b, byDir) -> byDir.forEach((dir, description) -> {
                List<String> names = new ArrayList<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> r : description.replicaInfos().entrySet()) {
                    if (r.getKey().topic().equals("tour")) {
                        names.add(dir + ":" + r.getKey());
                    }
                }
                names.sort(null);
                replicas.put(b, names);
            }));
            Driver.emit("log dirs", "replicas", replicas);

            // ---- reassignment and leader election
            List<Integer> current = tour.partitions().get(1).replicas().stream().map(Node::id).toList();
            List<Integer> reversed = new ArrayList<>(current);
            java.util.Collections.reverse(reversed);
            TopicPartition tour1 = new TopicPartition("tour", 1);
            admin.alterPartitionReassignments(Map.of(tour1, Optional.of(new NewPartitionReassignment(reversed)))).all().get();
            Map<TopicPartition, PartitionReassignment> ongoing = admin.listPartitionReassignments().reassignments().get();
            Driver.emit("reassigned", "from", current, "to", reversed, "ongoing", ongoing.size());
            TopicPartitionInfo after = admin.describeTopics(List.of("tour")).allTopicNames().get().get("tour").partitions().get(1);
            Driver.emit("after reassignment", "replicas", after.replicas().stream().map(Node::id).toList(),
                "leader", after.leader().id());
            Map<TopicPartition, Optional<Throwable>> elected =
                admin.electLeaders(ElectionType.PREFERRED, Set.of(tour1, tour0)).partitions().get();
            Map<String, String> outcome = new TreeMap<>();
            elected.forEach((tp, e) -> outcome.put(tp.toString(), e.map(x -> x instanceof ElectionNotNeededException
                ? "ElectionNotNeededException" : x.getClass().getSimpleName()).orElse("elected")));
            TopicPartitionInfo reelected = admin.describeTopics(List.of("tour")).allTopicNames().get().get("tour").partitions().get(1);
            Driver.emit("elected", "outcome", outcome, "leader", reelected.leader().id());

            // ---- delete
            admin.deleteTopics(List.of("tour", "tour-configs")).all().get();
            Driver.emit("deleted topics", "names", new TreeMap<>(admin.listTopics().namesToListings().get()).keySet());
        }
    }

    static Map<String, Object> partition(TopicPartitionInfo p) {
        return Map.of("partition", p.partition(), "leader", p.leader().id(),
            "replicas", p.replicas().stream().map(Node::id).toList(), "isr", p.isr().stream().map(Node::id).toList());
    }

    static Map<String, Object> entry(Config config, String name) {
        ConfigEntry e = config.get(name);
        if (e == null) {
            return null;
        }
        return Map.of("value", String.valueOf(e.value()), "source", e.source().toString());
    }
}
