package dev.fairq.worker;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;

/** Hooks for metrics; called on the worker's own threads, so implementations must be quick and thread safe. */
public interface WorkerObserver {
    WorkerObserver NONE = new WorkerObserver() {};

    default void claimed(int jobs, long nanos) {}

    default void started(ClaimedJob job) {}

    default void finished(ClaimedJob job, JobOutcome outcome, long nanos) {}

    default void leaseLost(ClaimedJob job) {}
}
