package dev.fairq.scheduler;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The job_keys of fired jobs, which make each fire exactly one job ({@code jobs_job_key_uidx} is unique per
 * tenant) and tell explain which schedule fired a job: {@code schedule:<name>:<fire instant>} for a fire,
 * {@code schedule:<name>:trigger-<instant>} for a manual trigger, instants in UTC to the second
 * ({@code 2026-12-01T02:00:00Z}). The API refuses job_keys starting with {@code schedule:} from tenants, so
 * only schedules make them.
 */
public final class ScheduleKeys {
    public static final String PREFIX = "schedule:";
    private static final DateTimeFormatter SECOND = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss'Z'").withZone(ZoneOffset.UTC);
    private static final Pattern KEY = Pattern.compile(
            "schedule:(.+):(trigger-)?(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z)");

    private ScheduleKeys() {}

    public static String fire(String name, Instant at) {
        return PREFIX + name + ":" + SECOND.format(at.truncatedTo(ChronoUnit.SECONDS));
    }

    public static String trigger(String name, Instant at) {
        return PREFIX + name + ":trigger-" + SECOND.format(at.truncatedTo(ChronoUnit.SECONDS));
    }

    /** The ordering key that queues an 'overlap: queue' schedule's fires behind each other (when its template has none). */
    public static String orderingKey(String name) {
        return PREFIX + name;
    }

    /** Which schedule made a job, and for which instant. */
    public record Origin(String schedule, Instant at, boolean triggered) {}

    public static Optional<Origin> parse(String jobKey) {
        if (jobKey == null || !jobKey.startsWith(PREFIX)) return Optional.empty();
        Matcher m = KEY.matcher(jobKey);
        if (!m.matches()) return Optional.empty();
        return Optional.of(new Origin(m.group(1), Instant.parse(m.group(3)), m.group(2) != null));
    }
}
