package dev.fairq.schema;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Sends a wake-up (a NOTIFY) on a thread of its own, so that the thread asking for it never waits for it.
 *
 * <p>Why: PostgreSQL takes one lock on its notification queue when a notifying transaction commits and holds
 * it to the end of that commit, WAL flush included, so every notifying transaction waits for the commits of all
 * the others before it. Under a 5,000-row enqueue (a synchronous commit flushing megabytes) pg_stat_activity
 * showed the scheduler's admission, the worker's "buffer ran dry" wake and the API's enqueues queued on that
 * lock (wait event Lock:object, up to 8 at once) behind one commit in IO:WALSync, and no job started meanwhile
 * (tenants bench, trickle phase, PG15). A wake sent from here still waits its turn, but nothing else does.
 *
 * <p>Wakes asked for while one is being sent are folded into one more, sent after it: a wake asked for after
 * some change committed is always followed by a NOTIFY sent after that request, so the change is never missed.
 */
public final class Waker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Waker.class);
    private static final int IDLE = 0, SENDING = 1, AGAIN = 2;

    private final Runnable local;
    private final Runnable send;
    private final ExecutorService thread;
    private final AtomicInteger state = new AtomicInteger(IDLE);

    /** {@code send}: sends one wake-up (a statement on a connection of its own); a failure is logged. */
    public Waker(String threadName, Runnable send) {
        this(threadName, () -> {}, send);
    }

    /**
     * {@code local} runs on the asking thread at every wake, before the NOTIFY: it wakes the consumers in this
     * process directly (a worker beside the scheduler or the API in {@code fairq.jar server}), so they do not wait for
     * a NOTIFY queued on the lock; it must be quick and must not throw.
     */
    public Waker(String threadName, Runnable local, Runnable send) {
        this.local = local;
        this.send = send;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
    }

    /** Asks for a wake-up; returns at once. */
    public void wake() {
        local.run();
        while (true) {
            int s = state.get();
            if (s == AGAIN) return;
            if (s == SENDING) {
                if (state.compareAndSet(SENDING, AGAIN)) return;
                continue;
            }
            if (state.compareAndSet(IDLE, SENDING)) break;
        }
        try {
            thread.execute(this::sendAll);
        } catch (RejectedExecutionException e) {
            state.set(IDLE); // closed
        }
    }

    /**
     * Sends the wake-up on the calling thread, unless one is being sent (then it is folded into that one, as
     * {@link #wake()} does); wakes asked for during this send go out from the waker's thread. For a caller whose next
     * step can wait a round trip: a hand-off to the waker's thread cost 1-2 ms of enqueue-to-start at the median on
     * a busy 2-core machine (the trickle alone, tenants bench: 3.4-4.1 ms against 2.0-2.6 in alternating pairs; 1.6
     * sent from here), the wait for that thread to be scheduled.
     */
    public void wakeNow() {
        wakeNow(send);
    }

    /**
     * As {@link #wakeNow()}, with this wake-up sent by {@code sendHere}: on a connection the caller already holds. A
     * caller holding a pool's connection must not take a second one for it: with FAIRQ_API_POOL_SIZE=1 the API's
     * submit waited 10 s for its own connection and answered 500 (ApiPoolSizeTest), and with n connections n such
     * submits at once would wait for each other the same way. Wakes folded into a later one still go out from the
     * waker's thread, through {@code send}, holding nothing.
     */
    public void wakeNow(Runnable sendHere) {
        if (!state.compareAndSet(IDLE, SENDING)) {
            wake();
            return;
        }
        local.run();
        try {
            sendHere.run();
        } catch (RuntimeException e) {
            failed(e);
        }
        if (state.compareAndSet(SENDING, IDLE)) return;
        state.set(SENDING); // AGAIN: one more, from the waker's thread
        try {
            thread.execute(this::sendAll);
        } catch (RejectedExecutionException e) {
            state.set(IDLE); // closed
        }
    }

    private void failed(RuntimeException e) {
        // the change it announces is committed: idle workers find it at their next poll
        long now = System.nanoTime();
        if (now - lastWarned > WARN_EVERY_NANOS) {
            lastWarned = now;
            log.warn("a wake-up was not sent (idle workers find its jobs at their next poll); "
                    + "further failures within a minute are logged at DEBUG", e);
        } else {
            log.debug("wake-up not sent", e);
        }
    }

    private void sendAll() {
        try {
            while (true) {
                try {
                    send.run();
                } catch (RuntimeException e) {
                    failed(e);
                }
                if (state.compareAndSet(SENDING, IDLE)) return;
                state.set(SENDING); // it was AGAIN: a wake asked for during that send, so one more
            }
        } catch (Error e) {
            state.set(IDLE); // the next wake starts afresh on a new thread
            throw e;
        }
    }

    private static final long WARN_EVERY_NANOS = 60_000_000_000L;
    private volatile long lastWarned = System.nanoTime() - WARN_EVERY_NANOS - 1;

    /** Sends what was asked for already (waiting up to a second for it), then stops. */
    @Override
    public void close() {
        thread.shutdown();
        try {
            if (!thread.awaitTermination(1, TimeUnit.SECONDS)) thread.shutdownNow();
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
