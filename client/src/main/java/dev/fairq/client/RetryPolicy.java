package dev.fairq.client;

import java.time.Duration;

/**
 * Opt-in retries. A 429 (queue full: nothing was written) is retried after its Retry-After, whatever the
 * request. A lost connection or a 502/503/504 (the request may or may not have been carried out) is retried
 * only when repeating it is safe: reads, PUT and DELETE, and submissions whose every job has a job_key (the
 * server answers a repeat with the first job). {@code maxAttempts} counts the first try.
 *
 * <p>No wait is longer than {@code maxWait}: the doubling backoff stops there (it had no bound, so the 20th try of
 * {@code attempts(20)} came three days after the 19th), and a Retry-After longer than it is not slept through: the
 * error is thrown at once, with its {@code retryAfter()}, for the caller to schedule.
 *
 * @param backoff the wait before retrying a lost connection or a 5xx without Retry-After (doubled each time)
 * @param sleeper how to wait (tests record the waits instead of sleeping)
 * @param maxWait the longest wait between two tries
 */
public record RetryPolicy(int maxAttempts, Duration backoff, Sleeper sleeper, Duration maxWait) {
    /** The default {@code maxWait}: a caller blocked longer than this on one call is better told and left to decide. */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofSeconds(30);
    /** One try: every error is the caller's to handle. The default. */
    public static final RetryPolicy NONE = new RetryPolicy(1, Duration.ZERO, Sleeper.THREAD);

    public RetryPolicy {
        if (maxAttempts < 1) throw new IllegalArgumentException("maxAttempts must be at least 1");
        // refused here, not at the first retry (Thread.sleep's "timeout value is negative", in the middle of a call)
        if (backoff == null || backoff.isNegative()) throw new IllegalArgumentException("backoff must be 0 or more");
        java.util.Objects.requireNonNull(sleeper, "sleeper");
        if (maxWait == null || maxWait.isNegative()) throw new IllegalArgumentException("maxWait must be 0 or more");
    }

    /** With the default {@code maxWait}, {@link #DEFAULT_MAX_WAIT}. */
    public RetryPolicy(int maxAttempts, Duration backoff, Sleeper sleeper) {
        this(maxAttempts, backoff, sleeper, DEFAULT_MAX_WAIT);
    }

    /** Up to {@code maxAttempts} tries, 500 ms before the first retry of a lost connection, then doubling. */
    public static RetryPolicy attempts(int maxAttempts) {
        return new RetryPolicy(maxAttempts, Duration.ofMillis(500), Sleeper.THREAD);
    }

    public RetryPolicy withSleeper(Sleeper s) {
        return new RetryPolicy(maxAttempts, backoff, s, maxWait);
    }

    public RetryPolicy withMaxWait(Duration d) {
        return new RetryPolicy(maxAttempts, backoff, sleeper, d);
    }

    /** Waits between tries. */
    @FunctionalInterface
    public interface Sleeper {
        Sleeper THREAD = d -> Thread.sleep(d.toMillis());

        void sleep(Duration d) throws InterruptedException;
    }
}
