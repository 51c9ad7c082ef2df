package dev.fairq.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Json;

import java.io.UncheckedIOException;
import java.time.OffsetDateTime;

/** What a handler gets: the payload, which attempt this is, and a key that is the same on every attempt. */
public record JobContext(long jobId, String tenantId, String queue, String type, String payloadJson, int attempt,
                         int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt,
                         String workerId) {

    static JobContext of(ClaimedJob job, String workerId) {
        return new JobContext(job.id(), job.tenantId(), job.queue(), job.type(), job.payloadJson(), job.attempt(),
                job.maxAttempts(), job.jobKey(), job.orderingKey(), job.createdAt(), workerId);
    }

    /**
     * Stable across every attempt of this job (retries, lease expiries, replays), distinct between jobs:
     * hand it to downstream systems (an Idempotency-Key header, a unique column) so a re-run has no second
     * effect.
     */
    public String idempotencyKey() {
        return "fairq-" + tenantId + "-" + jobId;
    }

    public JsonNode payload() {
        try {
            return Json.MAPPER.readTree(payloadJson);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public <T> T payloadAs(Class<T> type) {
        try {
            return Json.MAPPER.readValue(payloadJson, type);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public boolean isLastAttempt() {
        return attempt >= maxAttempts;
    }
}
