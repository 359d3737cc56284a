import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The floor of {@code DebeziumJsonFloor} as a Spark UDF (tests/bench/bench_jvm_decode_path.py): what a
 * JVM Debezium decoder costs inside a Spark query, its input read by spark-avro and its rows handed on.
 *
 * <p>Per message, the same work as the floor's {@code untokenized} way: the key's payload members as
 * text; the schema fingerprinted and compared byte for byte with the text last seen under that
 * fingerprint, never tokenized; the payload's {@code op}, {@code source.db}, {@code source.table},
 * {@code source.commit_ts} and both images' columns as text. It returns them as one row
 * ({@code STRUCT<op, commit_ts, database, table, key_members, before, after>}, the images as
 * {@code MAP<STRING, STRING>}), so Spark converts what a decoder would return. It still does none of a
 * decoder's checks (byte-for-byte layout, canonical values, binding to a schema version); NULL for a
 * message that is no row change (DDL, watermarks). {@link Records} returns each image as one binary
 * record instead of a map.
 */
public class DebeziumFloorUdf implements UDF2<byte[], byte[], Row> {
    private static final long serialVersionUID = 1L;
    private static final JsonFactory FACTORY = new JsonFactory();
    /** Row changes; a watermark is {@code m}, and a DDL has no {@code op}. */
    private static final Set<String> ROW_OPS = Set.of("c", "r", "u", "d");
    private transient Map<Long, byte[]> schemas;
    private transient CRC32C crc;

    @Override
    public Row call(byte[] key, byte[] value) throws IOException {
        if (value == null) {
            return null;
        }
        if (schemas == null) {
            schemas = new HashMap<>();
            crc = new CRC32C();
        }
        int keyMembers = key == null ? 0 : keyMembers(key);
        try (JsonParser p = FACTORY.createParser(value)) {
            if (p.nextToken() != JsonToken.START_OBJECT || p.nextToken() != JsonToken.FIELD_NAME
                    || !p.currentName().equals("payload") || p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            Object[] row = payload(p);
            if (row == null || p.nextToken() != JsonToken.FIELD_NAME || !p.currentName().equals("schema")) {
                return null;
            }
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
            row[4] = keyMembers;
            return RowFactory.create(row);
        }
    }

    private Object[] payload(JsonParser p) throws IOException {
        Object[] row = new Object[7];
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken token = p.nextToken();
            switch (name) {
                case "before" -> row[5] = token == JsonToken.START_OBJECT ? image(p) : null;
                case "after" -> row[6] = token == JsonToken.START_OBJECT ? image(p) : null;
                case "op" -> row[0] = p.getText();
                case "source" -> source(p, row);
                default -> p.skipChildren();
            }
        }
        return row[0] instanceof String op && ROW_OPS.contains(op) ? row : null;
    }

    /** One image as the row's value: here a map of column name to text. */
    protected Object image(JsonParser p) throws IOException {
        Map<String, String> image = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String column = p.currentName();
            JsonToken token = p.nextToken();
            image.put(column, token == JsonToken.VALUE_NULL ? null : p.getText());
        }
        return image;
    }

    private static void source(JsonParser p, Object[] row) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            switch (name) {
                case "db" -> row[2] = p.getText();
                case "table" -> row[3] = p.getText();
                case "commit_ts" -> row[1] = p.getLongValue();
                default -> p.skipChildren();
            }
        }
    }

    private void schema(byte[] value, int start, int end) {
        crc.reset();
        crc.update(value, start, end - start);
        long fingerprint = crc.getValue() ^ ((long) (end - start) << 32);
        byte[] known = schemas.get(fingerprint);
        if (known == null || !Arrays.equals(known, 0, known.length, value, start, end)) {
            schemas.put(fingerprint, Arrays.copyOfRange(value, start, end));
        }
    }

    private static int keyMembers(byte[] key) throws IOException {
        int members = 0;
        try (JsonParser p = FACTORY.createParser(key)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return -1;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken token = p.nextToken();
                if (name.equals("payload") && token == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        p.nextToken();
                        members += p.getText().length() > 0 ? 1 : 0;
                    }
                } else {
                    p.skipChildren();
                }
            }
        }
        return members;
    }

    /**
     * The same, each image returned as one Avro-encoded record ({@code BINARY}) instead of a map, as a
     * decoder that builds the typed record carrier itself would return it: per column a union branch, then
     * an integer token as a zig-zag varint, anything else as its length-prefixed UTF-8 text. It names the
     * UDF interface itself: Spark looks for one among a class's own interfaces, not its superclass's.
     */
    public static final class Records extends DebeziumFloorUdf implements UDF2<byte[], byte[], Row> {
        private static final long serialVersionUID = 1L;
        private transient java.io.ByteArrayOutputStream out;

        @Override
        protected Object image(JsonParser p) throws IOException {
            if (out == null) {
                out = new java.io.ByteArrayOutputStream(256);
            }
            out.reset();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                JsonToken token = p.nextToken();
                if (token == JsonToken.VALUE_NULL) {
                    out.write(0);
                } else if (token == JsonToken.VALUE_NUMBER_INT) {
                    out.write(2);
                    long value = p.getLongValue();
                    varint((value << 1) ^ (value >> 63));
                } else {
                    out.write(2);
                    byte[] text = p.getText().getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    varint((long) text.length << 1);
                    out.write(text, 0, text.length);
                }
            }
            return out.toByteArray();
        }

        private void varint(long zigzag) {
            while ((zigzag & ~0x7FL) != 0) {
                out.write((int) ((zigzag & 0x7F) | 0x80));
                zigzag >>>= 7;
            }
            out.write((int) zigzag);
        }
    }
}
