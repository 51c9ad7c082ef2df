package dev.fairq.worker;

import java.time.Duration;

/** A transient error with a delay the handler knows better than the backoff (e.g. a Retry-After header). */
public class RetryableJobException extends Exception {
    private final Duration retryAfter;

    public RetryableJobException(String message, Duration retryAfter) {
        super(message);
        this.retryAfter = retryAfter;
    }

    /** null: use the type's backoff. Taken within 0 to one year ({@link dev.fairq.schema.JobRequest#MAX_DELAY}), as a snooze. */
    public Duration retryAfter() {
        return retryAfter;
    }
}
