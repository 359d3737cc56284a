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
    /** 838:59:59.999999, the largest TIME {@code time_text} takes. */
    private static final long MAX_TIME_MICROS = 839L * 3_600_000_000L - 1;

    private Temporals() {}

    /**
     * The text and value (epoch days, epoch microseconds) of {@code number} of a DATE or DATETIME
     * column ({@code unit}: microseconds per unit of a DATETIME) into {@code image}'s column {@code c};
     * false where the Python converter refuses it.
     */
    static boolean read(ConnectColumns.Kind kind, long unit, long number, ImageCarrier.Image image, int c) {
        if (kind == ConnectColumns.Kind.TIME) {
            return time(number, image, c);
        }
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
        fraction(text, inDay % 1_000_000);
        image.texts[c] = text.toString();
        image.numbers[c] = micros;
        return true;
    }

    /** Microseconds of a TIME, {@code [-]HH:MM:SS[.f...]} with hours up to 838 ({@code time_from_micros}). */
    private static boolean time(long micros, ImageCarrier.Image image, int c) {
        if (micros < -MAX_TIME_MICROS || micros > MAX_TIME_MICROS) {
            return false;
        }
        long magnitude = Math.abs(micros);
        long seconds = magnitude / 1_000_000;
        StringBuilder text = new StringBuilder(18);
        if (micros < 0) {
            text.append('-');
        }
        long hours = seconds / 3600;
        if (hours >= 100) {
            text.append((char) ('0' + hours / 100));
        }
        two(text, hours % 100).append(':');
        two(text, seconds / 60 % 60).append(':');
        two(text, seconds % 60);
        fraction(text, magnitude % 1_000_000);
        image.texts[c] = text.toString();
        return true;
    }

    /** {@code .f...} without trailing zeros, nothing for 0 ({@code _fraction}). */
    private static void fraction(StringBuilder text, long fraction) {
        if (fraction != 0) {
            String digits = Long.toString(1_000_000 + fraction).substring(1);
            int end = digits.length();
            while (digits.charAt(end - 1) == '0') {
                end--;
            }
            text.append('.').append(digits, 0, end);
        }
    }

    /**
     * Whether {@code text} has the one form {@code debezium_values.zoned_timestamp} takes in one step
     * ({@code YYYY-MM-DDTHH:MM:SS[.f...]Z}, month 00..12, day 00..31, hour 00..23, minute and second
     * 00..59, one to six fraction digits), which it keeps as sent; then its epoch microseconds go to
     * {@code image}'s column {@code c}, or, where the calendar has no such day (a month or day 00, a
     * 30th of February), the mark of a text the carried {@code timestamptz} cannot hold
     * ({@code typed_values._micros}).
     */
    static boolean zoned(String text, ImageCarrier.Image image, int c) {
        int length = text.length();
        if (length < 20 || length == 21 || length > 27 || text.charAt(length - 1) != 'Z'
                || text.charAt(4) != '-' || text.charAt(7) != '-' || text.charAt(10) != 'T'
                || text.charAt(13) != ':' || text.charAt(16) != ':' || (length > 20 && text.charAt(19) != '.')) {
            return false;
        }
        for (int i : new int[] {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18}) {
            if (!digit(text.charAt(i))) {
                return false;
            }
        }
        for (int i = 20; i < length - 1; i++) {
            if (!digit(text.charAt(i))) {
                return false;
            }
        }
        int year = number(text, 0, 4);
        int month = number(text, 5, 7);
        int day = number(text, 8, 10);
        int hour = number(text, 11, 13);
        int minute = number(text, 14, 16);
        int second = number(text, 17, 19);
        if (month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59) {
            return false;
        }
        long fraction = 0;
        for (int i = 20; i < 26; i++) {
            fraction = fraction * 10 + (i < length - 1 ? text.charAt(i) - '0' : 0);
        }
        boolean leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        int[] monthDays = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        if (month < 1 || day < 1 || day > monthDays[month - 1]) {
            image.huge[c] = true;
            return true;
        }
        long days = daysFromCivil(year, month, day);
        image.numbers[c] = ((days * 24 + hour) * 60 + minute) * 60_000_000L + second * 1_000_000L + fraction;
        return true;
    }

    /** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's {@code days_from_civil}). */
    private static long daysFromCivil(int year, int month, int day) {
        long y = year - (month <= 2 ? 1 : 0);
        long era = Math.floorDiv(y, 400);
        long yoe = y - era * 400;
        long doy = (153L * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
        long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
    }

    private static boolean digit(char c) {
        return c >= '0' && c <= '9';
    }

    private static int number(String text, int start, int end) {
        int n = 0;
        for (int i = start; i < end; i++) {
            n = n * 10 + text.charAt(i) - '0';
        }
        return n;
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
