package ticdclake.decode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;

/**
 * The schema versions of the run's tables as the decode driver knows them, and the layout each one's
 * row images are carried in: what {@code MemorySchemaLookup.latest} and
 * {@code arrow_decode.image_records.image_layout} give the Python decoders.
 *
 * <p>The plan is JSON made by {@code jvm_decode.debezium.version_plan}:
 * {@code {"versions": [{"database", "table", "version", "layout": null | {"names", "types", "key",
 * "fingerprint"}}]}}, versions ascending within a table.
 */
final class TableVersions {
    /** The columns of one version as its images carry them ({@code ImageLayout}). */
    static final class Layout {
        final long version;
        final String[] names;
        /** Carried Iceberg types ({@code int}, {@code long}, {@code string}, ...). */
        final String[] types;
        /** Positions of the handle key columns among {@link #names}. */
        final int[] key;
        final long fingerprint;
        private final Map<String, Integer> positions = new HashMap<>();

        Layout(long version, String[] names, String[] types, int[] key, long fingerprint) {
            this.version = version;
            this.names = names;
            this.types = types;
            this.key = key;
            this.fingerprint = fingerprint;
            for (int i = 0; i < names.length; i++) {
                positions.put(names[i], i);
            }
        }

        int position(String name) {
            Integer found = positions.get(name);
            return found == null ? -1 : found;
        }
    }

    /** A version without a layout: its rows bind to it, but the decoder leaves them to Python. */
    static final Layout NO_LAYOUT = new Layout(-1, new String[0], new String[0], new int[0], 0);

    private final Map<String, long[]> versions = new HashMap<>();
    private final Map<String, Layout[]> layouts = new HashMap<>();

    TableVersions(String plan) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(plan);
        } catch (IOException e) {
            throw new UncheckedIOException("the decoder's version plan is not JSON", e);
        }
        Map<String, Integer> counts = new HashMap<>();
        for (JsonNode v : root.get("versions")) {
            counts.merge(tableKey(v.get("database").asText(), v.get("table").asText()), 1, Integer::sum);
        }
        Map<String, Integer> filled = new HashMap<>();
        for (JsonNode v : root.get("versions")) {
            String table = tableKey(v.get("database").asText(), v.get("table").asText());
            int count = counts.get(table);
            long[] tsos = versions.computeIfAbsent(table, k -> new long[count]);
            Layout[] kept = layouts.computeIfAbsent(table, k -> new Layout[count]);
            int at = filled.merge(table, 1, Integer::sum) - 1;
            long version = v.get("version").asLong();
            if (at > 0 && Long.compareUnsigned(tsos[at - 1], version) >= 0) {
                throw new IllegalArgumentException("the decoder's version plan is not in ascending order at " + table);
            }
            tsos[at] = version;
            kept[at] = layout(version, v.get("layout"));
        }
    }

    private static Layout layout(long version, JsonNode layout) {
        if (layout == null || layout.isNull()) {
            return NO_LAYOUT;
        }
        int width = layout.get("names").size();
        String[] names = new String[width];
        String[] types = new String[width];
        for (int i = 0; i < width; i++) {
            names[i] = layout.get("names").get(i).asText();
            types[i] = layout.get("types").get(i).asText();
        }
        int[] key = new int[layout.get("key").size()];
        for (int i = 0; i < key.length; i++) {
            key[i] = layout.get("key").get(i).asInt();
        }
        return new Layout(version, names, types, key, layout.get("fingerprint").asLong());
    }

    /** The newest version of the table not after {@code commitTs}, or null where none is known. */
    Layout latest(String database, String table, long commitTs) {
        String key = tableKey(database, table);
        long[] tsos = versions.get(key);
        if (tsos == null) {
            return null;
        }
        // bisect_right over unsigned TSOs: the first version after commitTs, then the one before it.
        int lowIndex = 0;
        int highIndex = tsos.length;
        while (lowIndex < highIndex) {
            int mid = (lowIndex + highIndex) >>> 1;
            if (Long.compareUnsigned(tsos[mid], commitTs) <= 0) {
                lowIndex = mid + 1;
            } else {
                highIndex = mid;
            }
        }
        return lowIndex == 0 ? null : layouts.get(key)[lowIndex - 1];
    }

    private static String tableKey(String database, String table) {
        return database + '\u0000' + table;
    }
}
