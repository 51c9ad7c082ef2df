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
 * @param concurrencyKey a shared resource the job uses (1-255 characters): the tenant's {@code concurrency_limits}
 *                    caps how many jobs of one key are admitted or running at once; null: none
 * @param fairnessKey the tenant's own customer, project or user (1-255 characters): the tenant's share is split
 *                    among its keys with jobs waiting (tenant limit {@code key_weights}); null: none
 */
public record JobRequest(String tenantId, String queue, String type, String payloadJson, int priority,
                         OffsetDateTime runAt, Duration delay, String jobKey, String orderingKey,
                         Integer maxAttempts, String requestHash, Duration timeout, String concurrencyKey,
                         String fairnessKey) {

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
    /** job_key and ordering_key: 1 to 255 characters. */
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
    /** queue and type; a compile-time constant so that the API's Bean Validation annotations can name it. */
    public static final String NAME_REGEX = "[A-Za-z0-9][A-Za-z0-9_.:-]{0," + (MAX_NAME_LENGTH - 1) + "}";
    public static final String NAME_RULE = "must be 1-" + MAX_NAME_LENGTH + " letters, digits, '_', '.', ':' or '-'";
    private static final Pattern NAME = Pattern.compile(NAME_REGEX);

    public static Builder builder(String tenantId, String type) {
        return new Builder(tenantId, type);
    }

    public int effectiveMaxAttempts() {
        return maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : maxAttempts;
    }

    /** Every problem with this request, empty when it can be stored. */
    public List<FieldError> validate() {
        List<FieldError> errors = new ArrayList<>();
        if (tenantId == null || tenantId.isBlank()) errors.add(new FieldError("tenant_id", "is required"));
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
        }
        if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
            errors.add(new FieldError("priority", "must be between " + MIN_PRIORITY + " and " + MAX_PRIORITY));
        }
        if (runAt != null && delay != null) errors.add(new FieldError("run_at", "give run_at or delay_ms, not both"));
        if (delay != null && (delay.isNegative() || delay.compareTo(MAX_DELAY) > 0)) {
            errors.add(new FieldError("delay_ms", "must be between 0 and one year"));
        }
        if (jobKey != null && (jobKey.isEmpty() || jobKey.length() > MAX_KEY_LENGTH)) {
            errors.add(new FieldError("job_key", "must be 1-" + MAX_KEY_LENGTH + " characters"));
        }
        if (orderingKey != null && (orderingKey.isEmpty() || orderingKey.length() > MAX_KEY_LENGTH)) {
            errors.add(new FieldError("ordering_key", "must be 1-" + MAX_KEY_LENGTH + " characters"));
        }
        if (concurrencyKey != null && (concurrencyKey.isEmpty() || concurrencyKey.length() > MAX_KEY_LENGTH)) {
            errors.add(new FieldError("concurrency_key", "must be 1-" + MAX_KEY_LENGTH + " characters"));
        }
        if (fairnessKey != null && (fairnessKey.isEmpty() || fairnessKey.length() > MAX_KEY_LENGTH)) {
            errors.add(new FieldError("fairness_key", "must be 1-" + MAX_KEY_LENGTH + " characters"));
        }
        if (maxAttempts != null && (maxAttempts < MIN_MAX_ATTEMPTS || maxAttempts > MAX_MAX_ATTEMPTS)) {
            errors.add(new FieldError("max_attempts", "must be between " + MIN_MAX_ATTEMPTS + " and " + MAX_MAX_ATTEMPTS));
        }
        if (timeout != null && (timeout.compareTo(MIN_TIMEOUT) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0
                || timeout.toNanosPart() % 1_000_000 != 0)) {
            errors.add(new FieldError("timeout_ms", "must be a whole number of milliseconds between "
                    + MIN_TIMEOUT.toMillis() + " and " + MAX_TIMEOUT.toMillis() + " (24 h)"));
        }
        return errors;
    }

    private static boolean isJson(String text) {
        try {
            Json.MAPPER.readTree(text);
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
        /** The shared resource the job uses (see the tenant limit concurrency_limits); null: none. */
        public Builder concurrencyKey(String concurrencyKey) { this.concurrencyKey = concurrencyKey; return this; }
        /** The tenant's own customer the job is for (see the tenant limit key_weights); null: none. */
        public Builder fairnessKey(String fairnessKey) { this.fairnessKey = fairnessKey; return this; }

        /** Builds without validating; {@link JobStore} validates again before it writes anything. */
        public JobRequest buildUnchecked() {
            return new JobRequest(tenantId, queue, type, payloadJson, priority, runAt, delay, jobKey, orderingKey,
                    maxAttempts, requestHash, timeout, concurrencyKey, fairnessKey);
        }

        public JobRequest build() {
            JobRequest request = buildUnchecked();
            List<FieldError> errors = request.validate();
            if (!errors.isEmpty()) throw new InvalidJobException(errors);
            return request;
        }
    }
}
