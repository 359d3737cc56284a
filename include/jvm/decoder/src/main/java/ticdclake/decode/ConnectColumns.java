package ticdclake.decode;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * The row columns of one Debezium envelope schema text, with the converter each one's values take,
 * for the columns whose converter this decoder repeats exactly; {@link #UNUSABLE} otherwise.
 *
 * <p>The specification is the Python decoder: {@code debezium.connect_field_types} (the columns of the
 * schema's {@code after} struct, else its {@code before} struct) and {@code debezium_values.field_type}
 * / {@code converter_for} (each column's converter). A column is taken only where its field schema
 * has no {@code name} (no logical type) or one of four, and its converter is one of these:
 *
 * <ul>
 *   <li>{@link Kind#INTEGER}: Connect {@code int8}..{@code int64} without a name; the bounds of
 *       {@code integer_range} (the TiDB integer type's, else the Connect width's) and the BIGINT
 *       UNSIGNED wrap; or {@code io.debezium.time.Year} (0..2155, a JSON integer);
 *   <li>{@link Kind#STRING}: Connect {@code string} or {@code bytes} without a name whose TiDB type
 *       names neither binary nor blob (a JSON string, taken as is);
 *   <li>{@link Kind#DATE}: {@code io.debezium.time.Date}, days since 1970-01-01 ({@code date_from_days});
 *   <li>{@link Kind#DATETIME}: {@code io.debezium.time.Timestamp} (milliseconds) or
 *       {@code io.debezium.time.MicroTimestamp} (microseconds) since the epoch, a DATETIME read as UTC
 *       ({@code datetime_from_millis}, {@code datetime_from_micros});
 *   <li>{@link Kind#BOOLEAN}: Connect {@code boolean} without a name, a BIT(1) ({@code _boolean}:
 *       {@code 1} or {@code 0});
 *   <li>{@link Kind#ZONED}: {@code io.debezium.time.ZonedTimestamp}, a TIMESTAMP as UTC text, kept as
 *       sent where it has the one form {@code zoned_timestamp} takes in one step;
 *   <li>{@code io.debezium.data.Json}: a {@link Kind#STRING} ({@code _string});
 *   <li>{@link Kind#ENUM}: {@code io.debezium.data.Enum}, the empty text or one of the members of
 *       {@code parameters.allowed} (a comma in a member escaped as {@code \,}), any text where it
 *       has none ({@code _enum});
 *   <li>{@link Kind#SET}: {@code io.debezium.data.EnumSet}, the empty text or members joined by
 *       commas, unchecked where a member holds a comma or there is no {@code allowed} ({@code _set});
 *   <li>{@link Kind#TIME}: {@code io.debezium.time.MicroTime}, microseconds written
 *       {@code [-]HH:MM:SS[.f...]} with hours up to 838 ({@code time_from_micros});
 *   <li>{@link Kind#BINARY}: Connect {@code string} or {@code bytes} without a name whose TiDB type
 *       names binary or blob: base64 text, taken where it is standard padded base64 whose unused
 *       padding bits are zero (what {@code base64_text} returns unchanged).
 * </ul>
 *
 * Any other column, a field schema the Python decoder would refuse, or a schema whose JSON has a
 * duplicated member (the Python reader keeps the first, Jackson's tree the last) makes the whole
 * schema unusable: its messages go to the Python decoder.
 */
final class ConnectColumns {
    enum Kind { INTEGER, STRING, DATE, DATETIME, BOOLEAN, ZONED, ENUM, SET, TIME, BINARY }

    static final ConnectColumns UNUSABLE = new ConnectColumns(new String[0], new Kind[0], null, null, null, null);
    private static final ObjectMapper READER = JsonMapper.builder(JsonChecks.JSON.copy())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
    private static final Map<String, Integer> INTEGER_BITS =
            Map.of("tinyint", 8, "smallint", 16, "mediumint", 24, "int", 32, "bigint", 64);
    private static final Map<String, Integer> CONNECT_BITS = Map.of("int8", 8, "int16", 16, "int32", 32, "int64", 64);

    final String[] names;
    final Kind[] kinds;
    /**
     * Per INTEGER column: the smallest and largest value, and whether a negative int64 wraps (BIGINT
     * UNSIGNED); per DATETIME column, {@code low} is the microseconds of one unit (1000 or 1).
     */
    final long[] low;
    final long[] high;
    final boolean[] wraps;
    /** Per ENUM or SET column: its members, or null where its values are not checked. */
    final Set<String>[] members;

    private ConnectColumns(
            String[] names, Kind[] kinds, long[] low, long[] high, boolean[] wraps, Set<String>[] members) {
        this.names = names;
        this.kinds = kinds;
        this.low = low;
        this.high = high;
        this.wraps = wraps;
        this.members = members;
    }

    int size() {
        return names.length;
    }

    /** The columns of a schema text (the bytes between {@code "schema":} and the envelope's last brace). */
    static ConnectColumns parse(byte[] text, int start, int end) {
        JsonNode schema;
        try (JsonParser parser = READER.createParser(text, start, end - start)) {
            schema = READER.readTree(parser);
            if (schema == null || parser.nextToken() != null) {
                return UNUSABLE;
            }
        } catch (IOException | RuntimeException e) {
            return UNUSABLE;
        }
        if (!schema.isObject() || !schema.path("fields").isArray()) {
            return UNUSABLE;
        }
        JsonNode after = null;
        JsonNode before = null;
        for (JsonNode field : schema.get("fields")) {
            if (!field.isObject()) {
                continue;
            }
            String which = field.path("field").isTextual() ? field.get("field").asText() : null;
            if ("after".equals(which)) {
                if (after != null) {
                    return UNUSABLE; // the Python dict keeps the last; not worth repeating
                }
                after = field;
            } else if ("before".equals(which)) {
                if (before != null) {
                    return UNUSABLE;
                }
                before = field;
            }
        }
        // `structs.get("after") or structs.get("before")`: an empty object is false in Python.
        JsonNode struct = after != null && !after.isEmpty() ? after : before;
        if (struct == null || !struct.path("fields").isArray()) {
            return UNUSABLE;
        }
        return columns(struct.get("fields"));
    }

    private static ConnectColumns columns(JsonNode specs) {
        int count = specs.size();
        String[] names = new String[count];
        Kind[] kinds = new Kind[count];
        long[] low = new long[count];
        long[] high = new long[count];
        boolean[] wraps = new boolean[count];
        @SuppressWarnings({"unchecked", "rawtypes"})
        Set<String>[] members = new Set[count];
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < count; i++) {
            JsonNode spec = specs.get(i);
            if (!spec.isObject() || !spec.path("field").isTextual() || !spec.path("type").isTextual()) {
                return UNUSABLE;
            }
            names[i] = spec.get("field").asText();
            if (!seen.add(names[i])) {
                return UNUSABLE;
            }
            JsonNode nameNode = spec.path("name");
            if (!(nameNode.isMissingNode() || nameNode.isNull())) {
                if (!nameNode.isTextual() || !logical(nameNode.asText(), i, kinds, low, high)) {
                    return UNUSABLE;
                }
                if (kinds[i] == Kind.ENUM || kinds[i] == Kind.SET) {
                    JsonNode allowed = spec.path("parameters").path("allowed");
                    members[i] = allowed.isTextual() ? allowed(allowed.asText(), kinds[i] == Kind.ENUM) : null;
                }
                JsonNode tidb = spec.path("tidb_type");
                if (!(tidb.isMissingNode() || tidb.isNull() || tidb.isTextual()) || !parametersOk(spec)) {
                    return UNUSABLE; // field_type refuses such a field schema whatever its name
                }
                continue;
            }
            JsonNode tidbNode = spec.path("tidb_type");
            if (!(tidbNode.isMissingNode() || tidbNode.isNull() || tidbNode.isTextual()) || !parametersOk(spec)) {
                return UNUSABLE;
            }
            String tidbType = tidbNode.isTextual() ? tidbNode.asText() : null;
            String mysqlType = tidbType == null ? null : removeSuffix(tidbType, " unsigned");
            boolean unsigned = tidbType != null && tidbType.endsWith(" unsigned");
            String connectType = spec.get("type").asText();
            Integer connectBits = CONNECT_BITS.get(connectType);
            if (connectBits != null) {
                kinds[i] = Kind.INTEGER;
                Integer bits = mysqlType == null ? null : INTEGER_BITS.get(mysqlType);
                if (mysqlType != null && bits == null) {
                    return UNUSABLE; // YEAR, or a type this decoder does not repeat
                }
                if (bits == null) {
                    low[i] = -(1L << (connectBits - 1));
                    high[i] = connectBits == 64 ? Long.MAX_VALUE : (1L << (connectBits - 1)) - 1;
                } else if (unsigned) {
                    low[i] = 0;
                    high[i] = bits == 64 ? -1L : (1L << bits) - 1; // -1: 2^64 - 1, compared unsigned
                    wraps[i] = bits == 64;
                } else {
                    low[i] = -(1L << (bits - 1));
                    high[i] = bits == 64 ? Long.MAX_VALUE : (1L << (bits - 1)) - 1;
                }
            } else if (connectType.equals("boolean")) {
                kinds[i] = Kind.BOOLEAN;
            } else if (connectType.equals("string") || connectType.equals("bytes")) {
                boolean binary = mysqlType != null && (mysqlType.contains("binary") || mysqlType.contains("blob"));
                kinds[i] = binary ? Kind.BINARY : Kind.STRING;
            } else {
                return UNUSABLE;
            }
        }
        return new ConnectColumns(names, kinds, low, high, wraps, members);
    }

    /** The kind of a column with a logical name this decoder converts (false: any other name). */
    private static boolean logical(String name, int i, Kind[] kinds, long[] low, long[] high) {
        switch (name) {
            case "io.debezium.time.Year" -> {
                kinds[i] = Kind.INTEGER;
                low[i] = 0;
                high[i] = 2155;
            }
            case "io.debezium.time.Date" -> kinds[i] = Kind.DATE;
            case "io.debezium.time.ZonedTimestamp" -> kinds[i] = Kind.ZONED;
            case "io.debezium.data.Json" -> kinds[i] = Kind.STRING;
            case "io.debezium.data.Enum" -> kinds[i] = Kind.ENUM;
            case "io.debezium.data.EnumSet" -> kinds[i] = Kind.SET;
            case "io.debezium.time.MicroTime" -> kinds[i] = Kind.TIME;
            case "io.debezium.time.Timestamp" -> {
                kinds[i] = Kind.DATETIME;
                low[i] = 1000;
            }
            case "io.debezium.time.MicroTimestamp" -> {
                kinds[i] = Kind.DATETIME;
                low[i] = 1;
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /**
     * The members of {@code parameters.allowed} ({@code _split_allowed}): split at commas, an ENUM's
     * {@code \,} a comma inside a member; null for a SET with a member that holds a comma (unchecked).
     */
    static Set<String> allowed(String allowed, boolean escaped) {
        Set<String> found = new HashSet<>();
        StringBuilder current = new StringBuilder();
        for (int i = 0; i < allowed.length(); i++) {
            char c = allowed.charAt(i);
            if (escaped && c == '\\' && i + 1 < allowed.length() && allowed.charAt(i + 1) == ',') {
                current.append(',');
                i++;
            } else if (c == ',') {
                found.add(current.toString());
                current.setLength(0);
            } else {
                current.append(c);
            }
        }
        found.add(current.toString());
        if (!escaped && found.stream().anyMatch(m -> m.contains(","))) {
            return null;
        }
        return found;
    }

    /** {@code parameters}: absent, null, or an object of strings (``field_type``). */
    private static boolean parametersOk(JsonNode spec) {
        JsonNode parameters = spec.path("parameters");
        if (parameters.isMissingNode() || parameters.isNull()) {
            return true;
        }
        if (!parameters.isObject()) {
            return false;
        }
        for (Iterator<JsonNode> values = parameters.elements(); values.hasNext(); ) {
            if (!values.next().isTextual()) {
                return false;
            }
        }
        return true;
    }

    private static String removeSuffix(String text, String suffix) {
        return text.endsWith(suffix) ? text.substring(0, text.length() - suffix.length()) : text;
    }
}
