package dev.fairq.schema;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
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

    private final Runnable send;
    private final ExecutorService thread;
    private final AtomicInteger state = new AtomicInteger(IDLE);

    /** {@code send}: sends one wake-up (a statement on a connection of its own); a failure is logged at DEBUG. */
    public Waker(String threadName, Runnable send) {
        this.send = send;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
    }

    /** Asks for a wake-up; returns at once. */
    public void wake() {
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

    private void sendAll() {
        while (true) {
            try {
                send.run();
            } catch (RuntimeException e) {
                log.debug("wake-up not sent", e);
            }
            if (state.compareAndSet(SENDING, IDLE)) return;
            state.set(SENDING); // it was AGAIN: a wake asked for during that send, so one more
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
