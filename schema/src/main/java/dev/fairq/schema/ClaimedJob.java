package dev.fairq.schema;

import java.time.OffsetDateTime;

/**
 * A job a worker holds the lease of; {@code attempt} is the fencing token for completing it.
 *
 * @param timeoutMs      the job's own time limit per attempt, null when it takes its type's default
 * @param payloadVersion the version of the payload's shape as submitted (1 unless the submitter said otherwise)
 * @param snoozes        how many times the job was snoozed before this attempt
 * @param startedAt      when the attempt started on the database's clock (the claim's, or the enqueue's for a job
 *                       started in its enqueue), to measure from admitted_at on one clock; null when unknown
 */
public record ClaimedJob(long id, String tenantId, String queue, String type, String payloadJson, int attempt,
                         int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt,
                         OffsetDateTime admittedAt, double readyRank, Integer timeoutMs, int payloadVersion,
                         int snoozes, OffsetDateTime startedAt) {

    /** Without the database's start time (see {@code startedAt}). */
    public ClaimedJob(long id, String tenantId, String queue, String type, String payloadJson, int attempt,
                      int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt,
                      OffsetDateTime admittedAt, double readyRank, Integer timeoutMs, int payloadVersion, int snoozes) {
        this(id, tenantId, queue, type, payloadJson, attempt, maxAttempts, jobKey, orderingKey, createdAt, admittedAt,
                readyRank, timeoutMs, payloadVersion, snoozes, null);
    }

    /** A version-1 payload, never snoozed. */
    public ClaimedJob(long id, String tenantId, String queue, String type, String payloadJson, int attempt,
                      int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt,
                      OffsetDateTime admittedAt, double readyRank, Integer timeoutMs) {
        this(id, tenantId, queue, type, payloadJson, attempt, maxAttempts, jobKey, orderingKey, createdAt, admittedAt,
                readyRank, timeoutMs, 1, 0);
    }
}
