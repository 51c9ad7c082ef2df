package dev.fairq.worker;

/**
 * Why the worker stopped an attempt before its handler returned ({@link JobContext#cancelReason()}). The
 * worker interrupts the handler's thread; a handler that checks {@link JobContext#isCancelled()} in its own
 * loops stops sooner. What the attempt then records:
 */
public enum CancelReason {
    /**
     * Someone cancelled the job (API {@code POST /v1/jobs/{id}/cancel}, {@code JobStore.cancel}): the job
     * ends {@code cancelled}, never retried. A handler that returns normally all the same succeeded (its
     * effect happened) and is recorded as such.
     */
    REQUESTED,
    /**
     * The worker no longer holds the job's lease (it was paused past the lease, and the reaper gave the job
     * to another attempt): nothing is recorded, the attempt that owns the job now decides.
     */
    LEASE_LOST,
    /** The attempt ran past its time limit: it fails as a transient error, "timed out after N ms". */
    TIMED_OUT,
    /**
     * The worker is stopping and its grace period ran out: the job is left to its lease and runs again
     * elsewhere once the lease lapses.
     */
    SHUTDOWN
}
