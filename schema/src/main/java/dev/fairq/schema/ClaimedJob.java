package dev.fairq.schema;

import java.time.OffsetDateTime;

/**
 * A job a worker holds the lease of; {@code attempt} is the fencing token for completing it.
 *
 * @param timeoutMs the job's own time limit per attempt, null when it takes its type's default
 */
public record ClaimedJob(long id, String tenantId, String queue, String type, String payloadJson, int attempt,
                         int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt,
                         OffsetDateTime admittedAt, double readyRank, Integer timeoutMs) {
}
