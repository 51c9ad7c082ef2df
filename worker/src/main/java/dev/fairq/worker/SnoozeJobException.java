package dev.fairq.worker;

import java.time.Duration;

/**
 * "Not now": the job goes back to waiting for {@link #delay()} without using an attempt (River's snooze). Its
 * ordering key stays with it (a snoozed head keeps its key, so later jobs of the key keep waiting behind it).
 * Snoozes are counted per job ({@code snoozes}); past the worker's {@link WorkerConfig#maxSnoozes()} a snooze
 * fails the attempt instead (retried with backoff, dead when it was the last attempt), so a handler that
 * snoozes forever still ends.
 *
 * <p>Not a {@link RetryableJobException}: nothing failed, and code that retries on failures must not catch it.
 */
public class SnoozeJobException extends Exception {
    private final Duration delay;

    /** @param delay from now (the database clock), 0 to one year ({@link dev.fairq.schema.JobRequest#MAX_DELAY}) */
    public SnoozeJobException(Duration delay) {
        this("snoozed for " + (delay == null ? "?" : delay.toMillis()) + " ms", delay);
    }

    public SnoozeJobException(String message, Duration delay) {
        super(message);
        if (delay == null || delay.isNegative() || delay.compareTo(dev.fairq.schema.JobRequest.MAX_DELAY) > 0) {
            throw new IllegalArgumentException("a snooze is 0 to one year, not " + delay);
        }
        this.delay = delay;
    }

    public Duration delay() {
        return delay;
    }
}
