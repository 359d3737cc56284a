package ticdclake.decode;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The byte-level rules under which Jackson and the Python decoder read a JSON text alike. */
final class JsonChecks {
    /** Deeper nesting is left to the Python decoder (whose reader has a recursion limit of its own). */
    static final int MAX_DEPTH = 64;
    /** Jackson's strict defaults (no comments, NaN, leading zeros, raw control characters in strings). */
    static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
            .build();

    private JsonChecks() {}

    /**
     * Whether {@code text[start, end)} is strict UTF-8 (as Python's codec: no overlong form, no
     * encoded surrogate) and holds no {@code \\u} escape (a lone surrogate escape is an error to the
     * Python decoder; a backslash before a {@code u} is refused even where it is escaped itself).
     */
    static boolean textOk(byte[] text, int start, int end) {
        boolean ascii = true;
        for (int i = start; i < end; i++) {
            byte b = text[i];
            if (b < 0) {
                ascii = false;
            } else if (b == '\\' && i + 1 < end && text[i + 1] == 'u') {
                return false;
            }
        }
        if (ascii) {
            return true;
        }
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(text, start, end - start));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    /**
     * Whether the Python decoder reads a message key without error: valid JSON under {@link #textOk},
     * an object with an object {@code payload} and a {@code schema} that is absent, null or an object
     * (each named once).
     */
    static boolean keyOk(byte[] key) throws IOException {
        if (!textOk(key, 0, key.length)) {
            return false;
        }
        boolean payload = false;
        boolean schema = false;
        try (JsonParser p = JSON.createParser(key)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return false;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken token = p.nextToken();
                if (name.equals("payload")) {
                    if (payload || token != JsonToken.START_OBJECT) {
                        return false;
                    }
                    payload = true;
                } else if (name.equals("schema")) {
                    if (schema || (token != JsonToken.START_OBJECT && token != JsonToken.VALUE_NULL)) {
                        return false;
                    }
                    schema = true;
                }
                p.skipChildren();
            }
            return payload && p.currentToken() == JsonToken.END_OBJECT && p.nextToken() == null;
        }
    }
}
