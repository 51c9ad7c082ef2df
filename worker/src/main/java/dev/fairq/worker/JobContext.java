package dev.fairq.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Json;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.function.Supplier;

/**
 * What a handler gets: the payload, which attempt this is, a key that is the same on every attempt, the
 * attempt's time limit, and whether the worker has asked the attempt to stop ({@link #isCancelled()}).
 *
 * <p>The worker stops an attempt by interrupting the handler's thread (blocking calls throw
 * {@link InterruptedException}); a handler that loops or blocks in calls that ignore interruption should
 * call {@link #throwIfCancelled()} between steps, and must not swallow the interruption. A handler that
 * ignores both is abandoned (its thread is left to finish on its own, and replaced) a few seconds later.
 */
public final class JobContext {
    private static final Supplier<CancelReason> NEVER = () -> null;

    private final long jobId;
    private final String tenantId;
    private final String queue;
    private final String type;
    private final String payloadJson;
    private final int attempt;
    private final int maxAttempts;
    private final String jobKey;
    private final String orderingKey;
    private final OffsetDateTime createdAt;
    private final String workerId;
    private final Duration timeout;
    private final Supplier<CancelReason> cancellation;

    /** A context outside any worker (tests of a handler): never cancelled, no time limit. */
    public JobContext(long jobId, String tenantId, String queue, String type, String payloadJson, int attempt,
                      int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt, String workerId) {
        this(jobId, tenantId, queue, type, payloadJson, attempt, maxAttempts, jobKey, orderingKey, createdAt, workerId,
                null, NEVER);
    }

    /**
     * A context whose cancellation a test drives: {@code cancellation} answers the reason once the attempt
     * should stop, null before.
     */
    public JobContext(long jobId, String tenantId, String queue, String type, String payloadJson, int attempt,
                      int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt, String workerId,
                      Duration timeout, Supplier<CancelReason> cancellation) {
        this.jobId = jobId;
        this.tenantId = tenantId;
        this.queue = queue;
        this.type = type;
        this.payloadJson = payloadJson;
        this.attempt = attempt;
        this.maxAttempts = maxAttempts;
        this.jobKey = jobKey;
        this.orderingKey = orderingKey;
        this.createdAt = createdAt;
        this.workerId = workerId;
        this.timeout = timeout;
        this.cancellation = cancellation;
    }

    static JobContext of(ClaimedJob job, String workerId, Duration timeout, Supplier<CancelReason> cancellation) {
        return new JobContext(job.id(), job.tenantId(), job.queue(), job.type(), job.payloadJson(), job.attempt(),
                job.maxAttempts(), job.jobKey(), job.orderingKey(), job.createdAt(), workerId, timeout, cancellation);
    }

    public long jobId() { return jobId; }
    public String tenantId() { return tenantId; }
    public String queue() { return queue; }
    public String type() { return type; }
    public String payloadJson() { return payloadJson; }
    /** 1 for the first attempt. */
    public int attempt() { return attempt; }
    public int maxAttempts() { return maxAttempts; }
    public String jobKey() { return jobKey; }
    public String orderingKey() { return orderingKey; }
    public OffsetDateTime createdAt() { return createdAt; }
    public String workerId() { return workerId; }

    /**
     * This attempt's time limit (the job's {@code timeout_ms}, else its type's default, else the worker's);
     * the worker interrupts the handler when it runs out. Null outside a worker.
     */
    public Duration timeout() { return timeout; }

    /** True once the worker has asked this attempt to stop (see {@link CancelReason}). */
    public boolean isCancelled() {
        return cancellation.get() != null;
    }

    /** Why the worker asked this attempt to stop; empty while it may run on. */
    public Optional<CancelReason> cancelReason() {
        return Optional.ofNullable(cancellation.get());
    }

    /** Throws {@link CancellationException} once the worker has asked this attempt to stop. */
    public void throwIfCancelled() {
        CancelReason reason = cancellation.get();
        if (reason != null) throw new CancellationException("job " + jobId + " attempt " + attempt + " stopped: " + reason);
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

    @Override
    public String toString() {
        return "JobContext[job " + jobId + " of " + tenantId + ", type " + type + ", attempt " + attempt + "/" + maxAttempts + "]";
    }
}
