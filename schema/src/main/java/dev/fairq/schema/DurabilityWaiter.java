package dev.fairq.schema;

import org.jooq.exception.DataAccessException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The wait for the WAL flush after unflushed commits ({@link Enqueue#INSERT_JOBS_UNFLUSHED}), shared: one durable
 * commit on a connection of its own covers every commit that returned before it was sent, so a caller gives its
 * pooled connection back at once and waits on a future instead.
 *
 * <p>Why: {@link JobStore#awaitDurable} on the caller's own connection held that connection for the whole wait. A
 * fresh WAL segment's zero-fill stalls every flush for 100-400 ms on PostgreSQL 15 (bench/RESULTS.md, stop 28), and
 * in such a stall the API's 20 connections all sat in the wait, so new submits waited for a connection before their
 * insert: under the tenants bench's flood the trickle's slowest 1% spent 57.8 ms from the send to their insert, in
 * clusters about 6 s apart (a segment at 2.6 MB of WAL a second). And each submit paid a durable commit of its own.
 *
 * <p>Why it is as safe as the wait on the caller's connection: the caller's commit returned before it asked
 * ({@link #afterCommit}), so its commit record lies before this connection's next commit record in the one WAL,
 * and a flush up to that covers it. A crash and restart of the server (or a failover) between the two ends every
 * session that was open, this connection among them, so the wait fails rather than vouch for a commit the server
 * lost. That holds only for a connection opened before the caller's commit: when none is up, {@link #afterCommit}
 * answers null and the caller waits on its own connection as before. A connection opened later serves only later
 * callers.
 */
public final class DurabilityWaiter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DurabilityWaiter.class);
    /** The wait before opening a connection again after a failure; callers wait on their own meanwhile. */
    static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    /** Opens the waiter's connection (a dedicated one, outside any pool: see the class comment). */
    public interface Connections {
        Connection open() throws SQLException;
    }

    private final Connections connections;
    private final Thread thread;
    private final Object lock = new Object();
    /** Callers whose commit returned, for the next durable commit; guarded by lock. */
    private List<CompletableFuture<Void>> waiting = new ArrayList<>();
    /** The connection callers may be served on: up, and opened before they asked; guarded by lock. */
    private Connection current;
    private boolean closed; // guarded by lock

    public DurabilityWaiter(Connections connections, String threadName) {
        this.connections = connections;
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
    }

    public DurabilityWaiter start() {
        thread.start();
        return this;
    }

    /**
     * For a caller whose unflushed commit has returned: completes once that commit is durable, exceptionally if that
     * cannot be known (the connection failed: the commit may be lost). Null when no connection is up, or this waiter
     * is closed: then the caller waits on its own connection ({@link JobStore#awaitDurable}).
     */
    public CompletableFuture<Void> afterCommit() {
        synchronized (lock) {
            if (closed || current == null) return null;
            CompletableFuture<Void> f = new CompletableFuture<>();
            waiting.add(f);
            lock.notifyAll();
            return f;
        }
    }

    /** {@link #afterCommit}'s future, waited for: a failure is the DataAccessException the caller's own wait would throw. */
    public static void await(CompletableFuture<Void> f) {
        try {
            f.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof RuntimeException r) throw r;
            throw new DataAccessException("waiting for the WAL flush failed: " + cause.getMessage(), cause);
        }
    }

    /** Whether callers are served here now (tests). */
    public boolean up() {
        synchronized (lock) {
            return current != null;
        }
    }

    private void run() {
        while (!isClosed()) {
            Connection c = null;
            try {
                c = connections.open();
                if (!c.getAutoCommit()) c.setAutoCommit(true);
                synchronized (lock) {
                    if (closed) return;
                    current = c;
                }
                serve(c);
            } catch (SQLException | RuntimeException e) {
                if (!isClosed()) log.warn("the shared wait for the WAL flush failed; submits wait on their own connections until it is back", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } finally {
                List<CompletableFuture<Void>> orphans;
                synchronized (lock) {
                    current = null;
                    orphans = waiting;
                    waiting = new ArrayList<>();
                }
                // their commits came before the failure, on a server this connection can no longer vouch for
                DataAccessException lost = new DataAccessException("the connection waiting for the WAL flush failed; the commit may not be durable");
                for (CompletableFuture<Void> f : orphans) f.completeExceptionally(lost);
                if (c != null) {
                    try {
                        c.close();
                    } catch (SQLException e) {
                        log.debug("closing the flush waiter's connection", e);
                    }
                }
            }
            if (!isClosed()) pause();
        }
    }

    /**
     * Durable commits, each for the callers that asked before it was sent (one commit for as many as came while the
     * last one was out), until the connection fails, or close once every caller has been served.
     */
    private void serve(Connection c) throws InterruptedException {
        org.jooq.DSLContext dsl = Database.dsl(c);
        while (true) {
            List<CompletableFuture<Void>> batch;
            synchronized (lock) {
                while (waiting.isEmpty() && !closed) lock.wait();
                if (waiting.isEmpty()) return; // closed, and every caller served (a stop answers what it accepted)
                batch = waiting;
                waiting = new ArrayList<>();
            }
            try {
                Enqueue.AWAIT_DURABLE.bind().run(dsl);
            } catch (RuntimeException e) {
                synchronized (lock) {
                    current = null; // down before anyone hears of the failure: no later caller is served here
                }
                for (CompletableFuture<Void> f : batch) f.completeExceptionally(e);
                throw e;
            }
            for (CompletableFuture<Void> f : batch) f.complete(null);
        }
    }

    private boolean isClosed() {
        synchronized (lock) {
            return closed;
        }
    }

    private void pause() {
        synchronized (lock) {
            long until = System.nanoTime() + RETRY_AFTER.toNanos();
            try {
                for (long left; !closed && (left = until - System.nanoTime()) > 0; ) lock.wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                closed = true;
            }
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
        }
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<CompletableFuture<Void>> left;
        synchronized (lock) {
            left = waiting;
            waiting = new ArrayList<>();
        }
        // asked after the last durable commit was sent (close came first): not known durable
        for (CompletableFuture<Void> f : left) f.completeExceptionally(new DataAccessException("the flush waiter closed"));
    }
}
