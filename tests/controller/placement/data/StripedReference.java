// Prints striped placements computed on the JVM for test_striped.py.
// Regenerate with:
//   java tests/controller/placement/data/StripedReference.java > tests/controller/placement/data/striped_reference.json
//   java tests/controller/placement/data/StripedReference.java continue \
//       > tests/controller/placement/data/striped_continue_reference.json
//
// The placement follows the striped algorithm as the project documents it (rack cursors, epochs,
// reshuffles), written with the Java collections whose behaviour decides Kafka's results:
// java.util.Random, a HashMap keyed by Optional<String> rack names (initialisation and shuffle
// order), Collections.shuffle and a sort with the absent rack first, then String.compareTo.
//
// With "continue", each case places a second time on a changed cluster (brokers gone, fenced,
// unfenced or added, in a new order), continuing the offsets of the first placement's partitions as
// KAFKA-14437 proposed: a rack's unfenced cursor starts after the broker of that rack the latest
// partition used (found among the unfenced brokers in the order they came, before sorting), the
// starting rack after the last partition's leader's rack; what is not found is drawn as usual.
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.StringJoiner;

public class StripedReference {
    static final String[] RACK_POOL = {"1", "2", "10", "Aa", "BB", "AaAa", "BBBB", "rack-a", "rack-b",
        "us-east-1a", "/dc1/r2", "\u00e9t\u00e9", "\u673a\u67b6", "\ud83d\ude80", "\uffff", "z", "Z", "", "r13",
        "r14", "r15", "r16"};

    static final class Cursor {
        final List<Integer> ids = new ArrayList<>();
        int index = 0, offset = 0, epoch = 0;

        void init(Random rnd) {
            if (!ids.isEmpty()) {
                Collections.sort(ids);
                offset = rnd.nextInt(ids.size());
            }
        }

        int next(int e) {
            if (ids.isEmpty()) return -1;
            if (epoch != e) {
                epoch = e;
                index = 0;
                offset = (offset + 1) % ids.size();
            }
            if (index >= ids.size()) return -1;
            return ids.get((index++ + offset) % ids.size());
        }
    }

    static final class Group {
        final Cursor fenced = new Cursor(), unfenced = new Cursor();
    }

    // Where the broker of `rack` that the latest partition used sits among `ids` (the rack's unfenced
    // brokers as they came), or null: not used, or not unfenced now.
    static Integer previousPlace(Map<Integer, Optional<String>> rackOf, List<List<Integer>> existing,
                                 Optional<String> rack, List<Integer> ids) {
        for (int p = existing.size() - 1; p >= 0; p--) {
            for (int id : existing.get(p)) {
                Optional<String> r = rackOf.get(id);
                if (r != null && r.equals(rack)) {
                    int at = ids.indexOf(id);
                    return at < 0 ? null : at;
                }
            }
        }
        return null;
    }

    static List<List<Integer>> place(Random rnd, List<int[]> brokers, List<Optional<String>> racksOf,
                                     int partitions, int rf) {
        return place(rnd, brokers, racksOf, partitions, rf, new ArrayList<>());
    }

