package placementsim.clients;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;

/**
 * What the client programs share: events out as JSON lines on stdout ({"event": name, ...}), the test's
 * commands in as lines on stdin, and the client settings every program starts from.
 */
final class Driver {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    private Driver() {
    }

    /** Prints one event: {"event": name, key: value, ...} (values as Jackson writes them). */
    static synchronized void emit(String event, Object... keysAndValues) {
        ObjectNode node = JSON.createObjectNode();
        node.put("event", event);
        for (int i = 0; i < keysAndValues.length; i += 2) {
            node.set((String) keysAndValues[i], JSON.valueToTree(keysAndValues[i + 1]));
        }
        OUT.println(node.toString());
    }

    /** Blocks until the test writes {@code command} on a line of its own (IOException when stdin ends). */
    static void await(String command) throws IOException {
        String line;
        while ((line = IN.readLine()) != null) {
            if (line.trim().equals(command)) {
                return;
            }
        }
        throw new IOException("stdin ended before \"" + command + "\"");
    }

    /** Settings every client here takes: the bootstrap server and bounded timeouts. */
    static Properties client(String bootstrap, Map<String, Object> more) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", 10_000);
        props.put("default.api.timeout.ms", 30_000);
        props.put("reconnect.backoff.max.ms", 500);
        props.put("retry.backoff.max.ms", 500);
        props.putAll(more);
        return props;
    }

    /** Runs {@code body}; an exception becomes a "failed" event and exit status 1. */
    static void main(String name, ThrowingRunnable body) {
        try {
            body.run();
            emit("exit", "program", name);
            System.exit(0);
        } catch (Throwable e) {
            emit("failed", "program", name, "error", e.toString());
            e.printStackTrace();
            System.exit(1);
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }
}
