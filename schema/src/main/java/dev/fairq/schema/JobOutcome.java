package dev.fairq.schema;

/** How one attempt ended, as the worker reports it to {@link JobStore#finish}. */
public sealed interface JobOutcome {
    long jobId();

    int attempt();

    /**
     * @param runMicros how long the handler ran, on the worker's clock (what shares by worker time learn from;
     *                  -1: not measured, the attempt's started_at to finished_at is used instead)
     */
    record Succeeded(long jobId, int attempt, long runMicros) implements JobOutcome {
        public Succeeded(long jobId, int attempt) {
            this(jobId, attempt, -1);
        }
    }

    /**
     * @param dead         true: dead-letter now (permanent error or attempts used up)
     * @param retryDelayMs when not dead: the job becomes pending again this long after now (database clock)
     */
    record Failed(long jobId, int attempt, boolean dead, long retryDelayMs, String error) implements JobOutcome {}

    /**
     * The attempt stopped because someone cancelled the job while it ran: the job ends 'cancelled', never
     * retried, and its ordering key goes to the next job.
     *
     * @param error what the attempt ended with (kept in last_error), or why it never started
     */
    record Cancelled(long jobId, int attempt, String error) implements JobOutcome {}

    /**
     * The handler snoozed the job: it waits {@code delayMs} (database clock) without using an attempt
     * (attempts goes back down by one, snoozes up by one), keeping its ordering key.
     *
     * @param reason kept in last_error, so that explain and people can tell a snooze from a failure
     */
    record Snoozed(long jobId, int attempt, long delayMs, String reason) implements JobOutcome {}
}