    static List<List<Integer>> place(Random rnd, List<int[]> brokers, List<Optional<String>> racksOf,
                                     int partitions, int rf, List<List<Integer>> existing) {
        Map<Optional<String>, Group> groups = new HashMap<>();
        Map<Integer, Optional<String>> rackOf = new HashMap<>();
        List<Optional<String>> names = new ArrayList<>();
        int total = 0, unfenced = 0;
        for (int i = 0; i < brokers.size(); i++) {
            Optional<String> rack = racksOf.get(i);
            rackOf.put(brokers.get(i)[0], rack);
            Group g = groups.get(rack);
            if (g == null) {
                g = new Group();
                groups.put(rack, g);
                names.add(rack);
            }
            if (brokers.get(i)[1] == 1) {
                g.fenced.ids.add(brokers.get(i)[0]);
            } else {
                g.unfenced.ids.add(brokers.get(i)[0]);
                unfenced++;
            }
            total++;
        }
        for (Map.Entry<Optional<String>, Group> e : groups.entrySet()) {
            Group g = e.getValue();
            Integer previous = previousPlace(rackOf, existing, e.getKey(), g.unfenced.ids);
            g.fenced.init(rnd);
            if (previous == null) {
                g.unfenced.init(rnd);
            } else {
                Collections.sort(g.unfenced.ids);
                g.unfenced.offset = (previous + 1) % g.unfenced.ids.size();
            }
        }
        names.sort((a, b) -> a.isPresent() ? (b.isPresent() ? a.get().compareTo(b.get()) : 1) : (b.isPresent() ? -1 : 0));
        int previousRack = -1;
        if (!existing.isEmpty()) {
            Optional<String> leaderRack = rackOf.get(existing.get(existing.size() - 1).get(0));
            if (leaderRack != null) previousRack = names.indexOf(leaderRack);
        }
        int offset = previousRack >= 0 ? (previousRack + 1) % names.size()
            : names.isEmpty() ? 0 : rnd.nextInt(names.size());
        if (rf <= 0) throw new IllegalArgumentException("Invalid replication factor " + rf + ": the replication factor must be positive.");
        if (unfenced == 0) throw new IllegalArgumentException("All brokers are currently fenced, or have all their log directories cordoned.");
        if (rf > total) throw new IllegalArgumentException("The target replication factor of " + rf
            + " cannot be reached because only " + total + " broker(s) are registered or some brokers have all their log directories cordoned.");
        int epoch = 0;
        List<List<Integer>> result = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            if (epoch == unfenced && unfenced > 1) {
                Collections.shuffle(names, rnd);
                for (Group g : groups.values()) {
                    Collections.shuffle(g.fenced.ids, rnd);
                    Collections.shuffle(g.unfenced.ids, rnd);
                }
                epoch = 0;
            }
            if (offset == names.size()) offset = 0;
            List<Integer> replicas = new ArrayList<>();
            int first = offset;
            while (true) {
                int leader = groups.get(names.get(first)).unfenced.next(epoch);
                if (leader >= 0) {
                    replicas.add(leader);
                    break;
                }
                first = (first + 1) % names.size();
            }
            int rackIndex = offset;
            for (int r = 1; r < rf; r++) {
                int follower = -1;
                do {
                    if (rackIndex == first) {
                        first = -1;
                    } else {
                        Group g = groups.get(names.get(rackIndex));
                        follower = g.unfenced.next(epoch);
                        if (follower < 0) follower = g.fenced.next(epoch);
                    }
                    rackIndex = (rackIndex + 1) % names.size();
                } while (follower < 0);
                replicas.add(follower);
            }
            result.add(replicas);
            epoch++;
            offset++;
        }
        return result;
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String brokersJson(List<int[]> brokers, List<Optional<String>> racksOf) {
        StringJoiner bs = new StringJoiner(", ", "[", "]");
        for (int i = 0; i < brokers.size(); i++) {
            Optional<String> rack = racksOf.get(i);
            bs.add("[" + brokers.get(i)[0] + ", " + (rack.isPresent() ? str(rack.get()) : "null") + ", "
                + (brokers.get(i)[1] == 1) + "]");
        }
        return bs.toString();
    }

    static String placementsJson(List<List<Integer>> placements) {
        StringJoiner parts = new StringJoiner(", ", "[", "]");
        for (List<Integer> r : placements) parts.add(r.toString());
        return parts.toString();
    }

