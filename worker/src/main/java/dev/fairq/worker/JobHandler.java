package dev.fairq.worker;

/**
 * Runs one attempt of a job. Return normally for success. Throw {@link PermanentJobException} for an error
 * that no retry can fix (dead-letters at once), {@link RetryableJobException} to ask for a specific delay,
 * anything else for a transient error (retried with backoff until max_attempts).
 *
 * <p>Delivery is at least once: an attempt whose worker died or stalled past its lease runs again. Make
 * side effects idempotent with {@link JobContext#idempotencyKey()}.
 */
@FunctionalInterface
public interface JobHandler {
    void handle(JobContext job) throws Exception;
}
