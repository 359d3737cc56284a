package ticdclake.decode;

/** Base64 texts of binary columns as the Python converter keeps them ({@code canonical.base64_text}). */
final class Base64Texts {
    private Base64Texts() {}

    /**
     * Whether {@code text} is standard padded base64 whose unused padding bits are zero: what
     * {@code base64_text} returns unchanged, and {@code typed_values.typed_value} decodes to bytes
     * ({@code ^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$}).
     */
    static boolean standard(String text) {
        int length = text.length();
        if (length % 4 != 0) {
            return false;
        }
        int padding = length > 0 && text.charAt(length - 1) == '=' ? (text.charAt(length - 2) == '=' ? 2 : 1) : 0;
        for (int i = 0; i < length - padding; i++) {
            if (!alphabet(text.charAt(i))) {
                return false;
            }
        }
        if (padding == 2) {
            return "AQgw".indexOf(text.charAt(length - 3)) >= 0;
        }
        if (padding == 1) {
            return "AEIMQUYcgkosw048".indexOf(text.charAt(length - 2)) >= 0;
        }
        return true;
    }

    private static boolean alphabet(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    }
}
