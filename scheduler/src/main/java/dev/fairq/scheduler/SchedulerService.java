package dev.fairq.scheduler;

import dev.fairq.schema.DashboardStore;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * Runs the scheduler as leader or standby. Leadership is a PostgreSQL session advisory lock held on a
 * dedicated connection (never a pooled one: the lock belongs to the session, and a pool would hand that
 * session to someone else). When the leader's process dies or its connection is terminated, PostgreSQL
 * drops the lock and a standby takes it at its next poll.
 *
 * <p>The fence: every statement of a leader runs on that same connection. A leader that lost its session
 * cannot admit anything, because the statement has nowhere to run, so two schedulers never admit at once.
 * (Admission also re-checks {@code status = 'pending'}, so no job can be admitted twice either way.)
 */
public final class SchedulerService implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SchedulerService.class);
    /** Advisory lock key: two ints, "fairq" and "scheduler". */
    private static final int LOCK_CLASS = 1717658993, LOCK_ID = 1;
    private static final String TRY_LOCK = "SELECT pg_try_advisory_lock(" + LOCK_CLASS + ", " + LOCK_ID + ")";
    /** Some session holds the leader's lock (a two-int advisory lock shows its keys as classid and objid). */
    private static final String LEADER_EXISTS = "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
            + "AND granted AND classid = " + LOCK_CLASS + " AND objid = " + LOCK_ID + ")";
    /**
     * The dashboards' per-minute rollup: recomputed this often, over the current and the previous minute
     * (so a job finished in the last second of a minute is counted at the next run), kept this long.
     */
    static final Duration ROLLUP_EVERY = Duration.ofSeconds(10);
    static final int ROLLUP_MINUTES = 2;
    static final Duration ROLLUP_RETENTION = Duration.ofDays(7);
    /**
     * Schedules are fired this often (one probe of schedules_due_idx when nothing is due): an 'overlap: skip'
     * fire, decided when due, starts within half a second of its instant; the others are created ahead.
     */
    static final Duration FIRE_EVERY = Duration.ofMillis(500);

    @FunctionalInterface
    public interface ConnectionFactory {
        Connection open() throws SQLException;
    }

    private final Scheduler scheduler;
    private final ScheduleFirer firer;
    private final JobStore store;
    private final DashboardStore dashboards = new DashboardStore();
    private final SchedulerConfig config;
    private final ConnectionFactory connections;
    private final Thread thread;
    private volatile boolean stopped;
    private volatile boolean leader;
    private volatile Connection current;

    public SchedulerService(Scheduler scheduler, JobStore store, SchedulerConfig config, ConnectionFactory connections) {
        this(scheduler, new ScheduleFirer(store, ScheduleObserver.NONE), store, config, connections);
    }

    /** With the schedules' firer (its observer reports fires to this process's metrics). */
    public SchedulerService(Scheduler scheduler, ScheduleFirer firer, JobStore store, SchedulerConfig config,
                            ConnectionFactory connections) {
        this.scheduler = scheduler;
        this.firer = firer;
        this.store = store;
        this.config = config;
        this.connections = connections;
        this.thread = new Thread(this::run, "fairq-scheduler");
    }

    public SchedulerService start() {
        thread.start();
        return this;
    }

    public boolean isLeader() {
        return leader;
    }

    public Scheduler scheduler() {
        return scheduler;
    }

    private void run() {
        while (!stopped) {
            try (Connection c = connections.open()) {
                current = c;
                if (!waitForLock(c)) continue;
                lead(c);
            } catch (SQLException | RuntimeException e) {
                if (stopped) break;
                if (leader) log.warn("lost the scheduler connection, stepping down", e);
                else log.warn("scheduler connection failed", e);
            } finally {
                leader = false;
                current = null;
            }
            pause(config.standbyPoll());
        }
    }

    /** Standby: try the lock every standbyPoll on this connection; true once it is ours. */
    private boolean waitForLock(Connection c) throws SQLException {
        while (!stopped) {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(TRY_LOCK)) {
                rs.next();
                if (rs.getBoolean(1)) return true;
            }
            pause(config.standbyPoll());
        }
        return false;
    }

    private void lead(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("LISTEN fairq_jobs");
            // Every admission query walks jobs_admit_idx in order and stops at its LIMIT. Right after a burst
            // of enqueues the statistics are stale, and the planner may then fetch a tenant's whole backlog
            // through another index and sort it: a tick would cost O(backlog) (measured: 32 ms instead of
            // 0.6 ms at 5,000 jobs per tenant). No scheduler query needs a sort, so rule them out here.
            s.execute("SET enable_sort = off");
            // An admission lost to a database crash is simply admitted again (see Database.queuePool).
            s.execute("SET synchronous_commit = off");
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        DSLContext ctx = Database.dsl(c);
        scheduler.reset();
        leader = true;
        log.info("this process is now the active scheduler");
        long nextMaintenance = System.nanoTime() + config.maintenanceEvery().toNanos();
        long nextPublish = System.nanoTime();
        long nextRollup = System.nanoTime();
        long nextFire = System.nanoTime();
        while (!stopped) {
            long started = System.nanoTime();
            Scheduler.TickResult r = scheduler.tick(ctx);
            if (log.isDebugEnabled()) {
                log.debug("tick: wanted {} admitted {} in {} us", r.wanted(), r.admitted(), (System.nanoTime() - started) / 1000);
            }
            if (System.nanoTime() >= nextPublish) {
                publishState(ctx);
                nextPublish = System.nanoTime() + 1_000_000_000L;
            }
            if (System.nanoTime() >= nextRollup) {
                rollup(ctx);
                nextRollup = System.nanoTime() + ROLLUP_EVERY.toNanos();
            }
            if (System.nanoTime() >= nextMaintenance) {
                maintain(ctx);
                nextMaintenance = System.nanoTime() + config.maintenanceEvery().toNanos();
            }
            if (System.nanoTime() >= nextFire) {
                fireSchedules(ctx);
                nextFire = firer.behind() ? System.nanoTime() : System.nanoTime() + FIRE_EVERY.toNanos();
            }
            // saturated: more work is waiting, come back soon; buffer full: the workers are busy, look again
            // after a few busy intervals; otherwise idle, unless a rate-limited tenant gets a token sooner.
            long waitMillis;
            if (r.saturated()) waitMillis = config.busyInterval().toMillis();
            else if (r.wanted() == 0) waitMillis = config.busyInterval().toMillis() * 5;
            else waitMillis = Math.min(config.idleInterval().toMillis(), r.nanosUntilNextToken() / 1_000_000 + 1);
            if (firer.behind()) waitMillis = config.busyInterval().toMillis(); // more fires due: come back soon
            pg.getNotifications((int) Math.max(1, waitMillis)); // an enqueue wakes us early
        }
    }

    /** At most once a second, one statement: the per-tenant state explain reads from any process. */
    private void publishState(DSLContext ctx) {
        try {
            store.schedulerStates().publish(ctx, scheduler.snapshot());
        } catch (RuntimeException e) {
            log.warn("could not publish the scheduler state for explain", e);
        }
    }

    /** The dashboards' rollup (idempotent: see JobStore.rollupMinutes); a failure only costs a chart point. */
    private void rollup(DSLContext ctx) {
        try {
            long started = System.nanoTime();
            int rows = dashboards.rollupMinutes(ctx, ROLLUP_MINUTES);
            if (log.isDebugEnabled()) log.debug("rollup: {} rows in {} ms", rows, (System.nanoTime() - started) / 1_000_000);
        } catch (RuntimeException e) {
            log.warn("could not write the dashboard rollup", e);
        }
    }

    /** Fires due schedules (ScheduleFirer: exactly once from job_keys and row locks, not from leadership). */
    private void fireSchedules(DSLContext ctx) {
        try {
            int jobs = firer.fire(ctx);
            if (jobs > 0 && log.isDebugEnabled()) log.debug("schedules: {} fires enqueued", jobs);
        } catch (RuntimeException e) {
            log.warn("could not fire schedules", e);
        }
    }

    private void maintain(DSLContext ctx) {
        int deleted = 0;
        for (int i = 0; i < 20; i++) {
            int n = store.deleteFinished(ctx, config.retention(), config.deadRetention(), 5000);
            deleted += n;
            if (n < 5000) break;
        }
        store.leases().pruneWorkers(ctx, java.time.Duration.ofHours(1));
        dashboards.pruneRollup(ctx, ROLLUP_RETENTION);
        if (deleted > 0) log.info("retention: deleted {} finished jobs", deleted);
    }

    private void pause(Duration d) {
        if (stopped) return;
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
        }
    }

    /** Whether any process, this one or another, is the active scheduler now. */
    public static boolean leaderExists(DSLContext db) {
        return Boolean.TRUE.equals(db.resultQuery(LEADER_EXISTS).fetchOne(0, Boolean.class));
    }

    /** Stops; the lock goes with the connection, so a standby takes over at its next poll. */
    @Override
    public void close() {
        stopped = true;
        thread.interrupt();
        Connection c = current;
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing to release the lock; a broken connection has released it already
            }
        }
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
