import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.DataInputStream;
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A floor, not a decoder: what one JVM thread spends reading TiCDC Debezium messages with Jackson's
 * streaming parser, the schema parsed once per distinct schema text (tests/bench/bench_jvm_json_floor.py).
 *
 * <p>Per message: the key's payload members as text; the value's {@code schema} fingerprinted (CRC32C
 * and length) and compared byte for byte with the text last seen under that fingerprint (a miss walks the
 * schema once and keeps its column names); the {@code payload}'s {@code op}, {@code source.db}, {@code source.table},
 * {@code source.commit_ts} and every column of {@code before} and {@code after} as text. It does none of
 * the decoder's checks (byte-for-byte layout, canonical values, binding to a schema version) and builds
 * no output rows: whatever a JVM decoder does costs at least this.
 *
 * <p>Two ways to find the schema's bytes, run alternately in every pass: {@code tokenized} skips it token
 * by token with Jackson ({@code skipChildren}); {@code untokenized} reads it as the text from the colon
 * after its name to the envelope's last {@code '}'} where it is the last member (TiCDC writes
 * {@code {"payload":P,"schema":S}}), so only the payload is tokenized.
 *
 * <p>Input: a file of messages, each {@code int keyLength} (-1: no key), key bytes, {@code int valueLength},
 * value bytes (big-endian). Arguments: the file and the number of passes. Prints one line per pass and way:
 * {@code WAY pass N: M messages, C cpu ns, W wall ns, S schemas, checksum X}.
 */
public final class DebeziumJsonFloor {
    private static final JsonFactory FACTORY = new JsonFactory();
    private final Map<Long, Schema> schemas = new HashMap<>();
    private final boolean lastMember;
    private final CRC32C crc = new CRC32C();
    private long checksum;

    private record Schema(byte[] text, List<String> columns) {}

    /** {@code lastMember}: a schema after the payload is fingerprinted without being tokenized. */
    private DebeziumJsonFloor(boolean lastMember) {
        this.lastMember = lastMember;
    }

    public static void main(String[] args) throws IOException {
        List<byte[]> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0]), 1 << 20))) {
            while (in.available() > 0) {
                int keyLength = in.readInt();
                byte[] key = null;
                if (keyLength >= 0) {
                    key = new byte[keyLength];
                    in.readFully(key);
                }
                byte[] value = new byte[in.readInt()];
                in.readFully(value);
                keys.add(key);
                values.add(value);
            }
        }
        int passes = Integer.parseInt(args[1]);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        for (int pass = 1; pass <= passes; pass++) {
            for (int turn = 0; turn < 2; turn++) {
                boolean untokenized = (pass + turn) % 2 == 0; // A B, then B A
                DebeziumJsonFloor floor = new DebeziumJsonFloor(untokenized);
                long cpu = threads.getCurrentThreadCpuTime();
                long wall = System.nanoTime();
                for (int i = 0; i < values.size(); i++) {
                    if (keys.get(i) != null) {
                        floor.key(keys.get(i));
                    }
                    floor.value(values.get(i));
                }
                cpu = threads.getCurrentThreadCpuTime() - cpu;
                wall = System.nanoTime() - wall;
                System.out.printf(
                    "%s pass %d: %d messages, %d cpu ns, %d wall ns, %d schemas, checksum %d%n",
                    untokenized ? "untokenized" : "tokenized", pass, values.size(), cpu, wall,
                    floor.schemas.size(), floor.checksum);
            }
        }
    }

    private void key(byte[] key) throws IOException {
        try (JsonParser p = FACTORY.createParser(key)) {
            expect(p.nextToken(), JsonToken.START_OBJECT);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken token = p.nextToken();
                if (name.equals("payload") && token == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        p.nextToken();
                        checksum += p.getText().hashCode();
                    }
                } else {
                    p.skipChildren();
                }
            }
        }
    }

    private void value(byte[] value) throws IOException {
        try (JsonParser p = FACTORY.createParser(value)) {
            expect(p.nextToken(), JsonToken.START_OBJECT);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                if (name.equals("schema") && lastMember) {
                    // TiCDC writes {"payload":P,"schema":S}: S runs from after the colon to the last '}'
                    // and is never tokenized, only fingerprinted and compared with the one seen before.
                    int start = (int) p.currentTokenLocation().getByteOffset();
                    while (value[start] != ':') {
                        start++;
                    }
                    start++;
                    int end = value.length - 1;
                    while (value[end] != '}') {
                        end--;
                    }
                    schema(value, start, end);
                    return;
                }
                JsonToken token = p.nextToken();
                if (name.equals("schema") && token == JsonToken.START_OBJECT) {
                    int start = (int) p.currentTokenLocation().getByteOffset();
                    p.skipChildren();
                    schema(value, start, (int) p.currentLocation().getByteOffset());
                } else if (name.equals("payload") && token == JsonToken.START_OBJECT) {
                    payload(p);
                } else {
                    p.skipChildren();
                }
            }
        }
    }

    private void schema(byte[] value, int start, int end) throws IOException {
        crc.reset();
        crc.update(value, start, end - start);
        long fingerprint = crc.getValue() ^ ((long) (end - start) << 32);
        Schema known = schemas.get(fingerprint);
        if (known == null || !Arrays.equals(known.text, 0, known.text.length, value, start, end)) {
            known = new Schema(Arrays.copyOfRange(value, start, end), schemaColumns(value, start, end - start));
            schemas.put(fingerprint, known);
        }
        checksum += known.columns.size();
    }

    private void payload(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken token = p.nextToken();
            switch (name) {
                case "before", "after" -> {
                    if (token == JsonToken.START_OBJECT) {
                        image(p);
                    }
                }
                case "op" -> checksum += p.getText().hashCode();
                case "source" -> source(p);
                default -> p.skipChildren();
            }
        }
    }

    private void image(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String column = p.currentName();
            JsonToken token = p.nextToken();
            String text = token == JsonToken.VALUE_NULL ? null : p.getText();
            checksum += column.length() + (text == null ? 0 : text.hashCode());
        }
    }

    private void source(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            switch (name) {
                case "db", "table" -> checksum += p.getText().hashCode();
                case "commit_ts" -> checksum += p.getLongValue();
                default -> p.skipChildren();
            }
        }
    }

    /** Walks a schema once: the {@code field} names of its structs, in order. */
    private static List<String> schemaColumns(byte[] value, int start, int length) throws IOException {
        List<String> names = new ArrayList<>();
        try (JsonParser p = FACTORY.createParser(value, start, length)) {
            for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
                if (t == JsonToken.FIELD_NAME && p.currentName().equals("field")) {
                    p.nextToken();
                    names.add(p.getText());
                }
            }
        }
        return names;
    }

    private static void expect(JsonToken found, JsonToken wanted) {
        if (found != wanted) {
            throw new IllegalStateException("expected " + wanted + ", found " + found);
        }
    }
}
