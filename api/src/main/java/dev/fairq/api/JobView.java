package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonRawValue;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import io.swagger.v3.oas.annotations.media.Schema;

import java.time.Instant;
import java.time.OffsetDateTime;

/**
 * A job as the API shows it: snake_case, times in UTC, the payload as the JSON that was submitted.
 * {@code timeout_ms} null means the type's default; {@code cancel_requested_at} is set once someone cancelled
 * the job while it ran (it stays on a job that succeeded before it could stop). {@code payload_version} is the
 * payload's version as submitted; {@code snoozes} how often a handler put it back for later without using an
 * attempt.
 */
@Schema(name = "Job")
public record JobView(long id, String tenant, String queue, String type,
                      @Schema(description = "the JSON value that was submitted", implementation = Object.class)
                      @JsonRawValue String payload, int priority,
                      @Schema(allowableValues = {"pending", "ready", "running", "succeeded", "dead", "cancelled"})
                      String status, int attempts, int maxAttempts, Instant runAt, String jobKey, String orderingKey,
                      Instant createdAt, Instant startedAt, Instant finishedAt, String lastError, Integer timeoutMs,
                      Instant cancelRequestedAt,
                      @Schema(description = "the version of the payload's shape, as submitted (default 1)")
                      int payloadVersion,
                      @Schema(description = "times a handler snoozed the job (put it back for later without using an attempt)")
                      int snoozes,
                      @Schema(description = "the shared resource it uses (tenant limit concurrency_limits), or null")
                      String concurrencyKey,
                      @Schema(description = "the tenant's customer it is for (fair shares within the tenant), or null")
                      String fairnessKey) {

    static JobView of(JobsRecord r) {
        return new JobView(r.getId(), r.getTenantId(), r.getQueue(), r.getType(),
                r.getPayload() == null ? "null" : r.getPayload().data(), r.getPriority(), r.getStatus().getLiteral(),
                r.getAttempts(), r.getMaxAttempts(), utc(r.getRunAt()), r.getJobKey(), r.getOrderingKey(),
                utc(r.getCreatedAt()), utc(r.getStartedAt()), utc(r.getFinishedAt()), r.getLastError(),
                r.getTimeoutMs(), utc(r.getCancelRequestedAt()),
                r.getPayloadVersion() == null ? 1 : r.getPayloadVersion(), r.getSnoozes() == null ? 0 : r.getSnoozes(),
                r.getConcurrencyKey(), r.getFairnessKey());
    }

    static Instant utc(OffsetDateTime t) {
        return t == null ? null : t.toInstant();
    }
}
