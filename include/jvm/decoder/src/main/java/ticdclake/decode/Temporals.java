package ticdclake.decode;

import java.time.LocalDate;

/**
 * DATE and DATETIME values as the Python converters make them ({@code debezium_values.date_from_days},
 * {@code datetime_from_millis}, {@code datetime_from_micros}): {@code YYYY-MM-DD}, and
 * {@code YYYY-MM-DD HH:MM:SS} with {@code .f...} where there is a fraction (its trailing zeros
 * dropped), in the years 1..9999 that Python's {@code date} and {@code datetime} hold; any other
 * value is left to Python, which says why it refuses it.
 */
final class Temporals {
    private static final long MIN_DAYS = LocalDate.of(1, 1, 1).toEpochDay();
    private static final long MAX_DAYS = LocalDate.of(9999, 12, 31).toEpochDay();
    private static final long MICROS_PER_DAY = 86_400_000_000L;
    private static final long MIN_MICROS = MIN_DAYS * MICROS_PER_DAY;
    private static final long MAX_MICROS = (MAX_DAYS + 1) * MICROS_PER_DAY - 1;

    private Temporals() {}

    /**
     * The text and value (epoch days, epoch microseconds) of {@code number} of a DATE or DATETIME
     * column ({@code unit}: microseconds per unit of a DATETIME) into {@code image}'s column {@code c};
     * false where the Python converter refuses it.
     */
    static boolean read(ConnectColumns.Kind kind, long unit, long number, ImageCarrier.Image image, int c) {
        if (kind == ConnectColumns.Kind.DATE) {
            if (number < MIN_DAYS || number > MAX_DAYS) {
                return false;
            }
            StringBuilder text = new StringBuilder(10);
            date(text, LocalDate.ofEpochDay(number));
            image.texts[c] = text.toString();
            image.numbers[c] = number;
            return true;
        }
        long micros;
        try {
            micros = Math.multiplyExact(number, unit);
        } catch (ArithmeticException e) {
            return false;
        }
        if (micros < MIN_MICROS || micros > MAX_MICROS) {
            return false;
        }
        long days = Math.floorDiv(micros, MICROS_PER_DAY);
        long inDay = Math.floorMod(micros, MICROS_PER_DAY);
        StringBuilder text = new StringBuilder(26);
        date(text, LocalDate.ofEpochDay(days));
        long seconds = inDay / 1_000_000;
        text.append(' ');
        two(text, seconds / 3600).append(':');
        two(text, seconds / 60 % 60).append(':');
        two(text, seconds % 60);
        long fraction = inDay % 1_000_000;
        if (fraction != 0) {
            String digits = Long.toString(1_000_000 + fraction).substring(1);
            int end = digits.length();
            while (digits.charAt(end - 1) == '0') {
                end--;
            }
            text.append('.').append(digits, 0, end);
        }
        image.texts[c] = text.toString();
        image.numbers[c] = micros;
        return true;
    }

    private static void date(StringBuilder text, LocalDate day) {
        int year = day.getYear();
        text.append((char) ('0' + year / 1000)).append((char) ('0' + year / 100 % 10));
        two(text, year % 100).append('-');
        two(text, day.getMonthValue()).append('-');
        two(text, day.getDayOfMonth());
    }

    private static StringBuilder two(StringBuilder text, long value) {
        return text.append((char) ('0' + value / 10)).append((char) ('0' + value % 10));
    }
}