    // A first placement on one cluster, then a continued one on a changed cluster.
    static void continued() {
        Random gen = new Random(14437L);
        StringJoiner cases = new StringJoiner(",\n", "[\n", "\n]");
        for (int c = 0; c < 60; c++) {
            int numRacks = 1 + gen.nextInt(c < 20 ? 4 : RACK_POOL.length);
            List<String> pool = new ArrayList<>();
            for (String r : RACK_POOL) pool.add(r);
            Collections.shuffle(pool, gen);
            List<Optional<String>> choices = new ArrayList<>();
            for (int i = 0; i < numRacks; i++) choices.add(Optional.of(pool.get(i)));
            if (gen.nextInt(3) == 0) choices.set(0, Optional.empty());
            int n = 2 + gen.nextInt(24);
            Set<Integer> used = new HashSet<>();
            List<int[]> brokers = new ArrayList<>();
            List<Optional<String>> racksOf = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id;
                do {
                    id = gen.nextInt(4) == 0 ? gen.nextInt(Integer.MAX_VALUE) : gen.nextInt(100);
                } while (!used.add(id));
                brokers.add(new int[] {id, gen.nextInt(5) == 0 ? 1 : 0});
                racksOf.add(choices.get(gen.nextInt(choices.size())));
            }
            brokers.get(0)[1] = 0;
            int rf = 1 + gen.nextInt(Math.min(n, 4));
            List<List<Integer>> existing = c % 10 == 0 ? new ArrayList<>()
                : place(new Random(gen.nextLong()), brokers, racksOf, 1 + gen.nextInt(40), rf);
            if (c % 10 == 5) {  // hand-made assignments: any ids, known or not, in any order
                existing = new ArrayList<>();
                for (int p = 1 + gen.nextInt(6); p > 0; p--) {
                    List<Integer> replicas = new ArrayList<>();
                    for (int r = 1 + gen.nextInt(4); r > 0; r--) {
                        replicas.add(gen.nextInt(3) == 0 ? gen.nextInt(200) : brokers.get(gen.nextInt(n))[0]);
                    }
                    existing.add(replicas);
                }
            }
            // The cluster changes: brokers leave, get fenced or unfenced, join; they come in a new order.
            List<int[]> after = new ArrayList<>();
            List<Optional<String>> racksAfter = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int change = gen.nextInt(8);
                if (change == 0 && i > 0) continue;
                int fenced = change == 1 ? 1 - brokers.get(i)[1] : brokers.get(i)[1];
                after.add(new int[] {brokers.get(i)[0], fenced});
                racksAfter.add(racksOf.get(i));
            }
            for (int k = gen.nextInt(3); k > 0; k--) {
                int id;
                do {
                    id = gen.nextInt(200);
                } while (!used.add(id));
                after.add(new int[] {id, gen.nextInt(5) == 0 ? 1 : 0});
                racksAfter.add(choices.get(gen.nextInt(choices.size())));
            }
            for (int i = after.size() - 1; i > 0; i--) {
                int j = gen.nextInt(i + 1);
                Collections.swap(after, i, j);
                Collections.swap(racksAfter, i, j);
            }
            int rfAfter = c % 15 == 14 ? after.size() + 1 : 1 + gen.nextInt(Math.min(after.size(), 4));
            int partitions = 1 + gen.nextInt(40);
            long seed = gen.nextLong();
            String outcome;
            try {
                outcome = "\"result\": " + placementsJson(
                    place(new Random(seed), after, racksAfter, partitions, rfAfter, existing));
            } catch (IllegalArgumentException e) {
                outcome = "\"error\": " + str(e.getMessage());
            }
            cases.add("  {\"seed\": " + seed + ", \"existing\": " + placementsJson(existing)
                + ", \"partitions\": " + partitions + ", \"rf\": " + rfAfter
                + ", \"brokers\": " + brokersJson(after, racksAfter) + ", " + outcome + "}");
        }
        System.out.println(cases);
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("continue")) {
            continued();
            return;
        }
        Random gen = new Random(20240611L);
        StringJoiner cases = new StringJoiner(",\n", "[\n", "\n]");
        for (int c = 0; c < 60; c++) {
            int numRacks = 1 + gen.nextInt(c < 20 ? 4 : RACK_POOL.length);
            List<String> pool = new ArrayList<>();
            for (String r : RACK_POOL) pool.add(r);
            Collections.shuffle(pool, gen);
            List<Optional<String>> choices = new ArrayList<>();
            for (int i = 0; i < numRacks; i++) choices.add(Optional.of(pool.get(i)));
            if (gen.nextInt(3) == 0) choices.set(0, Optional.empty());
            int n = 1 + gen.nextInt(30);
            Set<Integer> used = new HashSet<>();
            List<int[]> brokers = new ArrayList<>();
            List<Optional<String>> racksOf = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id;
                do {
                    id = gen.nextInt(4) == 0 ? gen.nextInt(Integer.MAX_VALUE) : gen.nextInt(100);
                } while (!used.add(id));
                brokers.add(new int[] {id, gen.nextInt(4) == 0 ? 1 : 0});
                racksOf.add(choices.get(gen.nextInt(choices.size())));
            }
            if (c % 10 != 9) brokers.get(0)[1] = 0;  // mostly at least one unfenced broker
            int rf = c % 15 == 14 ? n + 1 : 1 + gen.nextInt(Math.min(n, 4));
            int partitions = 1 + gen.nextInt(80);
            long seed = gen.nextLong();
            String outcome;
            try {
                outcome = "\"result\": " + placementsJson(place(new Random(seed), brokers, racksOf, partitions, rf));
            } catch (IllegalArgumentException e) {
                outcome = "\"error\": " + str(e.getMessage());
            }
            cases.add("  {\"seed\": " + seed + ", \"partitions\": " + partitions + ", \"rf\": " + rf
                + ", \"brokers\": " + brokersJson(brokers, racksOf) + ", " + outcome + "}");
        }
        System.out.println(cases);
    }
}
