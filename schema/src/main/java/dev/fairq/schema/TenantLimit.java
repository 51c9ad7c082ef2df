package dev.fairq.schema;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Every tenant limit, declared once: its field name (tenants.yml and the API), its range and its default.
 * tenants.yml ({@code TenantsFile}) and the admin API validate with {@link #accept}; the tenants table's
 * CHECK constraints (V1__queue.sql, V9__schedules.sql, V10__api_limits_and_admin_tokens.sql, V12__keys_and_shares.sql) hold the same ranges, which {@code LimitRangesMatchTheSchemaTest} proves
 * against the database, so the three can no longer drift apart.
 */
public enum TenantLimit {
    /** Share of the workers when tenants compete. */
    WEIGHT("weight", Kind.WHOLE, 1, 1000, 1, TenantLimits::weight),
    /** Sustained job starts per second (the token bucket's refill). */
    RATE_PER_SECOND("rate_per_second", Kind.POSITIVE_NUMBER, 0, 1_000_000, 100.0, TenantLimits::ratePerSecond),
    /** Job starts at once after a quiet spell (the token bucket's size). */
    BURST("burst", Kind.WHOLE, 1, 1_000_000, 200, TenantLimits::burst),
    /** Jobs admitted or running at the same time, at most. */
    MAX_RUNNING("max_running", Kind.WHOLE, 1, 100_000, 20, TenantLimits::maxRunning),
    /** Jobs waiting; beyond it enqueue answers 429. */
    MAX_QUEUED("max_queued", Kind.WHOLE, 1, Integer.MAX_VALUE, 100_000, TenantLimits::maxQueued),
    /** Jobs are accepted but none starts. */
    PAUSED("paused", Kind.BOOLEAN, 0, 0, false, TenantLimits::paused),
    /** Where the http handler may deliver: host names, *.domains, IPs or CIDR ranges, each with an optional :port (see WebhookAllowList). */
    WEBHOOK_ALLOW("webhook_allow", Kind.HOST_LIST, 0, 253, List.of(), TenantLimits::webhookAllow),
    /** Schedules the tenant may have (0: none); a create beyond it is refused. */
    MAX_SCHEDULES("max_schedules", Kind.WHOLE, 0, 1_000_000, 1000, TenantLimits::maxSchedules),
    /**
     * The shortest time between two fires of one of the tenant's schedules, checked when a schedule is written.
     * From 60 s (a five-field cron fires once a minute at most) to a leap year.
     */
    MIN_SCHEDULE_INTERVAL_S("min_schedule_interval_s", Kind.WHOLE, 60, 31_622_400, 60, TenantLimits::minScheduleIntervalS),
    /**
     * API requests per second with the tenant's keys (a token bucket in each API process); beyond it a 429 with
     * Retry-After. 100 matches the default job start rate: one job per request cannot outrun it by more than the burst.
     */
    API_RATE_PER_SECOND("api_rate_per_second", Kind.POSITIVE_NUMBER, 0, 1_000_000, 100.0, TenantLimits::apiRatePerSecond),
    /** API requests at once after a quiet spell (the bucket's size). */
    API_BURST("api_burst", Kind.WHOLE, 1, 1_000_000, 200, TenantLimits::apiBurst),
    /**
     * Concurrency key (1-255 characters) to the most jobs of that key admitted or running at once, 0 to 100,000
     * (0 holds the key's jobs); a key without an entry is unlimited. At most {@link #MAX_MAP_ENTRIES} keys.
     */
    CONCURRENCY_LIMITS("concurrency_limits", Kind.KEY_MAP, 0, 100_000, Map.of(), TenantLimits::concurrencyLimits),
    /**
     * Fairness key (1-255 characters) to its weight within the tenant's share, 1 to 1000; a key without an entry
     * weighs 1. At most {@link #MAX_MAP_ENTRIES} keys.
     */
    KEY_WEIGHTS("key_weights", Kind.KEY_MAP, 1, 1000, Map.of(), TenantLimits::keyWeights);

    /** Entries of a map limit, at most: the scheduler holds each busy tenant's map in memory. */
    public static final int MAX_MAP_ENTRIES = 1000;
    /**
     * Entries of webhook_allow, at most: the http handler parses the whole list at every attempt, and each change
     * audits it twice (a million entries had been taken: 14 MB a GET, seconds of parsing an attempt).
     */
    public static final int MAX_ALLOW_LIST_ENTRIES = 1000;
    /** A map limit's key: 1-255 characters, like the job field it names. */
    public static final int MAX_MAP_KEY_LENGTH = 255;

    /** What a limit's values are. */
    public enum Kind { WHOLE, POSITIVE_NUMBER, BOOLEAN, HOST_LIST, KEY_MAP }

    private final String field;
    private final Kind kind;
    private final long min;
    private final long max;
    private final Object defaultValue;
    private final Function<TenantLimits, Object> stored;

    TenantLimit(String field, Kind kind, long min, long max, Object defaultValue, Function<TenantLimits, Object> stored) {
        this.field = field;
        this.kind = kind;
        this.min = min;
        this.max = max;
        this.defaultValue = defaultValue;
        this.stored = stored;
    }

    /** The name in tenants.yml and in the API's JSON. */
    public String field() { return field; }
    public Kind kind() { return kind; }
    /** Smallest allowed value (WHOLE), or the exclusive lower bound (POSITIVE_NUMBER). */
    public long min() { return min; }
    /** Largest allowed value (WHOLE, POSITIVE_NUMBER, a KEY_MAP's values); unused for HOST_LIST (WebhookAllowList checks entries). */
    public long max() { return max; }
    public Object defaultValue() { return defaultValue; }
    /** This limit's value in a tenant's stored limits. */
    public Object valueIn(TenantLimits limits) { return stored.apply(limits); }

    /** The limit named {@code field}, or null. */
    public static TenantLimit byField(String field) {
        for (TenantLimit l : values()) if (l.field.equals(field)) return l;
        return null;
    }

    /** Every limit's field name, in declaration order. */
    public static List<String> fields() {
        List<String> out = new ArrayList<>();
        for (TenantLimit l : values()) out.add(l.field);
        return out;
    }

    /** The built-in defaults, field -> value (a fresh, mutable map). */
    public static Map<String, Object> defaults() {
        Map<String, Object> d = new LinkedHashMap<>();
        for (TenantLimit l : values()) d.put(l.field, l.defaultValue);
        return d;
    }

    /** A limit value that is not allowed; the message says what is (e.g. "must be a whole number between 1 and 1000"). */
    public static final class InvalidLimitException extends IllegalArgumentException {
        private final List<FieldError> errors;

        InvalidLimitException(String field, String message) {
            this(List.of(new FieldError(field, message)));
        }

        InvalidLimitException(List<FieldError> errors) {
            super(errors.get(0).message());
            this.errors = List.copyOf(errors);
        }

        /** The (first) field at fault: the limit's name, or {@code webhook_allow[2]} for a list entry. */
        public String field() {
            return errors.get(0).field();
        }

        /** Every problem: a list limit names each bad entry. */
        public List<FieldError> errors() {
            return errors;
        }
    }

    /**
     * Checks and normalises a value: a JSON-like Java value (Integer, Long, Double, Boolean, String, List)
     * as Jackson or SnakeYAML produce it. Returns the stored form (Integer, Double, Boolean, List of String).
     */
    public Object accept(Object value) {
        switch (kind) {
            case WHOLE -> {
                if (!(value instanceof Integer || value instanceof Long) || ((Number) value).longValue() < min
                        || ((Number) value).longValue() > max) {
                    throw invalid("must be a whole number between " + min + " and " + max);
                }
                return ((Number) value).intValue();
            }
            case POSITIVE_NUMBER -> {
                if (!(value instanceof Number n) || !(n.doubleValue() > min && n.doubleValue() <= max)) {
                    throw invalid("must be a number > " + min + " and <= " + max);
                }
                return n.doubleValue();
            }
            case BOOLEAN -> {
                if (!(value instanceof Boolean b)) throw invalid("must be true or false");
                return b;
            }
            case HOST_LIST -> {
                if (!(value instanceof List<?> list)) throw invalid("must be a list of allow-list entries");
                if (list.size() > MAX_ALLOW_LIST_ENTRIES) throw invalid("must have at most " + MAX_ALLOW_LIST_ENTRIES + " entries");
                List<String> entries = new ArrayList<>();
                List<FieldError> problems = new ArrayList<>();
                for (int i = 0; i < list.size(); i++) {
                    if (!(list.get(i) instanceof String entry)) {
                        problems.add(new FieldError(field + "[" + i + "]", "must be a string"));
                        continue;
                    }
                    try {
                        WebhookAllowList.parseEntry(entry); // its message names the entry and what is wrong
                        entries.add(entry.trim().toLowerCase(Locale.ROOT));
                    } catch (IllegalArgumentException e) {
                        problems.add(new FieldError(field + "[" + i + "]", e.getMessage()));
                    }
                }
                if (!problems.isEmpty()) throw new InvalidLimitException(problems);
                return Collections.unmodifiableList(entries);
            }
            case KEY_MAP -> {
                if (!(value instanceof Map<?, ?> map)) throw invalid("must be an object mapping keys to whole numbers");
                if (map.size() > MAX_MAP_ENTRIES) throw invalid("must have at most " + MAX_MAP_ENTRIES + " keys");
                Map<String, Integer> entries = new TreeMap<>(); // sorted: equal maps compare and audit equal
                List<FieldError> problems = new ArrayList<>();
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    String key = String.valueOf(e.getKey());
                    if (!JobRequest.isKey(key)) { // the job fields' rule: a NUL cannot be stored in jsonb at all
                        problems.add(new FieldError(field, "keys " + JobRequest.KEY_RULE));
                        continue;
                    }
                    Object v = e.getValue();
                    if (!(v instanceof Integer || v instanceof Long) || ((Number) v).longValue() < min
                            || ((Number) v).longValue() > max) {
                        problems.add(new FieldError(field + "." + key, "must be a whole number between " + min + " and " + max));
                        continue;
                    }
                    entries.put(key, ((Number) v).intValue());
                }
                if (!problems.isEmpty()) throw new InvalidLimitException(problems);
                return Collections.unmodifiableMap(entries);
            }
            default -> throw new IllegalStateException(kind.toString());
        }
    }

    private InvalidLimitException invalid(String message) {
        return new InvalidLimitException(field, message);
    }
}
