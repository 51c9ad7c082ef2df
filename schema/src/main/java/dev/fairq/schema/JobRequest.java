package dev.fairq.schema;

import com.fasterxml.jackson.core.JsonProcessingException;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What a caller asks to run. Build with {@link #builder(String, String)}; {@link Builder#build()} validates
 * and throws {@link InvalidJobException} naming each field at fault.
 *
 * @param runAt       when the job may start; null means now (or now + {@code delay})
 * @param delay       alternative to runAt, measured on the database clock
 * @param maxAttempts null means the default (25)
 * @param requestHash optional fingerprint of the original request, so a replay of a {@code job_key} can be
 *                    told apart from a different request reusing the key
 * @param timeout     the time limit of each attempt, whole milliseconds from {@link #MIN_TIMEOUT} to
 *                    {@link #MAX_TIMEOUT}; null means the default of the job's type (see the worker's
 *                    HandlerRegistry)
 * @param payloadVersion the version of the payload's shape, {@link #MIN_PAYLOAD_VERSION} to
 *                    {@link #MAX_PAYLOAD_VERSION}; handlers declare the versions they read (default 1)
 * @param concurrencyKey a shared resource the job uses (1-255 characters): the tenant's {@code concurrency_limits}
 *                    caps how many jobs of one key are admitted or running at once; null: none
 * @param fairnessKey the tenant's own customer, project or user (1-255 characters): the tenant's share is split
 *                    among its keys with jobs waiting (tenant limit {@code key_weights}); null: none
 */
public record JobRequest(String tenantId, String queue, String type, String payloadJson, int priority,
                         OffsetDateTime runAt, Duration delay, String jobKey, String orderingKey,
                         Integer maxAttempts, String requestHash, Duration timeout, int payloadVersion,
                         String concurrencyKey, String fairnessKey) {

    /** A version-1 payload (the form before payload versions existed), with no concurrency or fairness key. */
    public JobRequest(String tenantId, String queue, String type, String payloadJson, int priority,
                      OffsetDateTime runAt, Duration delay, String jobKey, String orderingKey,
                      Integer maxAttempts, String requestHash, Duration timeout) {
        this(tenantId, queue, type, payloadJson, priority, runAt, delay, jobKey, orderingKey, maxAttempts, requestHash,
                timeout, DEFAULT_PAYLOAD_VERSION, null, null);
    }

    public static final String DEFAULT_QUEUE = "default";
    public static final int DEFAULT_MAX_ATTEMPTS = 25;
    /**
     * The job fields' bounds, declared once: validation below, the API and the jobs table's CHECK constraints
     * (V1__queue.sql, proven equal by LimitRangesMatchTheSchemaTest).
     */
    public static final int MIN_PRIORITY = -100;
    public static final int MAX_PRIORITY = 100;
    public static final int MIN_MAX_ATTEMPTS = 1;
    public static final int MAX_MAX_ATTEMPTS = 1000;
    /** job_key, ordering_key, concurrency_key and fairness_key: 1 to 255 characters. */
    public static final int MAX_KEY_LENGTH = 255;
    /** queue and type: 1 to 100 characters of {@link #NAME}. */
    public static final int MAX_NAME_LENGTH = 100;
    /** delay_ms: at most a year ahead (366 days, in milliseconds for the API's declarations). */
    public static final long MAX_DELAY_MS = 366L * 24 * 60 * 60 * 1000;
    public static final Duration MAX_DELAY = Duration.ofMillis(MAX_DELAY_MS);
    /** timeout_ms: 1 ms to 24 h; a job that needs longer holds a thread (and its ordering key) too long: split it. */
    public static final long MIN_TIMEOUT_MS = 1, MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
    public static final Duration MIN_TIMEOUT = Duration.ofMillis(MIN_TIMEOUT_MS);
    public static final Duration MAX_TIMEOUT = Duration.ofMillis(MAX_TIMEOUT_MS);
    /** payload_version: 1 (the default, what every payload was before versions) to a million. */
    public static final int DEFAULT_PAYLOAD_VERSION = 1, MIN_PAYLOAD_VERSION = 1, MAX_PAYLOAD_VERSION = 1_000_000;
    /** queue and type; a compile-time constant so that the API's Bean Validation annotations can name it. */
    public static final String NAME_REGEX = "[A-Za-z0-9][A-Za-z0-9_.:-]{0," + (MAX_NAME_LENGTH - 1) + "}";
    public static final String NAME_RULE = "must be 1-" + MAX_NAME_LENGTH + " letters, digits, '_', '.', ':' or '-'";
    private static final Pattern NAME = Pattern.compile(NAME_REGEX);
    /** What a tenant id may be: the tenants table's CHECK (V1__queue.sql); tenants.yml and the admin API use it too. */
    public static final Pattern TENANT_ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    public static final String TENANT_ID_RULE = "must be 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit";

    public static Builder builder(String tenantId, String type) {
        return new Builder(tenantId, type);
    }

    public int effectiveMaxAttempts() {
        return maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : maxAttempts;
    }

    /** run_at: within a year of now, either way, like delay_ms ahead (PostgreSQL's timestamptz has a range too). */
    public static final String RUN_AT_RULE = "must be within one year of now";
    /** job_key, ordering_key, concurrency_key and fairness_key: a key is an identifier, and a NUL cannot be stored in a PostgreSQL text at all. */
    public static final String KEY_RULE = "must be 1-" + MAX_KEY_LENGTH + " characters, none of them a control character"
            + " or an unpaired UTF-16 surrogate";
    public static final String NUL_RULE = "must not contain the character U+0000 (PostgreSQL's jsonb cannot store it)";
    /**
     * A lone {@code \ud800} is no character: PostgreSQL's UTF-8 cannot hold it, and the driver would store '?'
     * instead, so two different keys would become one (and an enqueue would never find the key it wrote).
     */
    public static final String SURROGATE_RULE = "must not contain an unpaired UTF-16 surrogate (\\ud800-\\udfff alone is not a character)";

    /** Every problem with this request, empty when it can be stored; run_at is checked against this JVM's clock. */
    public List<FieldError> validate() {
        return validate(java.time.Instant.now());
    }

    /** Every problem with this request, with {@code now} for run_at's bound (the queue's clock). */
    public List<FieldError> validate(java.time.Instant now) {
        List<FieldError> errors = new ArrayList<>();
        if (tenantId == null || tenantId.isBlank()) {
            errors.add(new FieldError("tenant_id", "is required"));
        } else if (!TENANT_ID.matcher(tenantId).matches()) { // no such tenant can exist; a NUL was a database error
            errors.add(new FieldError("tenant_id", TENANT_ID_RULE));
        }
        if (type == null || type.isBlank()) {
            errors.add(new FieldError("type", "is required"));
        } else if (!NAME.matcher(type).matches()) {
            errors.add(new FieldError("type", NAME_RULE));
        }
        if (queue == null || !NAME.matcher(queue).matches()) {
            errors.add(new FieldError("queue", NAME_RULE));
        }
        if (payloadJson == null) {
            errors.add(new FieldError("payload", "is required"));
        } else if (!isJson(payloadJson)) {
            errors.add(new FieldError("payload", "must be valid JSON"));
        } else {
            FieldError at = unstorableAt(payloadJson);
            if (at != null) errors.add(at);
        }
        if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
            errors.add(new FieldError("priority", "must be between " + MIN_PRIORITY + " and " + MAX_PRIORITY));
        }
        if (runAt != null && delay != null) errors.add(new FieldError("run_at", "give run_at or delay_ms, not both"));
        if (runAt != null && (runAt.toInstant().isAfter(now.plus(MAX_DELAY)) || runAt.toInstant().isBefore(now.minus(MAX_DELAY)))) {
            errors.add(new FieldError("run_at", RUN_AT_RULE));
        }
        if (delay != null && (delay.isNegative() || delay.compareTo(MAX_DELAY) > 0)) {
            errors.add(new FieldError("delay_ms", "must be between 0 and one year"));
        }
        if (jobKey != null && !isKey(jobKey)) errors.add(new FieldError("job_key", KEY_RULE));
        if (orderingKey != null && !isKey(orderingKey)) errors.add(new FieldError("ordering_key", KEY_RULE));
        if (concurrencyKey != null && !isKey(concurrencyKey)) errors.add(new FieldError("concurrency_key", KEY_RULE));
        if (fairnessKey != null && !isKey(fairnessKey)) errors.add(new FieldError("fairness_key", KEY_RULE));
        if (maxAttempts != null && (maxAttempts < MIN_MAX_ATTEMPTS || maxAttempts > MAX_MAX_ATTEMPTS)) {
            errors.add(new FieldError("max_attempts", "must be between " + MIN_MAX_ATTEMPTS + " and " + MAX_MAX_ATTEMPTS));
        }
        if (timeout != null && (timeout.compareTo(MIN_TIMEOUT) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0
                || timeout.toNanosPart() % 1_000_000 != 0)) {
            errors.add(new FieldError("timeout_ms", "must be a whole number of milliseconds between "
                    + MIN_TIMEOUT.toMillis() + " and " + MAX_TIMEOUT.toMillis() + " (24 h)"));
        }
        if (payloadVersion < MIN_PAYLOAD_VERSION || payloadVersion > MAX_PAYLOAD_VERSION) {
            errors.add(new FieldError("payload_version", "must be between " + MIN_PAYLOAD_VERSION + " and " + MAX_PAYLOAD_VERSION));
        }
        return errors;
    }

    /** A key's rule ({@link #KEY_RULE}): job_key, ordering_key, concurrency_key, fairness_key and map limits' keys. */
    public static boolean isKey(String key) {
        // characters as PostgreSQL's length() counts them (the CHECK constraints): an emoji is one, not two
        if (key.isEmpty() || key.codePointCount(0, key.length()) > MAX_KEY_LENGTH) return false;
        for (int i = 0; i < key.length(); i++) if (Character.isISOControl(key.charAt(i))) return false;
        return unpairedSurrogate(key) < 0;
    }

    /** The index of the first unpaired UTF-16 surrogate in {@code s}, or -1: text UTF-8 (and so PostgreSQL) can hold. */
    public static int unpairedSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else {
                return i;
            }
        }
        return -1;
    }

    /**
     * Where a payload holds what PostgreSQL cannot store, in a string or as a key ({@code payload.a[2].b}), or
     * null: U+0000 (jsonb's text type cannot hold it, so the insert would fail) or an unpaired surrogate (stored
     * as '?'). The tree is walked only when the text may hold one: an escape, or a surrogate (a Java caller's raw
     * string; Jackson writes U+0000 as an escape).
     */
    static FieldError unstorableAt(String json) {
        boolean strings = json.contains("\\u") || unpairedSurrogate(json) >= 0;
        boolean numbers = mayHoldLongNumber(json);
        if (!strings && !numbers) return null;
        com.fasterxml.jackson.databind.JsonNode tree;
        try {
            tree = Json.EXACT.readTree(json);
        } catch (JsonProcessingException e) {
            return null; // not JSON: reported as such
        }
        String at = pathOf(tree, "payload", s -> s.indexOf('\0') >= 0);
        if (at != null) return new FieldError(at, NUL_RULE);
        at = pathOf(tree, "payload", s -> unpairedSurrogate(s) >= 0);
        if (at != null) return new FieldError(at, SURROGATE_RULE);
        at = numbers ? longNumberAt(tree, "payload") : null;
        return at == null ? null : new FieldError(at, NUMBER_RULE);
    }

    /**
     * A payload number written out in full (as PostgreSQL's jsonb gives it back: 1e1000 is a 1 and 1,000 zeros)
     * of at most this many characters. Jackson's readers stop at 1,000 digits, so one longer would make the job,
     * and every page listing it, unreadable; PostgreSQL's numeric refuses 1e200000 outright.
     */
    public static final int MAX_NUMBER_CHARS = 1000;
    public static final String NUMBER_RULE = "must be a number of at most " + MAX_NUMBER_CHARS
            + " characters written out in full (PostgreSQL gives 1e1000 back as 1,001 digits)";

    /** Whether the text has an exponent of 3+ digits or a run of 900+ digits: only then is the tree walked. */
    private static boolean mayHoldLongNumber(String json) {
        int run = 0;
        for (int i = 0; i < json.length(); i++) {
            char c = json.charAt(i);
            if (c >= '0' && c <= '9') {
                if (++run >= 900) return true;
                continue;
            }
            run = 0;
            if ((c == 'e' || c == 'E') && i > 0 && (Character.isDigit(json.charAt(i - 1)) || json.charAt(i - 1) == '.')) {
                int j = i + 1;
                if (j < json.length() && (json.charAt(j) == '+' || json.charAt(j) == '-')) j++;
                int digits = 0;
                while (j < json.length() && Character.isDigit(json.charAt(j))) { digits++; j++; }
                if (digits >= 3) return true;
            }
        }
        return false;
    }

    private static String longNumberAt(com.fasterxml.jackson.databind.JsonNode n, String path) {
        if (n.isNumber()) {
            java.math.BigDecimal d = n.decimalValue();
            long whole = Math.max(1L, (long) d.precision() - d.scale()), fraction = Math.max(0, d.scale());
            return whole + fraction + 2 > MAX_NUMBER_CHARS ? path : null;
        }
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                String at = longNumberAt(n.get(i), path + "[" + i + "]");
                if (at != null) return at;
            }
        } else if (n.isObject()) {
            for (var it = n.fields(); it.hasNext(); ) {
                var e = it.next();
                String at = longNumberAt(e.getValue(), path + "." + e.getKey());
                if (at != null) return at;
            }
        }
        return null;
    }

    /**
     * The path of the first string in {@code n} (a value, or a field name: then its object's path) that is
     * {@code bad}, as the API names fields ({@code payload.a[2].b}; {@code path} "" for a body's top level), or null.
     */
    public static String pathOf(com.fasterxml.jackson.databind.JsonNode n, String path, java.util.function.Predicate<String> bad) {
        if (n.isTextual()) return bad.test(n.textValue()) ? path : null;
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                String at = pathOf(n.get(i), path + "[" + i + "]", bad);
                if (at != null) return at;
            }
        } else if (n.isObject()) {
            for (var it = n.fields(); it.hasNext(); ) {
                var e = it.next();
                if (bad.test(e.getKey())) return path;
                String at = pathOf(e.getValue(), path.isEmpty() ? e.getKey() : path + "." + e.getKey(), bad);
                if (at != null) return at;
            }
        }
        return null;
    }

    /**
     * One JSON value and nothing after it: readTree alone stops after the first value, so "{} {}" passed here and
     * then failed in PostgreSQL's jsonb cast, an error naming no field.
     */
    private static final com.fasterxml.jackson.databind.ObjectReader ONE_VALUE = Json.MAPPER.readerFor(
            com.fasterxml.jackson.databind.JsonNode.class).with(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private static boolean isJson(String text) {
        try {
            ONE_VALUE.readTree(text);
            return !text.isBlank();
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    public static final class Builder {
        private final String tenantId;
        private final String type;
        private String queue = DEFAULT_QUEUE;
        private String payloadJson = "{}";
        private int priority;
        private OffsetDateTime runAt;
        private Duration delay;
        private String jobKey;
        private String orderingKey;
        private Integer maxAttempts;
        private String requestHash;
        private Duration timeout;
        private int payloadVersion = DEFAULT_PAYLOAD_VERSION;
        private String concurrencyKey;
        private String fairnessKey;

        private Builder(String tenantId, String type) {
            this.tenantId = tenantId;
            this.type = type;
        }

        public Builder queue(String queue) { this.queue = queue; return this; }
        public Builder payload(String json) { this.payloadJson = json; return this; }
        public Builder priority(int priority) { this.priority = priority; return this; }
        public Builder runAt(OffsetDateTime runAt) { this.runAt = runAt; return this; }
        public Builder delay(Duration delay) { this.delay = delay; return this; }
        public Builder jobKey(String jobKey) { this.jobKey = jobKey; return this; }
        public Builder orderingKey(String orderingKey) { this.orderingKey = orderingKey; return this; }
        public Builder maxAttempts(Integer maxAttempts) { this.maxAttempts = maxAttempts; return this; }
        public Builder requestHash(String requestHash) { this.requestHash = requestHash; return this; }
        /** The time limit of each attempt (null: the type's default). */
        public Builder timeout(Duration timeout) { this.timeout = timeout; return this; }
        /** The version of the payload's shape (default 1); the job's handler must read it or upcast it. */
        public Builder payloadVersion(int version) { this.payloadVersion = version; return this; }
        /** The shared resource the job uses (see the tenant limit concurrency_limits); null: none. */
        public Builder concurrencyKey(String concurrencyKey) { this.concurrencyKey = concurrencyKey; return this; }
        /** The tenant's own customer the job is for (see the tenant limit key_weights); null: none. */
        public Builder fairnessKey(String fairnessKey) { this.fairnessKey = fairnessKey; return this; }

        /** Builds without validating; {@link JobStore} validates again before it writes anything. */
        public JobRequest buildUnchecked() {
            return new JobRequest(tenantId, queue, type, payloadJson, priority, runAt, delay, jobKey, orderingKey,
                    maxAttempts, requestHash, timeout, payloadVersion, concurrencyKey, fairnessKey);
        }

        public JobRequest build() {
            JobRequest request = buildUnchecked();
            List<FieldError> errors = request.validate();
            if (!errors.isEmpty()) throw new InvalidJobException(errors);
            return request;
        }
    }
}
