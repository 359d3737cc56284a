package ticdclake.decode;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The typed record carrier of one row image, as the decode workers make it
 * ({@code arrow_decode.image_records}, {@code record_columns}, {@code avro_records}):
 *
 * <ul>
 *   <li>the Avro record of the image's values under the version's writer schema (field {@code c<i>} is
 *       layout column {@code i}, a {@code ["null", type]} union): the union branch as a zig-zag varint,
 *       then {@code int}/{@code long} as a zig-zag varint and {@code string} as its UTF-8 length and
 *       bytes, {@code date} as its epoch days and {@code timestamp} as its epoch microseconds (zig-zag
 *       varints); the null branch for a NULL value, a column the image lacks, or a text the carried type
 *       cannot hold;
 *   <li>the untyped entries, in column order: a column the image lacks to NULL, a text the carried
 *       type cannot hold ({@code typed_values.typed_value}: an integer beyond {@code int} or
 *       {@code long}) to that text; NULL where there is neither. They are returned as the text of a
 *       JSON object ({@code {"column":null,"other":"text"}}), which the workers read back into the
 *       map ({@code jvm_decode.events});
 *   <li>the key texts: the canonical text of each handle key column (NULL where the image lacks it).
 * </ul>
 */
final class ImageCarrier {
    /** One image's values by the schema's column order: the text, and for an integer its value. */
    static final class Image {
        final String[] texts;
        final long[] numbers;
        /**
         * Per column: an integer beyond int64 (a BIGINT UNSIGNED above 2^63 - 1), or a TIMESTAMP text
         * of no calendar day: a value its carried type cannot hold.
         */
        final boolean[] huge;

        Image(int width) {
            texts = new String[width];
            numbers = new long[width];
            huge = new boolean[width];
        }

        void clear() {
            Arrays.fill(texts, null);
            Arrays.fill(huge, false);
        }
    }

    /** The carrier of one image: record bytes, untyped entries as JSON (null: none), key texts (null: no key). */
    record Carrier(byte[] record, String untyped, List<String> key) {}

    private byte[] buffer = new byte[256];
    private int size;

    /**
     * The carrier of {@code image} (values in the order of the schema's columns) in {@code layout};
     * {@code columnOf[i]} is the schema column of layout column {@code i}, or -1.
     */
    Carrier carrier(Image image, TableVersions.Layout layout, int[] columnOf) {
        size = 0;
        StringBuilder untyped = null;
        for (int i = 0; i < columnOf.length; i++) {
            int c = columnOf[i];
            if (c < 0) {
                untyped = entry(untyped, layout.names[i], null);
                put(0);
                continue;
            }
            String text = image.texts[c];
            if (text == null) {
                put(0);
                continue;
            }
            switch (layout.types[i]) {
                case "string" -> {
                    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
                    put(2);
                    varint(bytes.length);
                    put(bytes);
                }
                case "long" -> {
                    if (image.huge[c]) {
                        untyped = entry(untyped, layout.names[i], text);
                        put(0);
                    } else {
                        put(2);
                        varint(image.numbers[c]);
                    }
                }
                case "int" -> {
                    long n = image.numbers[c];
                    if (image.huge[c] || n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
                        untyped = entry(untyped, layout.names[i], text);
                        put(0);
                    } else {
                        put(2);
                        varint(n);
                    }
                }
                case "binary" -> {
                    byte[] bytes = java.util.Base64.getDecoder().decode(text);
                    put(2);
                    varint(bytes.length);
                    put(bytes);
                }
                case "date", "timestamp" -> {
                    put(2);
                    varint(image.numbers[c]); // epoch days, epoch microseconds
                }
                case "timestamptz" -> {
                    if (image.huge[c]) { // a text the calendar has no day for (a 31st of February)
                        untyped = entry(untyped, layout.names[i], text);
                        put(0);
                    } else {
                        put(2);
                        varint(image.numbers[c]);
                    }
                }
                default -> throw new IllegalStateException("no carrier for type " + layout.types[i]);
            }
        }
        List<String> key = null;
        if (layout.key.length > 0) {
            key = new ArrayList<>(layout.key.length);
            for (int k : layout.key) {
                key.add(columnOf[k] < 0 ? null : image.texts[columnOf[k]]);
            }
        }
        return new Carrier(Arrays.copyOf(buffer, size), untyped == null ? null : untyped.append('}').toString(), key);
    }

    /** Whether a schema column of {@code kind} is carried as {@code type} by this class. */
    static boolean carries(ConnectColumns.Kind kind, String type) {
        return switch (kind) {
            case INTEGER -> type.equals("int") || type.equals("long");
            case STRING, ENUM, SET, TIME -> type.equals("string");
            case BINARY -> type.equals("binary");
            case DATE -> type.equals("date");
            case DATETIME -> type.equals("timestamp");
            case BOOLEAN -> type.equals("long");
            case ZONED -> type.equals("timestamptz");
        };
    }

    /** {@code untyped} (a JSON object's text so far, or null) with one more member. */
    private static StringBuilder entry(StringBuilder untyped, String name, String text) {
        StringBuilder entries = untyped == null ? new StringBuilder("{") : untyped.append(',');
        quote(entries, name).append(':');
        return text == null ? entries.append("null") : quote(entries, text);
    }

    /** {@code text} as a JSON string: quote, backslash and control characters escaped. */
    static StringBuilder quote(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"');
    }

    private void varint(long value) {
        long n = (value << 1) ^ (value >> 63);
        while ((n & ~0x7FL) != 0) {
            put((int) ((n & 0x7F) | 0x80));
            n >>>= 7;
        }
        put((int) n);
    }

    private void put(int b) {
        if (size == buffer.length) {
            buffer = Arrays.copyOf(buffer, size * 2);
        }
        buffer[size++] = (byte) b;
    }

    private void put(byte[] bytes) {
        if (size + bytes.length > buffer.length) {
            buffer = Arrays.copyOf(buffer, Math.max(size * 2, size + bytes.length));
        }
        System.arraycopy(bytes, 0, buffer, size, bytes.length);
        size += bytes.length;
    }
}
