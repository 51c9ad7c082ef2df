package dev.fairq.api;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import io.swagger.v3.oas.annotations.media.Schema;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * One job as a tenant submits it (POST /v1/jobs, or an item of a batch). The tenant is the caller's, from its
 * key: a body naming one is refused. Bounds are schema's {@link JobRequest} constants; {@link #check} runs the
 * store's own validation too, so the API can never accept what the store would refuse.
 */
@RequestBody.Refused(fields = {"tenant", "tenant_id"}, message = "the tenant comes from the API key, not the body")
@Schema(name = "JobSubmission", description = "A job to run. Unknown fields are refused (422).")
public record JobSubmission(
        @Schema(requiredMode = Schema.RequiredMode.REQUIRED, description = "the handler that runs it", example = "send-email")
        @NotBlank(message = "is required")
        @Pattern(regexp = JobRequest.NAME_REGEX, message = JobRequest.NAME_RULE)
        String type,
        @Schema(description = "default: " + JobRequest.DEFAULT_QUEUE)
        @Pattern(regexp = JobRequest.NAME_REGEX, message = JobRequest.NAME_RULE)
        String queue,
        @Schema(requiredMode = Schema.RequiredMode.REQUIRED, description = "any JSON value, at most FAIRQ_MAX_PAYLOAD_BYTES (413 beyond)")
        @NotNull(message = "is required (any JSON value, e.g. {})")
        @RequestBody.SizeLimited
        JsonNode payload,
        @Schema(description = "higher runs first within the tenant; default 0")
        @Min(value = JobRequest.MIN_PRIORITY, message = PRIORITY_RULE)
        @Max(value = JobRequest.MAX_PRIORITY, message = PRIORITY_RULE)
        Integer priority,
        @Schema(description = "when the job may start (RFC 3339), within a year of now either way; not with delay_ms", format = "date-time")
        @RequestBody.WrongType(JsonBodyReader.TIME_RULE)
        OffsetDateTime runAt,
        @Schema(description = "start after this many milliseconds (database clock); not with run_at")
        @Min(value = 0, message = DELAY_RULE)
        @Max(value = JobRequest.MAX_DELAY_MS, message = DELAY_RULE)
        @RequestBody.WrongType("must be a whole number of milliseconds")
        Long delayMs,
        @Schema(description = "idempotency key: a second identical request answers the first job (200, Idempotent-Replay), a different one 409", minLength = 1, maxLength = JobRequest.MAX_KEY_LENGTH)
        String jobKey,
        @Schema(description = "jobs with the same key run one at a time, in submission order", minLength = 1, maxLength = JobRequest.MAX_KEY_LENGTH)
        String orderingKey,
        @Schema(description = "default " + JobRequest.DEFAULT_MAX_ATTEMPTS)
        @Min(value = JobRequest.MIN_MAX_ATTEMPTS, message = ATTEMPTS_RULE)
        @Max(value = JobRequest.MAX_MAX_ATTEMPTS, message = ATTEMPTS_RULE)
        Integer maxAttempts,
        @Schema(description = "the time limit of each attempt, in milliseconds (1 ms to 24 h); default: the job type's")
        @Min(value = JobRequest.MIN_TIMEOUT_MS, message = TIMEOUT_RULE)
        @Max(value = JobRequest.MAX_TIMEOUT_MS, message = TIMEOUT_RULE)
        @RequestBody.WrongType("must be a whole number of milliseconds")
        Long timeoutMs,
        @Schema(description = "the version of the payload's shape (1 to 1000000), default 1: the job's handler must "
                + "read it or upcast it, else the job dead-letters naming the version")
        @Min(value = JobRequest.MIN_PAYLOAD_VERSION, message = VERSION_RULE)
        @Max(value = JobRequest.MAX_PAYLOAD_VERSION, message = VERSION_RULE)
        Integer payloadVersion,
        @Schema(description = "a shared resource the job uses: the tenant limit concurrency_limits caps how many jobs "
                + "of one key are admitted or running at once (a key without a limit is unlimited)", example = "stripe-api", minLength = 1, maxLength = JobRequest.MAX_KEY_LENGTH)
        String concurrencyKey,
        @Schema(description = "the tenant's own customer, project or user the job is for: the tenant's share is split "
                + "among its keys with jobs waiting (tenant limit key_weights)", example = "customer-42", minLength = 1, maxLength = JobRequest.MAX_KEY_LENGTH)
        String fairnessKey) implements RequestBody {

    static final String PRIORITY_RULE = "must be between " + JobRequest.MIN_PRIORITY + " and " + JobRequest.MAX_PRIORITY;
    static final String DELAY_RULE = "must be between 0 and one year";
    static final String KEY_RULE = JobRequest.KEY_RULE;
    static final String TIMEOUT_RULE = "must be a whole number of milliseconds between " + JobRequest.MIN_TIMEOUT_MS
            + " and " + JobRequest.MAX_TIMEOUT_MS;
    static final String VERSION_RULE = "must be between " + JobRequest.MIN_PAYLOAD_VERSION + " and " + JobRequest.MAX_PAYLOAD_VERSION;
    static final String ATTEMPTS_RULE = "must be between " + JobRequest.MIN_MAX_ATTEMPTS + " and " + JobRequest.MAX_MAX_ATTEMPTS;
    private static final ObjectMapper CANONICAL = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true)
            .registerModule(new SimpleModule().addSerializer(BigDecimal.class, new StdSerializer<>(BigDecimal.class) {
                // payload numbers are read exactly now; one a double holds is written as the double it was read as
                // before, so that the hash of a request stored then stays the same (a replay stays a replay)
                @Override
                public void serialize(BigDecimal v, JsonGenerator g, SerializerProvider p) throws java.io.IOException {
                    double d = v.doubleValue();
                    if (Double.isFinite(d) && BigDecimal.valueOf(d).compareTo(v) == 0) g.writeNumber(d);
                    else g.writeNumber(v.stripTrailingZeros()); // by value: 1E+400 and 10e399 are one number
                }
            }));

    /** The store's own checks (run_at with delay_ms...), on a stand-in tenant: the caller's is known later. */
    @Override
    public List<FieldError> check() {
        List<FieldError> out = new ArrayList<>();
        for (FieldError e : builder("-").buildUnchecked().validate()) if (!e.field().equals("tenant_id")) out.add(e);
        if (jobKey != null && jobKey.startsWith(dev.fairq.scheduler.ScheduleKeys.PREFIX)) {
            out.add(new FieldError("job_key", "job keys starting with '" + dev.fairq.scheduler.ScheduleKeys.PREFIX
                    + "' are reserved for the jobs schedules fire"));
        }
        if (dev.fairq.worker.handlers.HttpJobHandler.TYPE.equals(type) && payload != null) {
            // the built-in webhook type: a payload it would refuse (no url, a file: URL, a header with a line break)
            // is a 422 naming the field now, not a job that dies at its first attempt
            dev.fairq.worker.handlers.HttpJobHandler.payloadError(payload.toString()).ifPresent(out::add);
        }
        return out;
    }

    /**
     * The request to store for the caller's tenant, with the hash that tells a job_key replay from a conflict. Only
     * a job with a job_key gets one: nothing else is ever compared with it, and the canonical JSON and SHA-256 were 9%
     * of the API threads' CPU under batches of 100 keyless jobs (JFR, 40 of 452 samples).
     */
    JobRequest toRequest(String tenantId) {
        JobRequest.Builder b = builder(tenantId);
        return jobKey == null ? b.buildUnchecked() : b.requestHash(hash(b.buildUnchecked())).buildUnchecked();
    }

    private JobRequest.Builder builder(String tenantId) {
        return JobRequest.builder(tenantId, type)
                .queue(queue == null ? JobRequest.DEFAULT_QUEUE : queue)
                .payload(payload == null ? null : payload.toString())
                .priority(priority == null ? 0 : priority)
                .runAt(runAt)
                .delay(delayMs == null ? null : Duration.ofMillis(delayMs))
                .jobKey(jobKey)
                .orderingKey(orderingKey)
                .maxAttempts(maxAttempts)
                .timeout(timeoutMs == null ? null : Duration.ofMillis(timeoutMs))
                .payloadVersion(payloadVersion == null ? JobRequest.DEFAULT_PAYLOAD_VERSION : payloadVersion)
                .concurrencyKey(concurrencyKey)
                .fairnessKey(fairnessKey);
    }

    /**
     * The hash this request had before {@code delay_ms: 0} hashed as no delay_ms, when it differs: a job stored then
     * with {@code delay_ms: 0} still takes the same request as a replay. Null when there is none.
     */
    String earlierHash(String tenantId) {
        return jobKey == null || delayMs == null || delayMs != 0 ? null : hash(builder(tenantId).buildUnchecked(), true);
    }

    /** SHA-256 over the normalised request (defaults filled in, payload with sorted keys, run_at in UTC). */
    private String hash(JobRequest r) {
        return hash(r, false);
    }

    private String hash(JobRequest r, boolean zeroDelayAsGiven) {
        try {
            ObjectNode o = CANONICAL.createObjectNode();
            o.put("type", r.type());
            o.put("queue", r.queue());
            o.put("payload", CANONICAL.writeValueAsString(CANONICAL.treeToValue(payload, Object.class)));
            o.put("priority", r.priority());
            o.put("run_at", r.runAt() == null ? null : r.runAt().toInstant().toString());
            // delay_ms 0 is no delay: the same request as one without it (a replay, not a 409)
            o.put("delay_ms", r.delay() == null || (r.delay().isZero() && !zeroDelayAsGiven) ? null : r.delay().toMillis());
            o.put("job_key", r.jobKey());
            o.put("ordering_key", r.orderingKey());
            o.put("max_attempts", r.effectiveMaxAttempts());
            // only when given: the hashes of requests stored before timeout_ms existed stay the same
            if (r.timeout() != null) o.put("timeout_ms", r.timeout().toMillis());
            // only when not the default: version 1 hashes as every request did before versions existed
            if (r.payloadVersion() != JobRequest.DEFAULT_PAYLOAD_VERSION) o.put("payload_version", r.payloadVersion());
            if (r.concurrencyKey() != null) o.put("concurrency_key", r.concurrencyKey());
            if (r.fairnessKey() != null) o.put("fairness_key", r.fairnessKey());
            return Tokens.sha256(CANONICAL.writeValueAsString(CANONICAL.treeToValue(o, Object.class)));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
