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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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
 * <p>Use: {@link #ticket} before the caller's transaction begins, {@link #afterCommit} once its commit returned
 * (null: wait on your own connection, as before), then {@link #await}.
 *
 * <p>Why it is safe: the caller's commit returned before it asked, so its commit record lies before this
 * connection's next commit record in the one WAL, and a flush up to that (on synchronous standbys too, where the
 * server has them) covers it. A crash and restart of the server between the two ends every session that was open,
 * this connection among them, so the wait fails rather than vouch for a commit the server lost. That holds only for
 * a connection that was up before the caller's transaction began: the ticket names it, and a caller whose ticket
 * names another (or none) is not served here. Not covered: a split brain, where the caller's pooled connection still
 * reaches an old primary while this one reaches the new one (the old per-connection wait hung there under
 * synchronous replication; this one answers). A deployment whose failover can leave two primaries writing at once
 * should run with FAIRQ_SUBMIT_START=flush.
 *
 * <p>Bounds: a durable commit out for longer than {@link #stuckAfter} (a synchronous standby gone, a connection
 * silently dropped) stops new callers from being served here (they wait on their own connections, as before), and a
 * caller waits at most {@link #AWAIT_AT_MOST} ({@link #await}: then a failure, never a success). An idle connection is
 * proven alive every {@link #CHECK_EVERY}, so one a restart or an idle timeout dropped is found before a caller
 * relies on it.
 */
public final class DurabilityWaiter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DurabilityWaiter.class);
    /** The wait before opening a connection again after a failure; callers wait on their own meanwhile. */
    static final Duration RETRY_AFTER = Duration.ofSeconds(1);
    /** How often an idle connection is proven alive, and the check's own timeout. */
    static final Duration CHECK_EVERY = Duration.ofSeconds(5);
    static final int CHECK_TIMEOUT_SECONDS = 5;
    /**
     * A durable commit out this long takes no new callers: ten times the longest WAL stall measured here (400 ms), so a
     * stall keeps its callers while a stuck connection or standby sends the next ones back to their own connections.
     */
    static final Duration STUCK_AFTER = Duration.ofSeconds(4);
    /** The longest a caller waits in {@link #await} (then it fails: the commit is not known to be durable). */
    public static final Duration AWAIT_AT_MOST = Duration.ofSeconds(60);

    /** Opens the waiter's connection (a dedicated one, outside any pool: see the class comment). */
    public interface Connections {
        Connection open() throws SQLException;
    }

    private final Connections connections;
    private final Duration stuckAfter;
    private final Thread thread;
    private final Object lock = new Object();
    /** Callers whose commit returned, for the next durable commit; guarded by lock. */
    private List<CompletableFuture<Void>> waiting = new ArrayList<>();
    /** The connection callers may be served on (null: none up); guarded by lock. */
    private Connection current;
    /** Numbers the connections: a ticket is the number of the one up when it was taken; guarded by lock. */
    private long generation;
    /** When the durable commit now out was sent (System.nanoTime), 0 when none is; guarded by lock. */
    private long outSince;
    private boolean closed; // guarded by lock

    public DurabilityWaiter(Connections connections, String threadName) {
        this(connections, threadName, STUCK_AFTER);
    }

    DurabilityWaiter(Connections connections, String threadName, Duration stuckAfter) {
        this.connections = connections;
        this.stuckAfter = stuckAfter;
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
    }

    public DurabilityWaiter start() {
        thread.start();
        return this;
    }

    /** Before the caller's transaction begins: names the connection up now (0: none). */
    public long ticket() {
        synchronized (lock) {
            return current == null ? 0 : generation;
        }
    }

    /**
     * For a caller whose unflushed commit has returned: completes once that commit is durable, exceptionally if that
     * cannot be known (the connection failed: the commit may be lost). Null when the connection {@code ticket} named
     * is no longer the one up (or there was none), when the durable commit out has been out too long, or when this
     * waiter is closed: then the caller waits on its own connection ({@link JobStore#awaitDurable}).
     */
    public CompletableFuture<Void> afterCommit(long ticket) {
        synchronized (lock) {
            if (closed || current == null || ticket == 0 || ticket != generation) return null;
            if (outSince != 0 && System.nanoTime() - outSince > stuckAfter.toNanos()) return null;
            CompletableFuture<Void> f = new CompletableFuture<>();
            waiting.add(f);
            lock.notifyAll();
            return f;
        }
    }

    /**
     * {@link #afterCommit}'s future, waited for at most {@link #AWAIT_AT_MOST}: a failure or the timeout is the
     * DataAccessException the caller's own wait would throw (the commit may not be durable).
     */
    public static void await(CompletableFuture<Void> f) {
        try {
            f.get(AWAIT_AT_MOST.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new DataAccessException("waiting for the WAL flush failed: " + cause.getMessage(), cause);
        } catch (TimeoutException e) {
            throw new DataAccessException("the WAL flush was not confirmed within " + AWAIT_AT_MOST.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DataAccessException("interrupted while waiting for the WAL flush");
        }
    }

    /** Whether callers are served here now (tests). */
    public boolean up() {
        synchronized (lock) {
            return current != null;
        }
    }

    private void run() {
        boolean quiet = false; // one warning with its stack per outage, not one a second
        while (!isClosed()) {
            Connection c = null;
            try {
                c = connections.open();
                if (!c.getAutoCommit()) c.setAutoCommit(true);
                synchronized (lock) {
                    if (closed) return;
                    current = c;
                    generation++;
                }
                if (quiet) log.info("the shared wait for the WAL flush is back");
                quiet = false;
                serve(c);
            } catch (Exception e) { // SQLException, and what jOOQ wraps it in
                if (!isClosed()) {
                    if (!quiet) log.warn("the shared wait for the WAL flush failed; submits wait on their own connections until it is back", e);
                    else log.debug("the shared wait for the WAL flush is still down", e);
                    quiet = true;
                }
            } finally {
                down(c, new DataAccessException("the connection waiting for the WAL flush failed; the commit may not be durable"));
            }
            if (!isClosed()) pause();
        }
    }

    /**
     * Durable commits, each for the callers that asked before it was sent (one commit for as many as came while the
     * last one was out), until the connection fails, or close once every caller has been served. An idle connection
     * is proven alive every {@link #CHECK_EVERY}.
     */
    private void serve(Connection c) throws SQLException, InterruptedException {
        org.jooq.DSLContext dsl = Database.dsl(c);
        long lastUsed = System.nanoTime();
        while (true) {
            List<CompletableFuture<Void>> batch;
            synchronized (lock) {
                long idle;
                while (waiting.isEmpty() && !closed && (idle = System.nanoTime() - lastUsed) < CHECK_EVERY.toNanos()) {
                    lock.wait(Math.max(1, (CHECK_EVERY.toNanos() - idle) / 1_000_000));
                }
                if (waiting.isEmpty() && closed) return; // every caller served (a stop answers what it accepted)
                batch = waiting;
                waiting = new ArrayList<>();
                if (!batch.isEmpty()) outSince = System.nanoTime();
            }
            if (batch.isEmpty()) { // idle for CHECK_EVERY: is the connection still there?
                if (!c.isValid(CHECK_TIMEOUT_SECONDS)) throw new SQLException("the flush waiter's connection stopped answering");
                lastUsed = System.nanoTime();
                continue;
            }
            try {
                Enqueue.AWAIT_DURABLE.bind().run(dsl);
            } catch (Throwable e) {
                down(null, e); // down before anyone hears of the failure: no later caller is served here
                for (CompletableFuture<Void> f : batch) f.completeExceptionally(e);
                throw e;
            }
            synchronized (lock) {
                outSince = 0;
            }
            for (CompletableFuture<Void> f : batch) f.complete(null);
            lastUsed = System.nanoTime();
        }
    }

    /** No connection up: the callers still waiting fail ({@code why}); {@code c}, when given, is closed. */
    private void down(Connection c, Throwable why) {
        List<CompletableFuture<Void>> orphans;
        synchronized (lock) {
            current = null;
            outSince = 0;
            orphans = waiting;
            waiting = new ArrayList<>();
        }
        // their commits came before the failure, on a server this connection can no longer vouch for
        for (CompletableFuture<Void> f : orphans) f.completeExceptionally(why);
        if (c != null) {
            try {
                c.close();
            } catch (SQLException e) {
                log.debug("closing the flush waiter's connection", e);
            }
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

    /**
     * Takes no new callers, serves those it accepted, and returns within about 5 s: a durable commit still out then
     * (a stuck connection) is aborted, and its callers fail.
     */
    @Override
    public void close() {
        Connection c;
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
            c = current;
        }
        boolean interrupted = Thread.interrupted(); // a stop on an interrupted thread still waits for the last commit
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            interrupted = true;
        }
        if (thread.isAlive() && c != null) {
            try {
                c.abort(Runnable::run); // ends a stuck statement: its callers fail rather than hang
            } catch (SQLException e) {
                log.debug("aborting the flush waiter's connection", e);
            }
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        down(null, new DataAccessException("the flush waiter closed before the commit was confirmed durable"));
        if (interrupted) Thread.currentThread().interrupt();
    }
}
