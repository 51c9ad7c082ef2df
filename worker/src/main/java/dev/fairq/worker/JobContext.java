package dev.fairq.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Json;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SideEffects;
import org.jooq.DSLContext;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.concurrent.Callable;
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
    private final int payloadVersion;
    private final int snoozes;
    /** The idempotency store {@link #once} writes to; null outside a worker unless a test gives one. */
    private final Effects effects;

    private record Effects(SideEffects store, DSLContext db) {}

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
        this(jobId, tenantId, queue, type, payloadJson, attempt, maxAttempts, jobKey, orderingKey, createdAt, workerId,
                timeout, cancellation, 1, 0, null);
    }

    private JobContext(long jobId, String tenantId, String queue, String type, String payloadJson, int attempt,
                       int maxAttempts, String jobKey, String orderingKey, OffsetDateTime createdAt, String workerId,
                       Duration timeout, Supplier<CancelReason> cancellation, int payloadVersion, int snoozes,
                       Effects effects) {
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
        this.payloadVersion = payloadVersion;
        this.snoozes = snoozes;
        this.effects = effects;
    }

    /**
     * The context a worker hands its handler: the payload as the handler reads it ({@code payloadJson} at
     * {@code payloadVersion}, after any upcasting) and the store {@link #once} writes to.
     */
    static JobContext of(ClaimedJob job, String workerId, Duration timeout, Supplier<CancelReason> cancellation,
                         int payloadVersion, String payloadJson, JobStore store, DSLContext db) {
        return new JobContext(job.id(), job.tenantId(), job.queue(), job.type(), payloadJson, job.attempt(),
                job.maxAttempts(), job.jobKey(), job.orderingKey(), job.createdAt(), workerId, timeout, cancellation,
                payloadVersion, job.snoozes(), new Effects(store.sideEffects(), db));
    }

    /** This context with {@link #once} writing to the given store (tests of a handler outside a worker). */
    public JobContext withSideEffects(JobStore store, DSLContext db) {
        return new JobContext(jobId, tenantId, queue, type, payloadJson, attempt, maxAttempts, jobKey, orderingKey,
                createdAt, workerId, timeout, cancellation, payloadVersion, snoozes, new Effects(store.sideEffects(), db));
    }

    /** This context with another payload version (tests of a handler outside a worker). */
    public JobContext withPayload(int version, String json) {
        return new JobContext(jobId, tenantId, queue, type, json, attempt, maxAttempts, jobKey, orderingKey,
                createdAt, workerId, timeout, cancellation, version, snoozes, effects);
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
     * The version of {@link #payloadJson()} as the handler gets it: the job's {@code payload_version}, or the
     * version its type's upcasters brought it to (see {@link PayloadVersions}).
     */
    public int payloadVersion() { return payloadVersion; }
    /** How many times this job was snoozed before this attempt ({@link SnoozeJobException}). */
    public int snoozes() { return snoozes; }

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

    /** A side effect, run at most once per key (see {@link #once}). */
    @FunctionalInterface
    public interface SideEffect {
        /** Performs the effect; what it returns is stored and answered to every later attempt (may be null). */
        String run() throws Exception;
    }

    /**
     * Runs {@code effect} once per {@code key} of this tenant, across attempts, workers and crashes (seed 003,
     * approach A): the first attempt takes the key for {@code lease} (a row {@code pending} under a lock token),
     * runs the effect and stores its result ({@code done}); every later call with the key, in this job or
     * another of the tenant's, gets the stored result without running the effect.
     *
     * <ul>
     *   <li>The effect throws: the key is given up (the next attempt runs it afresh) and the exception goes on.</li>
     *   <li>Another attempt holds the key and its lock has not run out: {@link SnoozeJobException} until the
     *       lock runs out at most (the job waits without using an attempt, then finds the result).</li>
     *   <li>The holder died (its lock ran out before it wrote done): the key is taken over under a new token
     *       and the effect runs again; that is the window of approach A, so make {@code lease} longer than
     *       the effect can take.</li>
     *   <li>This attempt outlived its lock and another took the key over: writing done fails with
     *       {@link SideEffects.LostKeyException} (a transient failure; the retry finds the other's result).</li>
     * </ul>
     * Keys are 1-255 characters, per tenant; a key names the effect ({@code "charge:order-42"}), so include
     * the job's own key or id when the effect belongs to one job ({@link #idempotencyKey()}).
     */
    public String once(String key, Duration lease, SideEffect effect) throws Exception {
        if (effects == null) {
            throw new IllegalStateException("no idempotency store: a worker's context has one; elsewhere use withSideEffects");
        }
        SideEffects.Claim claim = effects.store().begin(effects.db(), tenantId, key, lease, jobId);
        if (claim instanceof SideEffects.Claim.Done done) return done.result();
        if (claim instanceof SideEffects.Claim.Busy busy) {
            // the holder finishes or its lock runs out by then; 100 ms at least so a lock just ending is not polled hot
            Duration wait = busy.lockedFor().compareTo(MIN_BUSY_WAIT) < 0 ? MIN_BUSY_WAIT : busy.lockedFor();
            throw new SnoozeJobException("side effect '" + key + "' is being run by another attempt; waiting "
                    + wait.toMillis() + " ms for its result", wait);
        }
        java.util.UUID token = ((SideEffects.Claim.Acquired) claim).token();
        String result;
        try {
            result = effect.run();
        } catch (Throwable e) {
            try {
                effects.store().release(effects.db(), tenantId, key, token);
            } catch (RuntimeException releaseFailed) {
                e.addSuppressed(releaseFailed); // the lock then runs out by itself and the key is taken over
            }
            throw e;
        }
        result = dev.fairq.schema.Completion.storableText(result); // answered as stored, so every attempt sees the same
        effects.store().complete(effects.db(), tenantId, key, token, result);
        return result;
    }

    /**
     * {@link #once} for a result of any JSON-mapped type (stored as JSON). A result that cannot be written as JSON
     * is stored as null (the effect ran: it must not run again) and fails the job permanently, naming the key.
     */
    public <T> T once(String key, Duration lease, Class<T> type, Callable<T> effect) throws Exception {
        com.fasterxml.jackson.core.JsonProcessingException[] unwritable = {null};
        String json = once(key, lease, () -> {
            T result = effect.call();
            try {
                return Json.MAPPER.writeValueAsString(result);
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                // thrown from here it gave the key up after the effect had run, and every retry ran it again
                unwritable[0] = e;
                return null;
            }
        });
        if (unwritable[0] != null) {
            throw new PermanentJobException("side effect '" + key + "' ran, but its result (" + type.getName()
                    + ") cannot be written as JSON; null is stored for the key and the effect will not run again: "
                    + unwritable[0].getOriginalMessage(), unwritable[0]);
        }
        return json == null ? null : Json.MAPPER.readValue(json, type);
    }

    private static final Duration MIN_BUSY_WAIT = Duration.ofMillis(100);

    public JsonNode payload() {
        try {
            return Json.EXACT.readTree(payloadJson); // numbers as stored: 0.12345678901234567890123, not a double
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
