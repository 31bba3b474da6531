// Prints reference values from the JVM for the Java-compatibility tests (java_reference.json).
// Regenerate with: java tests/controller/placement/data/JavaReference.java > tests/controller/placement/data/java_reference.json
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.StringJoiner;

public class JavaReference {
    static final long[] SEEDS = {0L, 1L, 42L, -1L, 1099511627783L, Long.MIN_VALUE, Long.MAX_VALUE};
    static final int[] BOUNDS = {1, 2, 3, 7, 10, 16, 1000, 1073741825, Integer.MAX_VALUE};

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String opt(Optional<String> o) {
        return o.isPresent() ? str(o.get()) : "null";
    }

    static String list(List<?> items) {
        StringJoiner j = new StringJoiner(", ", "[", "]");
        for (Object o : items) j.add(o instanceof String ? str((String) o) : String.valueOf(o));
        return j.toString();
    }

    /** Kafka's test generator: java.util.Random with next(bits) from a 64-bit LCG whose state starts at 17. */
    static class MockRandom extends Random {
        private long state;

        MockRandom(long state) {
            this.state = state;
        }

        @Override
        protected int next(int bits) {
            state = state * 2862933555777941757L + 3037000493L;
            return (int) (state >>> (64 - bits));
        }
    }

    static final long[] MOCK_STATES = {17L, 0L, 1L, -5L, Long.MAX_VALUE};

    static String draws(String key, long seed, Random r) {
        List<Object> ints = new ArrayList<>();
        for (int i = 0; i < 5; i++) ints.add(r.nextInt());
        List<Object> bounded = new ArrayList<>();
        for (int bound : BOUNDS) for (int i = 0; i < 3; i++) bounded.add(r.nextInt(bound));
        List<Object> longs = new ArrayList<>();
        for (int i = 0; i < 3; i++) longs.add(r.nextLong());
        List<Object> doubles = new ArrayList<>();
        for (int i = 0; i < 3; i++) doubles.add(r.nextDouble());
        List<Object> floats = new ArrayList<>();
        for (int i = 0; i < 3; i++) floats.add(r.nextFloat());
        List<Object> booleans = new ArrayList<>();
        for (int i = 0; i < 5; i++) booleans.add(r.nextBoolean());
        List<Integer> shuffled = new ArrayList<>();
        for (int i = 0; i < 20; i++) shuffled.add(i);
        Collections.shuffle(shuffled, r);
        return "    {\"" + key + "\": " + seed + ", \"next_int\": " + list(ints) + ", \"bounds\": "
            + list(Arrays.asList(Arrays.stream(BOUNDS).boxed().toArray())) + ", \"next_int_bounded\": "
            + list(bounded) + ", \"next_long\": " + list(longs) + ", \"next_double\": " + list(doubles)
            + ", \"next_float\": " + list(floats) + ", \"next_boolean\": " + list(booleans)
            + ", \"shuffle_0_to_19\": " + list(shuffled) + "}";
    }

    public static void main(String[] args) {
        StringJoiner randoms = new StringJoiner(",\n", "[\n", "\n  ]");
        for (long seed : SEEDS) randoms.add(draws("seed", seed, new Random(seed)));
        StringJoiner mocks = new StringJoiner(",\n", "[\n", "\n  ]");
        for (long state : MOCK_STATES) mocks.add(draws("state", state, new MockRandom(state)));

        String[] names = {"", "a", "1", "rack-1", "Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "us-east-1a",
            "/dc1/r2", "\u00e9t\u00e9", "\u673a\u67b6", "\ud83d\ude80rocket", "\uffff", "\ud800\udc00",
            "a very long rack name that overflows the hash many times over and over"};
        StringJoiner hashes = new StringJoiner(",\n", "[\n", "\n  ]");
        for (String n : names) hashes.add("    [" + str(n) + ", " + n.hashCode() + "]");

        List<String> sorted = new ArrayList<>(Arrays.asList(names));
        Collections.sort(sorted);

        List<List<Optional<String>>> keySets = new ArrayList<>();
        keySets.add(Arrays.asList(Optional.of("1"), Optional.of("3"), Optional.of("2"), Optional.empty(), Optional.of("4")));
        keySets.add(Arrays.asList(Optional.of("BB"), Optional.of("rack-b"), Optional.of("Aa"), Optional.of("rack-a"), Optional.empty()));
        List<Optional<String>> many = new ArrayList<>();
        for (int i = 0; i < 40; i++) many.add(Optional.of("rack-" + (i * 7 % 40)));
        keySets.add(many);
        List<Optional<String>> paths = new ArrayList<>();
        for (int d = 3; d >= 1; d--) for (int r = 1; r <= 4; r++) paths.add(Optional.of("/dc" + d + "/r" + r));
        keySets.add(paths);
        List<Optional<String>> odd = new ArrayList<>();
        for (String n : names) odd.add(Optional.of(n));
        odd.add(Optional.empty());
        keySets.add(odd);
        StringJoiner orders = new StringJoiner(",\n", "[\n", "\n  ]");
        for (List<Optional<String>> keys : keySets) {
            Map<Optional<String>, Integer> map = new HashMap<>();
            for (Optional<String> k : keys) map.put(k, 0);
            StringJoiner in = new StringJoiner(", ", "[", "]");
            for (Optional<String> k : keys) in.add(opt(k));
            StringJoiner out = new StringJoiner(", ", "[", "]");
            for (Optional<String> k : map.keySet()) out.add(opt(k));
            orders.add("    {\"insertion\": " + in + ", \"iteration\": " + out + "}");
        }

        System.out.println("{");
        System.out.println("  \"java_version\": " + str(System.getProperty("java.version")) + ",");
        System.out.println("  \"random\": " + randoms + ",");
        System.out.println("  \"mock_random\": " + mocks + ",");
        System.out.println("  \"string_hash\": " + hashes + ",");
        System.out.println("  \"string_sorted\": " + list(sorted) + ",");
        System.out.println("  \"hashmap_order\": " + orders);
        System.out.println("}");
    }
}
