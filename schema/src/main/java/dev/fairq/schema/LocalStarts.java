package dev.fairq.schema;

/**
 * A worker in this process that can start a job in its own enqueue (issue 16: admit and claim in one step for
 * idle capacity). A single-job enqueue that a tenant grant admits (no ordering, concurrency or fairness key, due
 * now) and that finds a free thread here (or, every thread busy, one freeing up within about a claim's round trip:
 * the worker decides) is inserted running under this worker's lease instead of ready, and starts once its row has
 * committed and a thread is free (ahead of prefetched jobs ranked behind it), without the notification to the workers and the claim round trip that a
 * ready job waits for (1.3 of the latency benchmark's 3.3 ms client p50 at stop 24).
 *
 * <p>The grant is the scheduler's decision, taken in advance, that the tenant may start one job now: its
 * weighted share, max_running (a grant holds one place) and its rate are charged as for any grant. The lease is
 * written with the row, so a worker that dies before or after the commit leaves a running job whose lease the
 * reaper takes back, as for any claim.
 */
public interface LocalStarts {
    /** A thread for a job of this queue and type, held until the slot is used or given back; null when none soon. */
    Slot reserve(String queue, String type);

    /**
     * The row of a job inserted running through a slot has committed: start it. From the enqueuer when it owns
     * the commit (the API, after it), else from the worker's listener ('s:' + the job id on fairq_ready, sent by
     * the commit). An id not registered yet is remembered for a moment; others are ignored (a lapsed slot's).
     */
    void committed(long jobId);

    /** One reserved thread. */
    interface Slot {
        String workerId();

        long leaseMillis();

        /**
         * The statement inserted the job running under this slot: it starts when {@link #committed} names it.
         * {@code transaction}: the enqueuing transaction's id (pg_current_xact_id, as text), by which the worker
         * learns that it rolled back (nobody names that) and forgets the job.
         */
        void claimed(ClaimedJob job, String transaction);

        /** The enqueue did not use the slot (no grant, a job_key replay, a failed statement). */
        void release();
    }
}
