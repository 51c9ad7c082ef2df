package dev.fairq.client;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

import java.time.Instant;
import java.util.List;

/**
 * The API's answers as the client reads them (snake_case JSON, RFC 3339 times). Fields the server adds later
 * are ignored, so an older client keeps working; /openapi.json is the full contract.
 */
public final class Model {
    private Model() {}

    /**
     * A job. {@code status}: pending, ready, running, succeeded, dead or cancelled. {@code cancelRequestedAt} is
     * set once someone cancelled it while it ran (a cancel answered 202: the job is stopping).
     * {@code payloadVersion}: the version of the payload's shape (1 unless submitted otherwise); {@code snoozes}:
     * how often a handler put the job back for later without using an attempt.
     */
    public record Job(long id, String tenant, String queue, String type, JsonNode payload, int priority, String status,
                      int attempts, int maxAttempts, Instant runAt, String jobKey, String orderingKey, Instant createdAt,
                      Instant startedAt, Instant finishedAt, String lastError, Long timeoutMs,
                      Instant cancelRequestedAt, Integer payloadVersion, Integer snoozes, String concurrencyKey,
                      String fairnessKey) {}

    /** A page of jobs, newest first; {@code next} is null on the last page. */
    public record JobPage(List<Job> jobs, String next) {}

    /** A submitted job; {@code idempotentReplay} when an identical request with the same job_key made it earlier. */
    public record Submitted(Job job, boolean idempotentReplay) {}

    /** Why a job is not running: {@code reason} (e.g. rate_limited), a sentence, and the reason's figures. */
    public record Explanation(long jobId, String status, String reason, String message, JsonNode data) {}

    /** A tenant's limits, by their API names ({@code concurrencyLimits}: key -> most jobs of it at once). */
    public record Limits(int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued, boolean paused,
                         List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS, double apiRatePerSecond,
                         int apiBurst, java.util.Map<String, Integer> concurrencyLimits,
                         java.util.Map<String, Integer> keyWeights) {}

    /** GET /v1/stats: the caller's counts (the recent ones over five minutes) and limits. */
    public record Stats(String tenant, long pending, long ready, long running,
                        @JsonProperty("succeeded_last_5m") long succeededLast5m,
                        @JsonProperty("dead_last_5m") long deadLast5m, long deadTotal, Long oldestPendingAgeMs,
                        long blockedOrderingKeys, Limits limits) {}

    /** A tenant and every limit it has, in the API's order. */
    public record Tenant(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                         boolean paused, List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS,
                         double apiRatePerSecond, int apiBurst,
                         java.util.Map<String, Integer> concurrencyLimits, java.util.Map<String, Integer> keyWeights,
                         Instant createdAt, Instant updatedAt) {}

    /** An admin token as listed: never the token itself. */
    public record AdminToken(String id, String name, String createdBy, Instant createdAt, Instant revokedAt,
                             String revokedBy) {}

    /** A new admin token: {@code token} is shown in this answer only. */
    public record NewAdminToken(String id, String name, String token, String createdBy, Instant createdAt) {}

    record AdminTokens(List<AdminToken> tokens) {}

    /** A tenant's key as listed: never the key itself. */
    public record ApiKey(String keyId, String tenant, Instant createdAt, Instant revokedAt) {}

    /** A new key: {@code key} is shown in this answer only. */
    public record NewKey(String keyId, String key, String tenant, Instant createdAt) {}

    /** One field at fault in a 4xx answer, e.g. {@code jobs[3].type}. */
    public record FieldError(String field, String message) {
        @Override
        public String toString() {
            return field + ": " + message;
        }
    }

    record ErrorBody(String error, List<FieldError> errors) {}

    record Batch(List<Submitted> jobs) {}

    /** A page of tenants by id: {@code next} is the next page's after, null on the last. */
    public record Tenants(List<Tenant> tenants, String next) {}

    record Keys(List<ApiKey> keys) {}

    /**
     * A recurring schedule as stored, with its next five fires (UTC) and its last due fire. {@code job} is the
     * template each fire enqueues; {@code missedRuns} skip, run_once or run_all; {@code overlap} allow, skip or queue.
     */
    public record Schedule(String tenant, String name, String cron, String timeZone, JsonNode job, String missedRuns,
                           int backfillLimit, String overlap, boolean paused, Instant startAt, Instant endAt,
                           List<Instant> nextFires, Long nextJobId, Fire lastFire, long fired, long skipped,
                           Instant createdAt, Instant updatedAt) {}

    /**
     * A schedule's fire: {@code outcome} enqueued, skipped_overlap, queue_full or invalid; {@code jobStatus} null
     * once retention deleted the job.
     */
    public record Fire(Instant fireAt, String outcome, Long jobId, String jobStatus) {}

    /** A page of schedules by name ({@code next}: the next page's after, null on the last). */
    public record Schedules(List<Schedule> schedules, String next) {}
}
