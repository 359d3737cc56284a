package ticdclake.decode;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * TiCDC Debezium row changes decoded in the JVM, one message per call, into the {@code change_events}
 * values the Python decoders give them, typed record carrier included (docs/jvm-decoder.md).
 *
 * <p>The Python decoder ({@code ticdc_lake.protocols.debezium}) stays the specification. This class
 * returns a row only for a message it can vouch for, and NULL for every other (DDL, watermark,
 * anything unusual or malformed), which the Python decoder then decodes exactly as before. It vouches
 * for a message when all of these hold:
 *
 * <ul>
 *   <li>the value is {@code {"payload":P,"schema":S}} as TiCDC writes it, where S is a schema text
 *       {@link ConnectColumns} reads (parsed once per distinct text, never tokenized again) and holds no
 *       {@code ,"schema":} of its own (so the Python decoder's cut finds the same S);
 *   <li>P is valid strict JSON (Jackson's defaults: no comments, NaN, leading zeros or raw control
 *       characters), valid UTF-8, holds no {@code \\u} escape (a surrogate one is an error to the
 *       Python decoder) and nests at most {@value JsonChecks#MAX_DEPTH} deep; no member of the
 *       payload, its {@code source} or an image is named twice;
 *   <li>{@code op} is {@code c}/{@code r}/{@code u}/{@code d} with the images that operation has
 *       ({@code debezium._usual_row}), {@code source.db} and {@code source.table} are strings and
 *       {@code source.commit_ts} an integer in 0..2^63-1;
 *   <li>each image names exactly the schema's columns, in its order, and each value converts by the
 *       column's converter ({@link ConnectColumns}) to the text the Python converter gives;
 *   <li>the key is null, or a valid JSON object (same rules) with an object {@code payload} and an
 *       object or null {@code schema};
 *   <li>the row binds to the newest schema version of its table not after its commit TSO
 *       ({@code MemorySchemaLookup.latest}), which has a layout, every column of the schema, and carries
 *       each of them in a type this decoder writes ({@link ImageCarrier#carries}).
 * </ul>
 */
public final class DebeziumRowDecoder implements UDF2<byte[], byte[], Row> {
    private static final long serialVersionUID = 1L;
    private static final byte[] PAYLOAD_FIRST = ascii("{\"payload\":");
    private static final byte[] THEN_SCHEMA = ascii(",\"schema\":");
    /** Distinct schema texts kept per task before the cache starts again. */
    private static final int SCHEMA_ENTRIES = 256;
    /** {@code events.Op}: insert, update, delete. */
    private static final Map<String, String> OPS = Map.of("c", "I", "r", "I", "u", "U", "d", "D");

    /** What {@link #call} returns: the event's values and both images' carriers. */
    public static final StructType RESULT = new StructType(new StructField[] {
        DataTypes.createStructField("op", DataTypes.StringType, false),
        DataTypes.createStructField("commit_ts", DataTypes.LongType, false),
        DataTypes.createStructField("database", DataTypes.StringType, false),
        DataTypes.createStructField("table", DataTypes.StringType, false),
        DataTypes.createStructField("schema_version", DataTypes.LongType, false),
        DataTypes.createStructField("before_record", DataTypes.BinaryType, true),
        DataTypes.createStructField("after_record", DataTypes.BinaryType, true),
        DataTypes.createStructField("before_untyped_json", DataTypes.StringType, true),
        DataTypes.createStructField("after_untyped_json", DataTypes.StringType, true),
        DataTypes.createStructField("before_key", DataTypes.createArrayType(DataTypes.StringType, true), true),
        DataTypes.createStructField("after_key", DataTypes.createArrayType(DataTypes.StringType, true), true),
        DataTypes.createStructField("record_layout", DataTypes.LongType, false),
    });

    private final String plan;
    private transient TableVersions versions;
    /** Schema texts seen by this task, by length, with their columns. */
    private transient Map<Integer, SchemaText[]> schemas;
    private transient int schemaCount;
    private transient Map<ConnectColumns, Map<TableVersions.Layout, int[]>> bindings;
    private transient ImageCarrier carrier;
    private transient ImageCarrier.Image before;
    private transient ImageCarrier.Image after;

    public DebeziumRowDecoder(String plan) {
        this.plan = plan;
    }

    /** Registers a decoder of {@code plan} (the run's versions) as the session's function {@code name}. */
    public static void register(SparkSession session, String name, String plan) {
        session.udf().register(name, new DebeziumRowDecoder(plan), RESULT);
    }

    @Override
    public Row call(byte[] key, byte[] value) {
        if (value == null || !startsWith(value, PAYLOAD_FIRST) || value[value.length - 1] != '}') {
            return null;
        }
        if (versions == null) {
            versions = new TableVersions(plan);
            schemas = new HashMap<>();
            bindings = new IdentityHashMap<>();
            carrier = new ImageCarrier();
        }
        try {
            return decode(key, value);
        } catch (IOException | RuntimeException e) {
            return null; // anything Jackson or a check refuses: the Python decoder says what is wrong
        }
    }

    private Row decode(byte[] key, byte[] value) throws IOException {
        if (key != null && !JsonChecks.keyOk(key)) {
            return null;
        }
        int cut = -1;
        ConnectColumns columns = null;
        SchemaText known = knownSchema(value);
        if (known != null) {
            cut = value.length - 1 - known.bytes.length - THEN_SCHEMA.length;
            columns = known.columns;
        } else {
            cut = lastIndexOf(value, 0, value.length, THEN_SCHEMA);
            if (cut < PAYLOAD_FIRST.length) {
                return null;
            }
            columns = learn(value, cut + THEN_SCHEMA.length, value.length - 1);
        }
        if (columns == ConnectColumns.UNUSABLE) {
            return null;
        }
        int start = PAYLOAD_FIRST.length;
        if (!JsonChecks.textOk(value, start, cut)) {
            return null;
        }
        if (before == null || before.texts.length < columns.size()) {
            before = new ImageCarrier.Image(columns.size());
            after = new ImageCarrier.Image(columns.size());
        }
        DebeziumPayload payload = new DebeziumPayload();
        try (JsonParser p = JsonChecks.JSON.createParser(value, start, cut - start)) {
            if (p.nextToken() != JsonToken.START_OBJECT || !payload.read(p, columns, before, after)
                    || p.nextToken() != null) {
                return null;
            }
        }
        if (!payload.usual()) {
            return null;
        }
        TableVersions.Layout layout = versions.latest(payload.database, payload.table, payload.commitTs);
        int[] columnOf = layout == null ? null : binding(columns, layout);
        if (columnOf == null) {
            return null;
        }
        ImageCarrier.Carrier old = payload.hasBefore ? carrier.carrier(before, layout, columnOf) : null;
        ImageCarrier.Carrier now = payload.hasAfter ? carrier.carrier(after, layout, columnOf) : null;
        return RowFactory.create(
                OPS.get(payload.op), payload.commitTs, payload.database, payload.table, layout.version,
                old == null ? null : old.record(), now == null ? null : now.record(),
                old == null ? null : old.untyped(), now == null ? null : now.untyped(),
                old == null ? null : old.key(), now == null ? null : now.key(),
                layout.fingerprint);
    }

    /**
     * Layout column -> schema column (-1: the image lacks it), or null where the version lacks a column
     * of the schema, has no layout, or carries a column in a type this decoder does not write.
     */
    private int[] binding(ConnectColumns columns, TableVersions.Layout layout) {
        Map<TableVersions.Layout, int[]> known = bindings.computeIfAbsent(columns, c -> new IdentityHashMap<>());
        if (known.containsKey(layout)) {
            return known.get(layout);
        }
        int[] columnOf = null;
        if (layout != TableVersions.NO_LAYOUT) {
            columnOf = new int[layout.names.length];
            Arrays.fill(columnOf, -1);
            for (int c = 0; c < columns.size() && columnOf != null; c++) {
                int i = layout.position(columns.names[c]);
                if (i < 0 || !ImageCarrier.carries(columns.kinds[c], layout.types[i])) {
                    columnOf = null;
                } else {
                    columnOf[i] = c;
                }
            }
        }
        known.put(layout, columnOf);
        return columnOf;
    }

    /** The schema text seen before that the value ends with (after {@code ,"schema":}), or null. */
    private SchemaText knownSchema(byte[] value) {
        for (Map.Entry<Integer, SchemaText[]> entry : schemas.entrySet()) {
            int cut = value.length - 1 - entry.getKey() - THEN_SCHEMA.length;
            if (cut < PAYLOAD_FIRST.length || !regionEquals(value, cut, THEN_SCHEMA)) {
                continue;
            }
            for (SchemaText text : entry.getValue()) {
                int start = cut + THEN_SCHEMA.length;
                if (Arrays.equals(value, start, value.length - 1, text.bytes, 0, text.bytes.length)) {
                    return text;
                }
            }
        }
        return null;
    }

    /**
     * The columns of a schema text not seen before, kept (a copy of the text) for the next messages;
     * unusable where the text itself holds {@code ,"schema":} (the Python decoder would cut the
     * envelope elsewhere) or fails {@link JsonChecks#textOk}.
     */
    private ConnectColumns learn(byte[] value, int start, int end) {
        ConnectColumns columns = lastIndexOf(value, start, end, THEN_SCHEMA) >= 0 || !JsonChecks.textOk(value, start, end)
                ? ConnectColumns.UNUSABLE
                : ConnectColumns.parse(value, start, end);
        if (schemaCount >= SCHEMA_ENTRIES) {
            schemas.clear();
            bindings.clear();
            schemaCount = 0;
        }
        SchemaText text = new SchemaText(Arrays.copyOfRange(value, start, end), columns);
        SchemaText[] same = schemas.get(text.bytes.length);
        SchemaText[] grown = same == null ? new SchemaText[1] : Arrays.copyOf(same, same.length + 1);
        grown[grown.length - 1] = text;
        schemas.put(text.bytes.length, grown);
        schemaCount++;
        return columns;
    }

    /** A schema text and its columns. */
    private record SchemaText(byte[] bytes, ConnectColumns columns) {}

    static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    private static boolean startsWith(byte[] value, byte[] prefix) {
        return value.length >= prefix.length && regionEquals(value, 0, prefix);
    }

    private static boolean regionEquals(byte[] value, int at, byte[] what) {
        return Arrays.equals(value, at, at + what.length, what, 0, what.length);
    }

    /** The last start of {@code what} wholly inside {@code value[start, end)}, or -1. */
    static int lastIndexOf(byte[] value, int start, int end, byte[] what) {
        for (int at = end - what.length; at >= start; at--) {
            if (value[at] == what[0] && regionEquals(value, at, what)) {
                return at;
            }
        }
        return -1;
    }
}
