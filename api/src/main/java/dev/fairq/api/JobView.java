package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonRawValue;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import io.swagger.v3.oas.annotations.media.Schema;

import java.time.Instant;
import java.time.OffsetDateTime;

/**
 * A job as the API shows it: snake_case, times in UTC, the payload as the JSON that was submitted.
 * {@code timeout_ms} null means the type's default; {@code cancel_requested_at} is set once someone cancelled
 * the job while it ran (it stays on a job that succeeded before it could stop).
 */
@Schema(name = "Job")
public record JobView(long id, String tenant, String queue, String type,
                      @Schema(description = "the JSON value that was submitted", implementation = Object.class)
                      @JsonRawValue String payload, int priority,
                      @Schema(allowableValues = {"pending", "ready", "running", "succeeded", "dead", "cancelled"})
                      String status, int attempts, int maxAttempts, Instant runAt, String jobKey, String orderingKey,
                      Instant createdAt, Instant startedAt, Instant finishedAt, String lastError, Integer timeoutMs,
                      Instant cancelRequestedAt,
                      @Schema(description = "the shared resource it uses (tenant limit concurrency_limits), or null")
                      String concurrencyKey,
                      @Schema(description = "the tenant's customer it is for (fair shares within the tenant), or null")
                      String fairnessKey) {

    static JobView of(JobsRecord r) {
        return new JobView(r.getId(), r.getTenantId(), r.getQueue(), r.getType(),
                r.getPayload() == null ? "null" : r.getPayload().data(), r.getPriority(), r.getStatus().getLiteral(),
                r.getAttempts(), r.getMaxAttempts(), utc(r.getRunAt()), r.getJobKey(), r.getOrderingKey(),
                utc(r.getCreatedAt()), utc(r.getStartedAt()), utc(r.getFinishedAt()), r.getLastError(),
                r.getTimeoutMs(), utc(r.getCancelRequestedAt()), r.getConcurrencyKey(),
                r.getFairnessKey());
    }

    static Instant utc(OffsetDateTime t) {
        return t == null ? null : t.toInstant();
    }
}
