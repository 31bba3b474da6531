package placementsim.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

/**
 * Kafka's own placement and election code, asked case by case: one JSON object a line on stdin, one
 * answer a line on stdout, in order, for as long as stdin stays open (one JVM serves a whole test run).
 *
 * <p>{"op": "place", "seed": s, "brokers": [[id, rack or null, fenced], ...], "calls": [[start, partitions,
 * replicas], ...]}: a StripedReplicaPlacer given new Random(s) places each call in turn (the placer and its
 * Random live across the calls, as in the controller); the answer is {"results": [{"replicas": [[...], ...]}
 * or {"error": exception class, "message": ...}, ...]}.
 *
 * <p>{"op": "elect", "partition": {...}, "acceptable": [...], "election": "PREFERRED" | "ONLINE" | "UNCLEAN",
 * "targetIsr", "targetReplicas", "targetAdding", "targetRemoving" (absent or null: as they are),
 * "elrEnabled", "minIsr", "uncleanShutdownReplicas"}: a PartitionChangeBuilder on that registration; the
 * answer is {"changed": whether it built a record, "partition": the registration with the record merged}.
 * A partition is {"replicas", "isr", "leader", "leaderEpoch", "partitionEpoch", "recovering", "adding",
 * "removing", "elr", "lastKnownElr"}.
 *
 * <p>{"op": "version"}: the Kafka version on the class path and the metadata version the builder runs at.
 */
public final class KafkaRules {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Uuid TOPIC_ID = Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ");
    /** The metadata version a cluster of this Kafka release is formatted with by default. */
    private static final MetadataVersion METADATA_VERSION = MetadataVersion.latestProduction();

