package dev.fairq.scheduler;

import dev.fairq.schema.Database;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The active scheduler's background duties (state publishing, the dashboard rollup, retention, the worker
 * registry's pruning, ...), beside the admission loop, never in it: one thread and one connection of their
 * own, every statement under a statement_timeout. So nothing they do, however slow, can stall an admission
 * (the admission loop's connection never waits on them), and a duty that fails only logs, with the stack
 * trace, and runs again at its next turn: it never costs the leadership.
 */
final class Maintenance implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Maintenance.class);

    /** A duty's work, run on the maintenance connection. */
    @FunctionalInterface
    interface Work {
        void run(DSLContext ctx) throws Exception;
    }

    /** A duty's work that says whether it stopped short of done (a batch cap): then it runs again sooner. */
    @FunctionalInterface
    interface PacedWork {
        boolean runBehind(DSLContext ctx) throws Exception;
    }

    /** A named duty, how often it runs, and how soon after a run that reports itself behind. */
    record Duty(String name, Duration every, PacedWork work, Duration whenBehind) {
        Duty(String name, Duration every, Work work) {
            this(name, every, ctx -> {
                work.run(ctx);
                return false;
            }, every);
        }
    }

    private final SchedulerService.ConnectionFactory connections;
    private final Duration statementTimeout;
    private final List<Duty> duties;
    private final long[] nextRun;
    private final Thread thread;
    private volatile boolean stopped;
    private volatile Connection current;

    Maintenance(String name, SchedulerService.ConnectionFactory connections, Duration statementTimeout, List<Duty> duties) {
        this.connections = connections;
        this.statementTimeout = statementTimeout;
        this.duties = new ArrayList<>(duties);
        this.nextRun = new long[duties.size()];
        this.thread = new Thread(this::loop, name);
        this.thread.setDaemon(true);
    }

    Maintenance start() {
        long now = System.nanoTime();
        for (int i = 0; i < nextRun.length; i++) nextRun[i] = now; // every duty runs once at the start of a term
        thread.start();
        return this;
    }

    private void loop() {
        while (!stopped) {
            long now = System.nanoTime();
            long nextDue = Long.MAX_VALUE;
            for (int i = 0; i < duties.size() && !stopped; i++) {
                if (nextRun[i] <= now) {
                    Duty d = duties.get(i);
                    nextRun[i] = System.nanoTime() + (runOne(d) ? d.whenBehind() : d.every()).toNanos();
                }
                nextDue = Math.min(nextDue, nextRun[i]);
            }
            long sleep = nextDue - System.nanoTime();
            if (sleep > 0 && !stopped) {
                try {
                    Thread.sleep(Math.max(1, sleep / 1_000_000));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** Runs a duty; whether it reported itself behind (a failed run is not: it runs again at its next turn). */
    private boolean runOne(Duty duty) {
        try {
            return duty.work().runBehind(Database.dsl(connection()));
        } catch (Exception e) {
            if (stopped) return false;
            log.warn("maintenance duty '{}' failed; it runs again in {}", duty.name(), duty.every(), e);
            dropBrokenConnection();
            return false;
        }
    }

    /** The maintenance connection, opened (again) when needed, with the statement timeout on its session. */
    private Connection connection() throws SQLException {
        Connection c = current;
        if (c != null) return c;
        c = connections.open();
        try (Statement s = c.createStatement()) {
            s.execute("SET statement_timeout = " + statementTimeout.toMillis());
            // a process frozen inside a duty's transaction (SIGSTOP, a long pause, a VM migration: the rollup's
            // statement finishes on the server, then the session waits for the next one) held its row locks for as
            // long as it stayed frozen, and the new leader's rollup, retention or firing waited on them, failing at
            // every turn: the server ends such a session (its locks go with it) once it has idled this long in a
            // transaction. A healthy duty sends its statements back to back.
            s.execute("SET idle_in_transaction_session_timeout = " + statementTimeout.toMillis());
            // background writes lost to a database crash are recomputed at the next run
            s.execute("SET synchronous_commit = off");
        }
        current = c;
        return c;
    }

    private void dropBrokenConnection() {
        Connection c = current;
        try {
            if (c != null && !c.isValid(2)) {
                current = null;
                c.close();
            }
        } catch (SQLException e) {
            current = null;
        }
    }

    /** Stops the duties; a statement in flight is cut off by closing its connection. */
    @Override
    public void close() {
        stopped = true;
        Connection c = current;
        current = null;
        stop(thread, c);
    }

    /**
     * Stops a thread that works on a connection of its own: interrupts it, closes the connection (which cuts off
     * a statement in flight and releases the session's locks; a broken one is closed already), and waits up to
     * 10 s for the thread to end.
     */
    static void stop(Thread thread, Connection connection) {
        thread.interrupt();
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // closing is the point; nothing to do when it fails
            }
        }
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
