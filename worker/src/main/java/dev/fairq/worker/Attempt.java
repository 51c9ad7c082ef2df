package dev.fairq.worker;

import dev.fairq.schema.ClaimedJob;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One claimed attempt as the worker tracks it: how long its lease surely lasts on this JVM's monotonic clock,
 * whether it has been asked to stop and why, the thread running it, and whether its end has been settled
 * (outcome queued or dropped, thread slot given back) exactly once: by the handler returning, by the stop
 * before it started, or by the watchdog abandoning a handler that ignored the interruption.
 */
final class Attempt {
    final ClaimedJob job;
    /** The task that runs it, to take it out of the queue when it must not start. */
    Runnable task;

    /**
     * The lease surely holds until this instant of the queue clock's nanoTime: the claim or the last successful
     * heartbeat was sent at t, and the database set the lease to its own now + lease, which is later than t.
     */
    private volatile long leaseUntilNanos;
    private final AtomicReference<CancelReason> cancel = new AtomicReference<>();
    private volatile long cancelledAtNanos;
    /** The handler's thread while it may be interrupted for this attempt; guarded by this. */
    private Thread thread;
    private boolean begun;

    /** When the claim's (or the enqueue's) answer reached this process, on the queue clock's nanoTime. */
    volatile long receivedNanos;
    volatile long startedNanos;
    volatile long deadlineNanos = Long.MAX_VALUE;
    volatile Duration timeout;
    /** Set once: whoever sets it records (or drops) the outcome and gives the thread slot back. */
    final AtomicBoolean settled = new AtomicBoolean();
    /** The watchdog gave up on the handler; true when a new pool thread took its place. */
    volatile boolean abandoned;
    volatile boolean replaced;

    Attempt(ClaimedJob job, long leaseUntilNanos) {
        this.job = job;
        this.leaseUntilNanos = leaseUntilNanos;
    }

    long leaseLeftNanos(long now) {
        return leaseUntilNanos - now;
    }

    void leaseRenewed(long untilNanos) {
        if (untilNanos > leaseUntilNanos) leaseUntilNanos = untilNanos;
    }

    /** The first reason wins; interrupts the handler if it runs. False when the attempt was already stopped. */
    boolean cancel(CancelReason reason, long nowNanos) {
        if (!cancel.compareAndSet(null, reason)) return false;
        cancelledAtNanos = nowNanos;
        synchronized (this) {
            if (thread != null) thread.interrupt();
        }
        return true;
    }

    CancelReason cancelReason() {
        return cancel.get();
    }

    long cancelledAtNanos() {
        return cancelledAtNanos;
    }

    /** Binds the running thread (for interrupts); false when the attempt was stopped before it could start. */
    synchronized boolean begin(Thread t) {
        if (cancel.get() != null) return false;
        thread = t;
        begun = true;
        return true;
    }

    synchronized boolean begun() {
        return begun;
    }

    /**
     * The handler returned: no interrupt for this attempt can reach the thread after this, and one that came
     * in between the handler's return and here is cleared, so the pool thread's next job starts clean.
     */
    void end() {
        synchronized (this) {
            thread = null;
        }
        Thread.interrupted();
    }

    /** Which thread runs it (for messages); null when none. */
    synchronized String threadName() {
        return thread == null ? null : thread.getName();
    }
}