    private KafkaRules() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode answer;
            try {
                answer = answer(JSON.readTree(line));
            } catch (Exception e) {
                ObjectNode failed = JSON.createObjectNode();
                failed.put("failed", e.getClass().getName());
                failed.put("message", String.valueOf(e.getMessage()));
                answer = failed;
            }
            out.write(JSON.writeValueAsString(answer));
            out.write('\n');
            // Answer at once when no more questions are waiting (the asker may wait for this answer).
            if (!in.ready()) {
                out.flush();
            }
        }
        out.flush();
    }

    static JsonNode answer(JsonNode request) {
        String op = request.path("op").asText();
        switch (op) {
            case "place":
                return place(request);
            case "elect":
                return elect(request);
            case "version":
                ObjectNode version = JSON.createObjectNode();
                version.put("kafka", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
                version.put("metadataVersion", METADATA_VERSION.version());
                return version;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ----------------------------------------------------------------------------------------- placement

    static JsonNode place(JsonNode request) {
        List<UsableBroker> brokers = new ArrayList<>();
        for (JsonNode b : request.get("brokers")) {
            Optional<String> rack = b.get(1).isNull() ? Optional.empty() : Optional.of(b.get(1).asText());
            brokers.add(new UsableBroker(b.get(0).asInt(), rack, b.get(2).asBoolean()));
        }
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return DirectoryId.UNASSIGNED;
            }
        };
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(request.get("seed").asLong()));
        ArrayNode results = JSON.createArrayNode();
        for (JsonNode call : request.get("calls")) {
            ObjectNode result = results.addObject();
            try {
                PlacementSpec spec = new PlacementSpec(call.get(0).asInt(), call.get(1).asInt(), (short) call.get(2).asInt());
                TopicAssignment assignment = placer.place(spec, cluster);
                ArrayNode partitions = result.putArray("replicas");
                for (PartitionAssignment partition : assignment.assignments()) {
                    ArrayNode replicas = partitions.addArray();
                    partition.replicas().forEach(replicas::add);
                }
            } catch (Exception e) {
                result.put("error", e.getClass().getSimpleName());
                result.put("message", e.getMessage());
            }
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.set("results", results);
        return answer;
    }

    // ----------------------------------------------------------------------------------------- election

    static JsonNode elect(JsonNode request) {
        JsonNode p = request.get("partition");
        int[] replicas = ints(p.get("replicas"));
        PartitionRegistration partition = new PartitionRegistration.Builder()
            .setReplicas(replicas)
            .setDirectories(DirectoryId.unassignedArray(replicas.length))
            .setIsr(ints(p.get("isr")))
            .setLeader(p.get("leader").asInt())
            .setLeaderEpoch(p.get("leaderEpoch").asInt())
            .setPartitionEpoch(p.get("partitionEpoch").asInt())
            .setLeaderRecoveryState(p.path("recovering").asBoolean() ? LeaderRecoveryState.RECOVERING : LeaderRecoveryState.RECOVERED)
            .setAddingReplicas(ints(p.path("adding")))
            .setRemovingReplicas(ints(p.path("removing")))
            .setElr(ints(p.path("elr")))
            .setLastKnownElr(ints(p.path("lastKnownElr")))
            .build();
        Set<Integer> acceptable = new HashSet<>();
        request.get("acceptable").forEach(b -> acceptable.add(b.asInt()));
        PartitionChangeBuilder builder = new PartitionChangeBuilder(
            partition,
            TOPIC_ID,
            0,
            acceptable::contains,
            METADATA_VERSION,
            request.path("minIsr").asInt(1),
            request.path("elrEnabled").asBoolean(false)
        );
        builder.setDefaultDirProvider(brokerId -> DirectoryId.UNASSIGNED);
        builder.setElection(PartitionChangeBuilder.Election.valueOf(request.get("election").asText()));
        if (present(request, "targetIsr")) {
            builder.setTargetIsr(list(request.get("targetIsr")));
        }
        if (present(request, "targetReplicas")) {
            builder.setTargetReplicas(list(request.get("targetReplicas")));
        }
        if (present(request, "targetAdding")) {
            builder.setTargetAdding(list(request.get("targetAdding")));
        }
        if (present(request, "targetRemoving")) {
            builder.setTargetRemoving(list(request.get("targetRemoving")));
        }
        if (present(request, "uncleanShutdownReplicas")) {
            builder.setUncleanShutdownReplicas(list(request.get("uncleanShutdownReplicas")));
        }
        Optional<ApiMessageAndVersion> record = builder.build();
        PartitionRegistration after = record
            .map(r -> partition.merge((PartitionChangeRecord) r.message()))
            .orElse(partition);
        ObjectNode answer = JSON.createObjectNode();
        answer.put("changed", record.isPresent());
        answer.set("partition", registration(after));
        return answer;
    }

    static ObjectNode registration(PartitionRegistration p) {
        ObjectNode node = JSON.createObjectNode();
        array(node, "replicas", p.replicas);
        array(node, "isr", p.isr);
        node.put("leader", p.leader);
        node.put("leaderEpoch", p.leaderEpoch);
        node.put("partitionEpoch", p.partitionEpoch);
        node.put("recovering", p.leaderRecoveryState == LeaderRecoveryState.RECOVERING);
        array(node, "adding", p.addingReplicas);
        array(node, "removing", p.removingReplicas);
        array(node, "elr", p.elr);
        array(node, "lastKnownElr", p.lastKnownElr);
        return node;
    }

    private static boolean present(JsonNode request, String field) {
        return request.has(field) && !request.get(field).isNull();
    }

    private static void array(ObjectNode node, String name, int[] values) {
        ArrayNode array = node.putArray(name);
        for (int v : values) {
            array.add(v);
        }
    }

    private static int[] ints(JsonNode array) {
        if (array == null || array.isMissingNode() || array.isNull()) {
            return new int[0];
        }
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).asInt();
        }
        return values;
    }

    private static List<Integer> list(JsonNode array) {
        List<Integer> values = new ArrayList<>(array.size());
        array.forEach(v -> values.add(v.asInt()));
        return values;
    }
}
