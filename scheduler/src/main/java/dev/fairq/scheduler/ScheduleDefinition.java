package dev.fairq.scheduler;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.Schedules;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A schedule as a tenant writes it (the body of {@code PUT /v1/schedules/{name}}, an entry of tenants.yml, or
 * built in Java with {@link #builder}). Fields left out take the defaults below; {@link #resolve} checks every
 * field and names each one at fault.
 *
 * @param cron         five fields, or @hourly, @daily, @weekly, @monthly, @yearly (see {@link CronSchedule})
 * @param timeZone     an IANA zone, required (no server default): the zone the cron's local times are read in
 * @param job          what each fire enqueues
 * @param missedRuns   fires missed while no scheduler ran: {@code skip} (default: only the next fire),
 *                     {@code run_once} (one catch-up run), {@code run_all} (each, up to backfill_limit)
 * @param backfillLimit run_all's most catch-up runs (1-1000, default 10): the latest missed fires
 * @param overlap      a fire while the previous fire's job is unfinished: {@code allow} (default), {@code skip},
 *                     {@code queue} (behind it, through an ordering key)
 * @param paused       no fires while true (and none caught up afterwards)
 * @param startAt      first fire at or after (RFC 3339), optional
 * @param endAt        fires strictly before (RFC 3339), optional
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonInclude(JsonInclude.Include.ALWAYS)
public record ScheduleDefinition(String cron, String timeZone, JobTemplate job, String missedRuns, Integer backfillLimit,
                                 String overlap, Boolean paused, String startAt, String endAt) {

    public static final String DEFAULT_MISSED_RUNS = "skip";
    public static final String DEFAULT_OVERLAP = "allow";
    /** Enough to cover a scheduler outage of ten runs; run_all beyond it keeps the latest ones. */
    public static final int DEFAULT_BACKFILL_LIMIT = 10;
    public static final int MAX_BACKFILL_LIMIT = 1000;
    public static final List<String> MISSED_RUNS = List.of("skip", "run_once", "run_all");
    public static final List<String> OVERLAPS = List.of("allow", "skip", "queue");
    /** A schedule's name: the rules of a queue name (the schedules table checks the same). */
    public static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0," + (JobRequest.MAX_NAME_LENGTH - 1) + "}");

    /** The job each fire enqueues. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record JobTemplate(String type, JsonNode payload, String queue, Integer priority, String orderingKey,
                              Integer maxAttempts, Long timeoutMs, Integer payloadVersion) {
        public static JobTemplate of(String type) {
            return new JobTemplate(type, null, null, null, null, null, null, null);
        }

        /** Without a time limit (the type's) or a payload version (1). */
        public JobTemplate(String type, JsonNode payload, String queue, Integer priority, String orderingKey, Integer maxAttempts) {
            this(type, payload, queue, priority, orderingKey, maxAttempts, null, null);
        }
    }

    /**
     * Reads JSON bodies: snake_case, an unknown field is an error (a typo is never silently ignored), and no
     * coercion, as for the job and tenant bodies: {@code "5"} is not a number, {@code 1.5} not a whole number,
     * {@code "true"} not a boolean, {@code 5} not a string.
     */
    public static final ObjectMapper STRICT = strict();

    private static ObjectMapper strict() {
        ObjectMapper m = JsonMapper.builder()
                .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                // a template's payload numbers as written (1.50 stays 1.50, 100.0 stays 100.0), like a job's
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
                .build();
        for (LogicalType t : List.of(LogicalType.Integer, LogicalType.Boolean, LogicalType.Textual)) {
            m.coercionConfigFor(t).setCoercion(CoercionInputShape.String, t == LogicalType.Textual ? CoercionAction.TryConvert : CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Integer, t == LogicalType.Integer ? CoercionAction.TryConvert : CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Boolean, t == LogicalType.Boolean ? CoercionAction.TryConvert : CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.EmptyString, t == LogicalType.Textual ? CoercionAction.TryConvert : CoercionAction.Fail);
        }
        return m;
    }

    /** A definition from JSON (an API body, a tenants.yml entry); field errors name the JSON field. */
    public static ScheduleDefinition fromJson(JsonNode json) {
        if (json == null || !json.isObject()) throw new InvalidScheduleException(List.of(new FieldError("(body)", "must be a JSON object")));
        try {
            return STRICT.treeToValue(json, ScheduleDefinition.class);
        } catch (UnrecognizedPropertyException e) {
            throw new InvalidScheduleException(List.of(new FieldError(path(e), "unknown field (expected one of "
                    + String.join(", ", e.getKnownPropertyIds().stream().map(Object::toString).sorted().toList()) + ")")));
        } catch (MismatchedInputException e) {
            throw new InvalidScheduleException(List.of(new FieldError(path(e), wrongType(e.getTargetType()))));
        } catch (JsonMappingException e) {
            if (e.getCause() instanceof com.fasterxml.jackson.core.exc.InputCoercionException) { // 3000000000 for an int
                throw new InvalidScheduleException(List.of(new FieldError(path(e), outOfRange(json, e))));
            }
            throw new InvalidScheduleException(List.of(new FieldError(path(e), "has the wrong type: " + e.getOriginalMessage())));
        } catch (JsonProcessingException e) {
            throw new InvalidScheduleException(List.of(new FieldError("(body)", e.getOriginalMessage())));
        }
    }

    /**
     * What a whole number too large for its field's Java type ({@code "priority": 3000000000}) is told: the field's own
     * range, as a job body's field is ("must be between -100 and 100"), found by checking the body again with the
     * number at its type's bound on the same side; "is out of range" only when that says nothing for the field.
     */
    private static String outOfRange(JsonNode json, JsonMappingException e) {
        String field = path(e);
        try {
            com.fasterxml.jackson.databind.node.ObjectNode copy = (com.fasterxml.jackson.databind.node.ObjectNode) json.deepCopy();
            com.fasterxml.jackson.databind.node.ObjectNode parent = copy;
            List<JsonMappingException.Reference> refs = e.getPath();
            for (int i = 0; i < refs.size() - 1; i++) {
                parent = (com.fasterxml.jackson.databind.node.ObjectNode) parent.get(refs.get(i).getFieldName());
            }
            String leaf = refs.get(refs.size() - 1).getFieldName();
            JsonNode value = parent.get(leaf);
            if (value == null || !value.isIntegralNumber()) return "is out of range";
            parent.put(leaf, value.bigIntegerValue().signum() < 0 ? Integer.MIN_VALUE : Integer.MAX_VALUE);
            STRICT.treeToValue(copy, ScheduleDefinition.class).resolve(Integer.MAX_VALUE);
        } catch (InvalidScheduleException checked) {
            for (FieldError f : checked.errors()) {
                if (f.field().equals(field)) return f.message();
            }
        } catch (RuntimeException | JsonProcessingException other) {
            // another field's own fault: this one is still out of range
        }
        return "is out of range";
    }

    /** The job and tenant bodies' words for a value of the wrong JSON type. */
    private static String wrongType(Class<?> target) {
        if (target == Integer.class || target == int.class || target == Long.class) return "must be a whole number";
        if (target == Boolean.class || target == boolean.class) return "must be true or false";
        if (target == String.class) return "must be a string";
        if (target == JobTemplate.class) return "must be a JSON object";
        return "has the wrong type";
    }

    private static String path(JsonMappingException e) {
        StringBuilder b = new StringBuilder();
        for (JsonMappingException.Reference r : e.getPath()) {
            if (r.getFieldName() != null) {
                if (b.length() > 0) b.append('.');
                b.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                b.append('[').append(r.getIndex()).append(']');
            }
        }
        return b.length() == 0 ? "(body)" : b.toString();
    }

    /** This definition as JSON (what a PATCH merges into). */
    public ObjectNode toJson() {
        return STRICT.valueToTree(this);
    }

    /**
     * RFC 7386 JSON merge patch: the patch's fields replace this definition's, a null removes one (back to its
     * default), and objects ({@code job}) merge field by field.
     */
    public ScheduleDefinition merge(JsonNode patch) {
        if (patch == null || !patch.isObject()) throw new InvalidScheduleException(List.of(new FieldError("(body)", "must be a JSON object")));
        ObjectNode merged = toJson();
        mergeInto(merged, patch);
        return fromJson(merged);
    }

    private static void mergeInto(ObjectNode target, JsonNode patch) {
        for (Iterator<Map.Entry<String, JsonNode>> it = patch.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode value = e.getValue();
            if (value.isNull()) {
                target.remove(e.getKey());
            } else if (value.isObject() && target.get(e.getKey()) instanceof ObjectNode inner && !e.getKey().equals("payload")) {
                mergeInto(inner, value);
            } else {
                target.set(e.getKey(), value);
            }
        }
    }

    /** A checked definition with the defaults filled in, ready to store. */
    public record Resolved(CronSchedule schedule, String cron, String timeZone, String jobType, String jobPayloadJson,
                           String jobQueue, int jobPriority, String jobOrderingKey, Integer jobMaxAttempts,
                           String missedRuns, int backfillLimit, String overlap, boolean paused, Instant startAt,
                           Instant endAt, Integer jobTimeoutMs, int jobPayloadVersion) {
        Schedules.Write write(String tenantId, String name, Instant nextFireAt) {
            return new Schedules.Write(tenantId, name, cron, timeZone, jobType, jobPayloadJson, jobQueue, jobPriority,
                    jobOrderingKey, jobMaxAttempts, missedRuns, backfillLimit, overlap, paused, startAt, endAt, nextFireAt,
                    jobTimeoutMs, jobPayloadVersion);
        }
    }

    /** Checks a schedule name (the path's, or a tenants.yml entry's). */
    public static List<FieldError> checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            return List.of(new FieldError("name", "must be 1-" + JobRequest.MAX_NAME_LENGTH
                    + " letters, digits, '_', '.', ':' or '-', starting with a letter or digit"));
        }
        return List.of();
    }

    /**
     * Every field checked, defaults filled in. Throws {@link InvalidScheduleException} with one error per field
     * at fault ({@code cron}, {@code time_zone}, {@code job.type}, ...), so one answer names them all.
     *
     * @param maxPayloadBytes the largest template payload (the API's limit for a job's payload)
     */
    public Resolved resolve(int maxPayloadBytes) {
        List<FieldError> errors = new ArrayList<>();
        boolean cronOk = check(errors, () -> CronSchedule.of(cron, "UTC"));
        boolean zoneOk = check(errors, () -> CronSchedule.of("0 0 * * *", timeZone));
        CronSchedule schedule = cronOk && zoneOk ? CronSchedule.of(cron, timeZone) : null;

        String payloadJson = "{}";
        String type = null, queue = JobRequest.DEFAULT_QUEUE, orderingKey = null;
        int priority = 0;
        Integer maxAttempts = null, timeoutMs = null;
        int payloadVersion = JobRequest.DEFAULT_PAYLOAD_VERSION;
        if (job == null) {
            errors.add(new FieldError("job", "is required: the job each fire enqueues, e.g. {\"type\": \"report\"}"));
        } else {
            type = job.type();
            queue = job.queue() == null ? JobRequest.DEFAULT_QUEUE : job.queue();
            priority = job.priority() == null ? 0 : job.priority();
            orderingKey = job.orderingKey();
            maxAttempts = job.maxAttempts();
            if (job.payloadVersion() != null) payloadVersion = job.payloadVersion();
            if (job.timeoutMs() != null) {
                if (job.timeoutMs() < JobRequest.MIN_TIMEOUT_MS || job.timeoutMs() > JobRequest.MAX_TIMEOUT_MS) {
                    errors.add(new FieldError("job.timeout_ms", "must be a whole number of milliseconds between "
                            + JobRequest.MIN_TIMEOUT_MS + " and " + JobRequest.MAX_TIMEOUT_MS + " (24 h)"));
                } else {
                    timeoutMs = job.timeoutMs().intValue();
                }
            }
            if (job.payload() != null && !job.payload().isNull()) payloadJson = job.payload().toString();
            int bytes = payloadJson.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > maxPayloadBytes) {
                errors.add(new FieldError("job.payload", "must be at most " + maxPayloadBytes + " bytes, not " + bytes));
            }
            // the job's own checks: the fired jobs are checked again, so a template can never stop the firer
            JobRequest probe = JobRequest.builder("tenant", type).queue(queue).payload(payloadJson).priority(priority)
                    .orderingKey(orderingKey).maxAttempts(maxAttempts).payloadVersion(payloadVersion).buildUnchecked();
            for (FieldError e : probe.validate()) errors.add(e.prefixed("job."));
        }
        String missed = missedRuns == null ? DEFAULT_MISSED_RUNS : missedRuns.toLowerCase(Locale.ROOT);
        if (!MISSED_RUNS.contains(missed)) errors.add(new FieldError("missed_runs", "must be one of " + MISSED_RUNS));
        String over = overlap == null ? DEFAULT_OVERLAP : overlap.toLowerCase(Locale.ROOT);
        if (!OVERLAPS.contains(over)) errors.add(new FieldError("overlap", "must be one of " + OVERLAPS));
        int backfill = backfillLimit == null ? DEFAULT_BACKFILL_LIMIT : backfillLimit;
        if (backfill < 1 || backfill > MAX_BACKFILL_LIMIT) {
            errors.add(new FieldError("backfill_limit", "must be between 1 and " + MAX_BACKFILL_LIMIT));
        }
        Instant start = instant(startAt, "start_at", errors);
        Instant end = instant(endAt, "end_at", errors);
        if (start != null && end != null && !end.isAfter(start)) errors.add(new FieldError("end_at", "must be after start_at"));
        if (!errors.isEmpty()) throw new InvalidScheduleException(errors);
        return new Resolved(schedule, cron.strip(), timeZone, type, payloadJson, queue, priority, orderingKey, maxAttempts,
                missed, backfill, over, Boolean.TRUE.equals(paused), start, end, timeoutMs, payloadVersion);
    }

    private static boolean check(List<FieldError> errors, Runnable r) {
        try {
            r.run();
            return true;
        } catch (CronSchedule.InvalidCronException e) {
            errors.add(new FieldError(e.field(), e.getMessage()));
            return false;
        }
    }

    /**
     * The earliest and (exclusive) latest start_at or end_at: PostgreSQL cannot store the years past 9999 or before
     * 1 that RFC 3339 parsing allows, and a fire after start_at must fit as well (no cron waits a millennium).
     */
    public static final Instant EARLIEST = Instant.parse("1970-01-01T00:00:00Z");
    public static final Instant LATEST = Instant.parse("9000-01-01T00:00:00Z");

    private static Instant instant(String text, String field, List<FieldError> errors) {
        if (text == null) return null;
        Instant at;
        try {
            // to the microsecond, as timestamptz keeps it: start_at and end_at a nanosecond apart had passed the
            // end-after-start check here and broken the table's CHECK once rounded alike (a 500)
            at = OffsetDateTime.parse(text).toInstant().truncatedTo(java.time.temporal.ChronoUnit.MICROS);
        } catch (DateTimeParseException e) {
            errors.add(new FieldError(field, "must be an RFC 3339 time such as 2030-01-01T00:00:00Z"));
            return null;
        }
        if (at.isBefore(EARLIEST) || at.isAfter(LATEST)) {
            errors.add(new FieldError(field, "must be from " + EARLIEST + " to " + LATEST));
            return null;
        }
        return at;
    }

    public static Builder builder(String cron, String timeZone, JobTemplate job) {
        return new Builder(cron, timeZone, job);
    }

    /** For Java callers: {@code ScheduleDefinition.builder("30 2 * * *", "Europe/Berlin", JobTemplate.of("report")).build()}. */
    public static final class Builder {
        private final String cron;
        private final String timeZone;
        private final JobTemplate job;
        private String missedRuns;
        private Integer backfillLimit;
        private String overlap;
        private Boolean paused;
        private Instant startAt;
        private Instant endAt;

        private Builder(String cron, String timeZone, JobTemplate job) {
            this.cron = cron;
            this.timeZone = timeZone;
            this.job = job;
        }

        public Builder missedRuns(String v) { this.missedRuns = v; return this; }
        public Builder backfillLimit(int v) { this.backfillLimit = v; return this; }
        public Builder overlap(String v) { this.overlap = v; return this; }
        public Builder paused(boolean v) { this.paused = v; return this; }
        public Builder startAt(Instant v) { this.startAt = v; return this; }
        public Builder endAt(Instant v) { this.endAt = v; return this; }

        public ScheduleDefinition build() {
            return new ScheduleDefinition(cron, timeZone, job, missedRuns, backfillLimit, overlap, paused,
                    startAt == null ? null : startAt.toString(), endAt == null ? null : endAt.toString());
        }
    }
}
