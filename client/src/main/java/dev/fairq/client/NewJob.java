package dev.fairq.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;

import java.time.Instant;

/**
 * A job to submit. {@code NewJob.of("send-email", payload).jobKey("order-42")}: the optional fields left null take
 * the server's defaults; {@code type} and {@code payload} are required (a null payload is a 422 naming it: send
 * {@code {}} for none). With a {@code job_key} a resubmission is safe (the server answers the first job), so
 * only such jobs are resubmitted after a lost connection.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record NewJob(String type, String queue, JsonNode payload, Integer priority, Instant runAt, Long delayMs,
                     String jobKey, String orderingKey, Integer maxAttempts, Long timeoutMs, Integer payloadVersion,
                     String concurrencyKey, String fairnessKey) {

    public static NewJob of(String type, JsonNode payload) {
        return new NewJob(type, null, payload, null, null, null, null, null, null, null, null, null, null);
    }

    public NewJob queue(String q) {
        return new NewJob(type, q, payload, priority, runAt, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob priority(Integer p) {
        return new NewJob(type, queue, payload, p, runAt, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob runAt(Instant t) {
        return new NewJob(type, queue, payload, priority, t, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob delayMs(Long ms) {
        return new NewJob(type, queue, payload, priority, runAt, ms, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob jobKey(String k) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, k, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob orderingKey(String k) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, k, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    public NewJob maxAttempts(Integer n) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, orderingKey, n, timeoutMs,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    /** The version of the payload's shape (1 to 1,000,000); null: 1. The job's handler must read it or upcast it. */
    public NewJob payloadVersion(Integer v) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                v, concurrencyKey, fairnessKey);
    }

    /** The time limit of each attempt (1 ms to 24 h); null: the job type's. */
    public NewJob timeoutMs(Long ms) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, orderingKey, maxAttempts, ms,
                payloadVersion, concurrencyKey, fairnessKey);
    }

    /** A shared resource the job uses: the tenant limit concurrency_limits caps its jobs running at once. */
    public NewJob concurrencyKey(String k) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, k, fairnessKey);
    }

    /** The tenant's own customer the job is for: the tenant's share is split among its keys (key_weights). */
    public NewJob fairnessKey(String k) {
        return new NewJob(type, queue, payload, priority, runAt, delayMs, jobKey, orderingKey, maxAttempts, timeoutMs,
                payloadVersion, concurrencyKey, k);
    }
}
