package dev.fairq.scheduler;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinition;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.field.CronFieldName;
import com.cronutils.model.field.definition.FieldDefinition;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A cron expression read in an IANA time zone: the instants it fires at.
 *
 * <p>cron-utils (Unix definition: five fields, Vixie's rule that a restricted day-of-month and a restricted
 * day-of-week fire on either) parses the expression and walks its wall-clock times. "Restricted" is Vixie's
 * reading too: a day field that starts with {@code *} ({@code *}{@code /2}) is not, so {@code 0 0 }{@code *}{@code /2 * MON}
 * fires on the Mondays that are odd days, as in Vixie cron and cronie, where cron-utils fired on every odd day and
 * every Monday.
 *
 * <p>cron-utils does not define what happens at a daylight-saving change (it drops a daily 02:30 on the
 * spring-forward day, and fires it once or twice on the fall-back day depending on where the walk starts), so this
 * class maps wall times to instants itself, by one rule for each kind of schedule:
 * <ul>
 *   <li>A schedule whose hour field covers every hour ({@code *}, {@code *}{@code /1}, {@code 0-23}) keeps its
 *       rhythm in real time: it fires at every instant whose local time matches. In a spring-forward gap
 *       the skipped local times do not exist and do not fire; in a fall-back overlap the repeated hour fires
 *       twice (a {@code *}{@code /15} schedule fires every 15 minutes straight through).</li>
 *   <li>A schedule that names its hours fires once for every matching local time, never twice and never
 *       not at all: a local time that occurs twice fires at its first occurrence (still summer time); a
 *       local time that does not exist fires shifted forward by the length of the gap (java.time's
 *       resolution: 02:30 becomes 03:30 summer time). Two local times that land on one instant fire once.</li>
 * </ul>
 * So a daily 02:30 Europe/Berlin schedule fires at 03:30 CEST (01:30Z) on the spring-forward day and at
 * 02:30 CEST (00:30Z), not again at 02:30 CET, on the fall-back day ({@code CronScheduleTest}).
 *
 * <p>The macros {@code @hourly}, {@code @daily} (and {@code @midnight}), {@code @weekly}, {@code @monthly} and
 * {@code @yearly} (and {@code @annually}) stand for their five-field forms; cron-utils' Unix definition has
 * no nicknames.
 *
 * <p>Parsing costs about 0.1-0.4 ms and a step of cron-utils 20-60 us (measured here), so parsed schedules
 * are cached ({@link #of}) and a fire costs one step when no offset change is near.
 */
public final class CronSchedule {
    /** The macros, as the five-field expressions they stand for. */
    public static final Map<String, String> MACROS = Map.of(
            "@hourly", "0 * * * *", "@daily", "0 0 * * *", "@midnight", "0 0 * * *", "@weekly", "0 0 * * 0",
            "@monthly", "0 0 1 * *", "@yearly", "0 0 1 1 *", "@annually", "0 0 1 1 *");
    private static final CronParser PARSER = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
    /**
     * The Unix definition, but a day must match both day fields: Vixie's rule when either starts with {@code *}
     * (its DOM_STAR / DOW_STAR flags). For a plain {@code *} this is what cron-utils does anyway; for {@code *}{@code /2}
     * cron-utils counts the field as restricted and fired on either.
     */
    private static final CronParser BOTH_DAYS = new CronParser(bothDays(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX)));
    /** The longest expression stored (the schedules table's CHECK). */
    public static final int MAX_LENGTH = 200;
    /** Offset changes further than this from an instant do not affect what fires next to it. */
    private static final Duration NEAR = Duration.ofDays(2);
    /** A walk that found nothing after this many steps gives up (no valid expression needs more than a few). */
    private static final int MAX_STEPS = 20_000;
    /** Parsed schedules by expression and zone: at most this many kept (about 2 KB each). */
    private static final int CACHE_SIZE = 10_000;
    private static final Map<String, CronSchedule> CACHE = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CronSchedule> eldest) {
            return size() > CACHE_SIZE;
        }
    };

    private final String expression;
    private final ZoneId zone;
    private final ZoneRules rules;
    private final ExecutionTime wall;
    private final boolean everyHour;

    /** An invalid expression or zone; {@link #field()} names which. */
    public static final class InvalidCronException extends IllegalArgumentException {
        private final String field;

        InvalidCronException(String field, String message) {
            super(message);
            this.field = field;
        }

        public String field() {
            return field;
        }
    }

    private CronSchedule(String expression, ZoneId zone, Cron cron) {
        this.expression = expression;
        this.zone = zone;
        this.rules = zone.getRules();
        this.wall = ExecutionTime.forCron(cron);
        this.everyHour = coversEveryHour(cron);
    }

    /**
     * The schedule of {@code cron} in {@code timeZone}, parsed once and cached. Throws
     * {@link InvalidCronException} naming {@code cron} or {@code time_zone} and what is wrong.
     */
    public static CronSchedule of(String cron, String timeZone) {
        String key = cron + "\u0000" + timeZone;
        synchronized (CACHE) {
            CronSchedule cached = CACHE.get(key);
            if (cached != null) return cached;
        }
        ZoneId zone = zone(timeZone);
        CronSchedule parsed = new CronSchedule(cron, zone, parse(cron));
        if (parsed.wallAfter(LocalDateTime.of(2000, 1, 1, 0, 0)).isEmpty()) {
            throw new InvalidCronException("cron", "never fires (no date matches '" + cron + "')");
        }
        synchronized (CACHE) {
            CACHE.put(key, parsed);
        }
        return parsed;
    }

    private static Cron parse(String cron) {
        if (cron == null || cron.isBlank()) throw new InvalidCronException("cron", "is required");
        String text = cron.strip();
        // what the schedules table stores (length 1-200, text without NUL): cron-utils trims control characters
        // and reads a list as long as given, so both had passed here and failed the insert (a 500)
        if (text.length() > MAX_LENGTH) {
            throw new InvalidCronException("cron", "must be at most " + MAX_LENGTH + " characters, not " + text.length());
        }
        if (text.chars().anyMatch(ch -> Character.isISOControl(ch) && ch != '\t')) {
            throw new InvalidCronException("cron", "must not contain control characters (fields are separated by spaces or tabs)");
        }
        if (text.startsWith("@")) {
            String five = MACROS.get(text.toLowerCase(Locale.ROOT));
            if (five == null) {
                throw new InvalidCronException("cron", "unknown macro '" + text + "' (expected one of "
                        + String.join(", ", MACROS.keySet().stream().sorted().toList()) + ")");
            }
            text = five;
        }
        try {
            String five = sundayFirst(text);
            return (starredDayField(five) ? BOTH_DAYS : PARSER).parse(five).validate();
        } catch (IllegalArgumentException e) {
            throw new InvalidCronException("cron", "must be five fields (minute hour day-of-month month "
                    + "day-of-week, e.g. '30 2 * * *') or a macro such as @daily: " + e.getMessage());
        }
    }

    /**
     * Vixie cron reads SUN as 0, so SUN-WED is Sunday to Wednesday; cron-utils reads it as 7 and refused the range
     * ("Invalid range! [7,3]"). A range that starts at SUN is given to it as 0 (FRI-SUN, 5-7, it reads already).
     */
    private static String sundayFirst(String five) {
        String[] fields = five.split("\\s+");
        if (fields.length != 5) return five; // cron-utils says what is wrong
        fields[4] = fields[4].replaceAll("(?i)(?<=^|,)SUN-", "0-");
        return String.join(" ", fields);
    }

    /** Whether the day-of-month or the day-of-week field starts with {@code *}: Vixie's DOM_STAR or DOW_STAR. */
    private static boolean starredDayField(String five) {
        String[] fields = five.strip().split("\\s+");
        return fields.length == 5 && (fields[2].startsWith("*") || fields[4].startsWith("*"));
    }

    private static CronDefinition bothDays(CronDefinition unix) {
        List<FieldDefinition> fields = new ArrayList<>(unix.getFieldDefinitions());
        fields.sort(Comparator.comparing(FieldDefinition::getFieldName)); // minute, hour, day of month, month, day of week
        return new CronDefinition(fields, unix.getCronConstraints(), unix.getCronNicknames(), true);
    }

    private static ZoneId zone(String timeZone) {
        if (timeZone == null || timeZone.isBlank()) {
            throw new InvalidCronException("time_zone", "is required: an IANA time zone such as Europe/Berlin or UTC");
        }
        Set<String> ids = ZoneId.getAvailableZoneIds();
        if (ids.contains(timeZone)) return ZoneId.of(timeZone);
        for (String id : ids) {
            if (id.equalsIgnoreCase(timeZone)) {
                throw new InvalidCronException("time_zone", "unknown time zone '" + timeZone + "' (did you mean " + id + "?)");
            }
        }
        throw new InvalidCronException("time_zone", "unknown time zone '" + timeZone
                + "': must be an IANA time zone such as Europe/Berlin or UTC (not an offset such as +02:00)");
    }

    /** Whether the hour field matches all 24 hours: a probe of cron-utils' own reading of it. */
    private static boolean coversEveryHour(Cron cron) {
        String hours = cron.retrieve(CronFieldName.HOUR).getExpression().asString();
        ExecutionTime probe = ExecutionTime.forCron(PARSER.parse("0 " + hours + " * * *"));
        ZonedDateTime t = LocalDateTime.of(2001, 1, 1, 0, 0).atZone(ZoneOffset.UTC).minusMinutes(1);
        for (int h = 0; h < 24; h++) {
            Optional<ZonedDateTime> next = probe.nextExecution(t);
            if (next.isEmpty() || next.get().getHour() != h || next.get().getDayOfMonth() != 1) return false;
            t = next.get();
        }
        return true;
    }

    public String expression() {
        return expression;
    }

    public ZoneId zone() {
        return zone;
    }

    /** Whether the hour field covers every hour (the real-time rule above), or names hours (the wall-time rule). */
    public boolean everyHour() {
        return everyHour;
    }

    /** The first fire strictly after {@code after}; empty when the expression fires no more (none does today). */
    public Optional<Instant> next(Instant after) {
        return everyHour ? nextByInstant(after) : nextByWall(after);
    }

    /** The last fire strictly before {@code before}. */
    public Optional<Instant> previous(Instant before) {
        return everyHour ? previousByInstant(before) : previousByWall(before);
    }

    /** The first fire at or after {@code t}. */
    public Optional<Instant> firstAtOrAfter(Instant t) {
        return next(t.minusNanos(1));
    }

    /** Up to {@code n} fires strictly after {@code after} and before {@code endAt} (null: no end). */
    public List<Instant> fires(Instant after, Instant endAt, int n) {
        List<Instant> out = new ArrayList<>(n);
        Instant t = after;
        while (out.size() < n) {
            Optional<Instant> next = next(t);
            if (next.isEmpty() || (endAt != null && !next.get().isBefore(endAt))) break;
            out.add(next.get());
            t = next.get();
        }
        return out;
    }

    /**
     * The shortest time between two consecutive fires from {@code from} on, over the next {@code maxFires}
     * fires or the {@code maxSpan} from the first of them, whichever ends first (empty when it fires less than twice in that window), on a
     * clock that never changes (UTC): how often the expression asks to fire. In the schedule's own zone a change of
     * the clocks shortens a gap once a year (Europe/Berlin's {@code @daily}: 23 h across the spring change), so a
     * limit of 86,400 s refused {@code @daily} in every zone with summer time.
     */
    public Optional<Duration> shortestInterval(Instant from, int maxFires, Duration maxSpan) {
        if (!rules.isFixedOffset()) return of(expression, "UTC").shortestInterval(from, maxFires, maxSpan);
        Optional<Instant> prev = next(from);
        // the span counts from the first fire, not from now: counted from now, '* * 29 2 *' (every minute of 29 February)
        // written more than the span before the next 29 February had no fire in it and passed any limit
        Instant end = prev.map(first -> first.plus(maxSpan)).orElse(from);
        Duration shortest = null;
        for (int i = 1; i < maxFires && prev.isPresent() && prev.get().isBefore(end); i++) {
            Optional<Instant> next = next(prev.get());
            if (next.isEmpty()) break;
            Duration gap = Duration.between(prev.get(), next.get());
            if (shortest == null || gap.compareTo(shortest) < 0) shortest = gap;
            prev = next;
        }
        return Optional.ofNullable(shortest);
    }

    // ----------------------------------------------------------------------------- every hour: real time

    /** The first instant after {@code after} whose local time matches, segment by segment of constant offset. */
    private Optional<Instant> nextByInstant(Instant after) {
        Instant from = after;
        boolean inclusive = false;
        for (int i = 0; i < MAX_STEPS; i++) {
            ZoneOffset offset = rules.getOffset(from);
            ZoneOffsetTransition end = rules.nextTransition(from);
            LocalDateTime start = LocalDateTime.ofInstant(from, offset);
            Optional<LocalDateTime> w = wallAfter(inclusive ? start.minusNanos(1) : start);
            if (w.isEmpty()) return Optional.empty();
            Instant x = w.get().toInstant(offset);
            if (end == null || x.isBefore(end.getInstant())) return Optional.of(x);
            from = end.getInstant();
            inclusive = true;
        }
        return Optional.empty();
    }

    private Optional<Instant> previousByInstant(Instant before) {
        Instant until = before;
        for (int i = 0; i < MAX_STEPS; i++) {
            ZoneOffset offset = rules.getOffset(until.minusNanos(1));
            ZoneOffsetTransition start = rules.previousTransition(until);
            Optional<LocalDateTime> w = wallBefore(LocalDateTime.ofInstant(until, offset));
            if (w.isEmpty()) return Optional.empty();
            Instant x = w.get().toInstant(offset);
            if (start == null || !x.isBefore(start.getInstant())) return Optional.of(x);
            until = start.getInstant();
        }
        return Optional.empty();
    }

    // --------------------------------------------------------------------------- named hours: wall time

    /** Where a matching local time fires: its only instant, its first occurrence, or shifted past a gap. */
    private Instant instantOf(LocalDateTime w) {
        return ZonedDateTime.of(w, zone).toInstant();
    }

    /**
     * The smallest fire instant after {@code after}. Wall order is instant order except where a gap shifts
     * local times forward, by at most the gap's length, so the walk starts that much earlier and stops once
     * no later local time can land before the best found.
     */
    private Optional<Instant> nextByWall(Instant after) {
        Duration shift = shiftNear(after);
        LocalDateTime w = LocalDateTime.ofInstant(after, zone).minus(shift);
        Instant best = null;
        for (int i = 0; i < MAX_STEPS; i++) {
            Optional<LocalDateTime> next = wallAfter(w);
            if (next.isEmpty()) break;
            w = next.get();
            Instant x = instantOf(w);
            if (x.isAfter(after) && (best == null || x.isBefore(best))) best = x;
            if (best != null && !x.isBefore(best.plus(shiftNear(best)))) break;
        }
        return Optional.ofNullable(best);
    }

    private Optional<Instant> previousByWall(Instant before) {
        Duration shift = shiftNear(before);
        LocalDateTime w = LocalDateTime.ofInstant(before, zone).plus(shift);
        Instant best = null;
        for (int i = 0; i < MAX_STEPS; i++) {
            Optional<LocalDateTime> prev = wallBefore(w);
            if (prev.isEmpty()) break;
            w = prev.get();
            Instant x = instantOf(w);
            if (x.isBefore(before) && (best == null || x.isAfter(best))) best = x;
            if (best != null && !x.isAfter(best.minus(shiftNear(best)))) break;
        }
        return Optional.ofNullable(best);
    }

    /** The longest offset change within two days of {@code t} (zero almost always, and for fixed zones). */
    private Duration shiftNear(Instant t) {
        if (rules.isFixedOffset()) return Duration.ZERO;
        Duration longest = Duration.ZERO;
        Instant to = t.plus(NEAR);
        for (ZoneOffsetTransition tr = rules.nextTransition(t.minus(NEAR)); tr != null && !tr.getInstant().isAfter(to);
             tr = rules.nextTransition(tr.getInstant())) {
            Duration d = tr.getDuration().abs();
            if (d.compareTo(longest) > 0) longest = d;
        }
        return longest;
    }

    // ------------------------------------------------------------------------ cron-utils' wall-time walk

    /** The next matching local time strictly after {@code t} (cron-utils, walking in UTC: no offset changes). */
    private Optional<LocalDateTime> wallAfter(LocalDateTime t) {
        return wall.nextExecution(t.atZone(ZoneOffset.UTC)).map(ZonedDateTime::toLocalDateTime);
    }

    private Optional<LocalDateTime> wallBefore(LocalDateTime t) {
        return wall.lastExecution(t.atZone(ZoneOffset.UTC)).map(ZonedDateTime::toLocalDateTime);
    }

    @Override
    public String toString() {
        return "'" + expression + "' in " + zone;
    }
}
