package ticdclake.decode;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * What a Debezium row change's payload holds, read with Jackson's streaming parser: {@code op},
 * {@code source.db}, {@code source.table}, {@code source.commit_ts} and both images, each value made
 * canonical by its column's converter as it is read. Other members are skipped (still parsed, so the
 * whole payload is valid JSON). {@link #read} answers false for anything the decoder does not vouch
 * for (a member named twice, a value of another JSON type, an image that does not name exactly the
 * schema's columns in order, a value its converter refuses).
 */
final class DebeziumPayload {
    String op;
    String database;
    String table;
    long commitTs = -1;
    boolean hasBefore;
    boolean hasAfter;
    private boolean sawOp;
    private boolean sawSource;
    private boolean sawBefore;
    private boolean sawAfter;

    /** Reads the payload object whose START_OBJECT {@code p} is at, up to its END_OBJECT. */
    boolean read(JsonParser p, ConnectColumns columns, ImageCarrier.Image before, ImageCarrier.Image after)
            throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken token = p.nextToken();
            switch (name) {
                case "op" -> {
                    if (sawOp || token != JsonToken.VALUE_STRING) {
                        return false;
                    }
                    sawOp = true;
                    op = p.getText();
                }
                case "source" -> {
                    if (sawSource || token != JsonToken.START_OBJECT || !source(p)) {
                        return false;
                    }
                    sawSource = true;
                }
                case "before" -> {
                    if (sawBefore) {
                        return false;
                    }
                    sawBefore = true;
                    hasBefore = token == JsonToken.START_OBJECT;
                    if (hasBefore ? !image(p, columns, before) : token != JsonToken.VALUE_NULL) {
                        return false;
                    }
                }
                case "after" -> {
                    if (sawAfter) {
                        return false;
                    }
                    sawAfter = true;
                    hasAfter = token == JsonToken.START_OBJECT;
                    if (hasAfter ? !image(p, columns, after) : token != JsonToken.VALUE_NULL) {
                        return false;
                    }
                }
                default -> p.skipChildren();
            }
        }
        return p.currentToken() == JsonToken.END_OBJECT;
    }

    /** A row change with the images its operation has ({@code debezium._usual_row}). */
    boolean usual() {
        if (op == null || database == null || table == null || commitTs < 0) {
            return false;
        }
        return switch (op) {
            case "c", "r" -> hasAfter && !hasBefore;
            case "u" -> hasAfter;
            case "d" -> hasBefore && !hasAfter;
            default -> false;
        };
    }

    private boolean source(JsonParser p) throws IOException {
        boolean sawDb = false;
        boolean sawTable = false;
        boolean sawCommit = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken token = p.nextToken();
            switch (name) {
                case "db" -> {
                    if (sawDb || token != JsonToken.VALUE_STRING) {
                        return false;
                    }
                    sawDb = true;
                    database = p.getText();
                }
                case "table" -> {
                    if (sawTable || token != JsonToken.VALUE_STRING) {
                        return false;
                    }
                    sawTable = true;
                    table = p.getText();
                }
                case "commit_ts" -> {
                    if (sawCommit || !isLong(p, token)) {
                        return false;
                    }
                    sawCommit = true;
                    commitTs = p.getLongValue();
                }
                default -> p.skipChildren();
            }
        }
        return p.currentToken() == JsonToken.END_OBJECT;
    }

    private static boolean image(JsonParser p, ConnectColumns columns, ImageCarrier.Image image) throws IOException {
        image.clear();
        for (int c = 0; c < columns.size(); c++) {
            if (p.nextToken() != JsonToken.FIELD_NAME || !p.currentName().equals(columns.names[c])) {
                return false;
            }
            JsonToken token = p.nextToken();
            if (token == JsonToken.VALUE_NULL) {
                continue;
            }
            ConnectColumns.Kind kind = columns.kinds[c];
            if (kind == ConnectColumns.Kind.STRING || kind == ConnectColumns.Kind.ZONED
                    || kind == ConnectColumns.Kind.ENUM || kind == ConnectColumns.Kind.SET
                    || kind == ConnectColumns.Kind.BINARY) {
                if (token != JsonToken.VALUE_STRING) {
                    return false;
                }
                String text = p.getText();
                image.texts[c] = text;
                if (kind == ConnectColumns.Kind.ZONED && !Temporals.zoned(text, image, c)) {
                    return false;
                }
                if (kind == ConnectColumns.Kind.BINARY && !Base64Texts.standard(text)) {
                    return false; // Python writes another text for it, or refuses it
                }
                if (!text.isEmpty() && columns.members[c] != null && !members(text, kind, columns.members[c])) {
                    return false; // not one of the members: Python says which
                }
                continue;
            }
            if (kind == ConnectColumns.Kind.BOOLEAN) {
                if (token != JsonToken.VALUE_TRUE && token != JsonToken.VALUE_FALSE) {
                    return false;
                }
                image.numbers[c] = token == JsonToken.VALUE_TRUE ? 1 : 0;
                image.texts[c] = token == JsonToken.VALUE_TRUE ? "1" : "0";
                continue;
            }
            if (!isLong(p, token)) {
                return false;
            }
            long number = p.getLongValue();
            if (kind != ConnectColumns.Kind.INTEGER) {
                if (!Temporals.read(kind, columns.low[c], number, image, c)) {
                    return false;
                }
                continue;
            }
            if (columns.wraps[c]) {
                image.huge[c] = number < 0; // int64 two's complement of a uint64 (max -> -1)
                image.texts[c] = Long.toUnsignedString(number);
            } else if (number < columns.low[c] || number > columns.high[c]) {
                return false;
            } else {
                image.texts[c] = Long.toString(number);
            }
            image.numbers[c] = number;
        }
        return p.nextToken() == JsonToken.END_OBJECT;
    }

    /** An ENUM's text is one member; a SET's, members joined by commas ({@code _enum}, {@code _set}). */
    private static boolean members(String text, ConnectColumns.Kind kind, java.util.Set<String> members) {
        if (kind == ConnectColumns.Kind.ENUM) {
            return members.contains(text);
        }
        for (String part : text.split(",", -1)) {
            if (!members.contains(part)) {
                return false;
            }
        }
        return true;
    }

    /** A JSON integer that fits in a Java long. */
    private static boolean isLong(JsonParser p, JsonToken token) throws IOException {
        if (token != JsonToken.VALUE_NUMBER_INT) {
            return false;
        }
        JsonParser.NumberType type = p.getNumberType();
        return type == JsonParser.NumberType.INT || type == JsonParser.NumberType.LONG;
    }
}
