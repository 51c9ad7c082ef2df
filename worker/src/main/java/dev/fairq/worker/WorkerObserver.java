package dev.fairq.worker;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;

/** Hooks for metrics; called on the worker's own threads, so implementations must be quick and thread safe. */
public interface WorkerObserver {
    WorkerObserver NONE = new WorkerObserver() {};

    default void claimed(int jobs, long nanos) {}

    default void started(ClaimedJob job) {}

    /**
     * As {@link #started(ClaimedJob)}, with how long the job waited in this process between the claim's (or the
     * enqueue's) answer and its handler's first line, on this JVM's monotonic clock.
     */
    default void started(ClaimedJob job, long waitedNanos) {
        started(job);
    }

    /** An attempt's outcome, once it is recorded (an outcome the fence dropped is {@link #leaseLost} instead). */
    default void finished(ClaimedJob job, JobOutcome outcome, long nanos) {}

    default void leaseLost(ClaimedJob job) {}

    /**
     * This process's reaper took back a job whose lease expired (its worker died or stalled): {@code status} is what
     * it became, {@code pending} (to be retried), {@code dead} (that was its last attempt) or {@code cancelled}.
     */
    default void reaped(String tenantId, String status) {}

    /** A claimed job was handed back unstarted because its lease may have lapsed (the process was paused). */
    default void handedBack(ClaimedJob job) {}

    /** The worker asked a running attempt to stop (its handler's thread is interrupted). */
    default void stopped(ClaimedJob job, CancelReason reason) {}

    /** A handler ignored the interruption; its thread is abandoned (see {@link Worker#abandonedThreads()}). */
    default void abandoned(ClaimedJob job) {}
}
