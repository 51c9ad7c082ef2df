package dev.fairq.scheduler;

import dev.fairq.schema.Admission;
import dev.fairq.schema.DashboardStore;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.LeaderLock;
import dev.fairq.schema.SchedulerStates;
import dev.fairq.schema.Waker;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.Map;

/**
 * Runs the scheduler as leader or standby. Leadership is a PostgreSQL session advisory lock ({@link LeaderLock})
 * held on a dedicated connection. When the leader's process dies or its connection is terminated, PostgreSQL
 * drops the lock and a standby takes it at its next poll.
 *
 * <p>The fence: every admission of a leader runs on that same connection. A leader that lost its session
 * cannot admit anything, because the statement has nowhere to run, so two schedulers never admit at once.
 * (Admission also re-checks {@code status = 'pending'}, so no job can be admitted twice either way.)
 *
 * <p>The lock connection does admissions and nothing else: it listens for wake-ups (which name tenants that
 * may have work, see {@link Scheduler#wake}) and ticks. The background duties (publishing the state explain
 * reads, the dashboard rollup, retention, pruning) run on their own thread and connection ({@link Maintenance}),
 * under a statement_timeout, while this process leads; their failures are logged and retried, never a reason
 * to step down.
 */
public final class SchedulerService implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SchedulerService.class);
    /** The dashboards' per-minute rollup is recomputed this often (so charts trail by at most 10 s), kept this long. */
    static final Duration ROLLUP_EVERY = Duration.ofSeconds(10);
    static final Duration ROLLUP_RETENTION = Duration.ofDays(7);
    /**
     * The rollup recomputes the tenants active within this window: the two minutes it rewrites, and a
     * little more so a tenant whose last job ended just before a minute turned is counted in both.
     */
    static final Duration ROLLUP_ACTIVE_WINDOW = Duration.ofMinutes(3);
    /** Explain reads the published state; once a second keeps its tokens and positions current enough. */
    static final Duration PUBLISH_EVERY = Duration.ofSeconds(1);
    /**
     * The small tables every tick or enqueue rewrites (Retention#VACUUM_HOT_TABLES), vacuumed this often: at a hundred
     * grants used a second, 10 s leaves about 1,000 dead rows, some 30 pages of admission_grants, where autovacuum's
     * once a minute left 6,000 and no autovacuum at all an ever longer table.
     */
    static final Duration VACUUM_EVERY = Duration.ofSeconds(10);
    /** Unchanged states are written again this often, so updated_at shows the state is live (explain prints it). */
    static final Duration PUBLISH_ALL_EVERY = Duration.ofSeconds(5);
    /**
     * The most rows one publish writes: with 10,000 tenants competing every position changes every round, and
     * writing all of them each second took ~500 ms in the database each time (auto_explain, the tenants
     * bench's 10,000-tenant drain). Tenants never published go first, then those published longest ago, so a
     * row is at most about (tenants held / 1,000) seconds old.
     */
    static final int PUBLISH_MAX_ROWS = 1_000;
    /** Retention deletes in batches of 5,000 (a few ms each), at most 20 a run: 100,000 jobs per run. */
    static final int RETENTION_BATCH = 5000, RETENTION_BATCHES_PER_RUN = 20;
    /**
     * A retention run that stopped at its batch cap left jobs (or side-effect keys) past retention: the next run
     * follows this soon instead of a whole maintenance interval later. At 100,000 per 30 s, a queue finishing more
     * than 3,333 jobs a second for longer than its retention grew without bound.
     */
    static final Duration RETENTION_BEHIND_EVERY = Duration.ofSeconds(1);
    /** Registry rows of worker processes silent this long are removed (they died without unregistering). */
    static final Duration WORKER_REGISTRY_KEEP = Duration.ofHours(1);
    /**
     * Schedules are fired this often (one probe of schedules_due_idx when nothing is due): an 'overlap: skip'
     * fire, decided when due, starts within half a second of its instant; the others are created ahead.
     */
    static final Duration FIRE_EVERY = Duration.ofMillis(500);
    /**
     * A leader's lock session idle this long (no tick statement; a healthy one runs one at least every idle
     * interval) is taken for frozen, and a standby ends it and takes over.
     */
    static final Duration LEADER_STALL = Duration.ofSeconds(10);
    /** A firing run goes on while fires are due, up to this long, then lets the next run continue. */
    static final Duration FIRE_RUN_MAX = Duration.ofSeconds(5);

    @FunctionalInterface
    public interface ConnectionFactory {
        Connection open() throws SQLException;
    }

    private final Scheduler scheduler;
    private final ScheduleFirer firer;
    private final JobStore store;
    private final DashboardStore dashboards;
    private final SchedulerConfig config;
    private final ConnectionFactory connections;
    private final List<Maintenance.Duty> extraDuties = new ArrayList<>();
    /** Wakes the workers of this process directly after an admission (before the NOTIFY reaches them); none by default. */
    private volatile Runnable localWorkers = () -> {};
    private final Thread thread;
    private volatile boolean stopped;
    private volatile boolean leader;
    private volatile Connection current;
    /** What was published last per tenant, and when (null: nothing yet this term): unchanged states are not written again. */
    private Map<String, Scheduler.Snapshot> published;
    private Map<String, Long> publishedAt;
    /** Whether the rollup ran in this term (its first run counts every tenant that finished jobs). */
    private volatile boolean rolledUpAsLeader;

    public SchedulerService(Scheduler scheduler, JobStore store, SchedulerConfig config, ConnectionFactory connections) {
        this(scheduler, new ScheduleFirer(store, ScheduleObserver.NONE), store, config, connections);
    }

    /** With the schedules' firer (its observer reports fires to this process's metrics). */
    public SchedulerService(Scheduler scheduler, ScheduleFirer firer, JobStore store, SchedulerConfig config,
                            ConnectionFactory connections) {
        this.scheduler = scheduler;
        this.firer = firer;
        this.store = store;
        // a catch-up recounts no minute retention may have emptied (the shorter retention, succeeded or dead)
        this.dashboards = new DashboardStore(store.clock(),
                config.retention().compareTo(config.deadRetention()) < 0 ? config.retention() : config.deadRetention());
        this.config = config;
        this.connections = connections;
        this.thread = new Thread(this::run, "fairq-scheduler");
    }

    /** Another background duty for the leader (before {@link #start}): runs on the maintenance connection. */
    public SchedulerService withDuty(String name, Duration every, Maintenance.Work work) {
        extraDuties.add(new Maintenance.Duty(name, every, work));
        return this;
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
            if (LeaderLock.tryLock(c)) return true;
            // a frozen leader's connection stays up and keeps the lock: without this nothing is admitted until it thaws
            if (LeaderLock.endStalledHolder(c, LEADER_STALL)) {
                log.warn("the active scheduler's session ran no statement for over {} s (its process frozen?); "
                        + "ended it to take over", LEADER_STALL.toSeconds());
            }
            pause(config.standbyPoll());
        }
        return false;
    }

    /** Wakes the workers of this process directly after each admission, besides the NOTIFY (quick, must not throw). */
    public SchedulerService wakeLocalWorkersWith(Runnable wake) {
        this.localWorkers = wake;
        return this;
    }

    private void lead(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            // Listening starts before the first tick reads the tenants with work: nothing enqueued in between is missed.
            s.execute("LISTEN fairq_jobs");
            // Every admission query walks a partial index in order and stops at its LIMIT. Right after a burst
            // of enqueues the statistics are stale, and the planner may then fetch a tenant's whole backlog
            // through another index and sort it: a tick would cost O(backlog) (measured: 32 ms instead of
            // 0.6 ms at 5,000 jobs per tenant). No scheduler query needs a sort or a sequential scan (each has
            // an index made for it), so this session rules both out.
            for (String setting : Admission.PLANNER_SETTINGS) s.execute("SET " + setting);
            // An admission lost to a database crash is simply admitted again (see Database.queuePool).
            s.execute("SET synchronous_commit = off");
            // The tick's statements are the same few, prepared once, with arrays and bounds as parameters: each
            // custom plan re-planned them at every execution, 1.3-1.9 ms of a tick's 5.2-5.8 ms median under the
            // subkeys flood. The settings above leave a generic plan only index paths, as a custom one.
            s.execute("SET plan_cache_mode = force_generic_plan");
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        DSLContext ctx = Database.dsl(c);
        scheduler.reset();
        published = null;
        rolledUpAsLeader = false;
        leader = true;
        log.info("this process is now the active scheduler");
        // schedules fire on a thread and connection of their own: a long retention run never delays a fire
        // the workers' wake-up after an admission goes on a thread and connection of its own (Waker)
        WakeConnection wakeConnection = new WakeConnection(connections);
        try (Maintenance maintenance = new Maintenance("fairq-maintenance", connections,
                     config.maintenanceStatementTimeout(), duties()).start();
             Maintenance firing = new Maintenance("fairq-schedules", connections, config.maintenanceStatementTimeout(),
                     List.of(new Maintenance.Duty("fire schedules", FIRE_EVERY, this::fireSchedules))).start();
             WakeConnection closedLast = wakeConnection; // after the waker below has stopped
             Waker waker = new Waker("fairq-scheduler-waker", () -> localWorkers.run(), () -> wakeConnection.wakeWorkers(store))) {
            scheduler.wakeWorkersWith(waker);
            while (!stopped) {
                long started = System.nanoTime();
                Scheduler.TickResult r = scheduler.tick(ctx);
                if (log.isDebugEnabled()) {
                    log.debug("tick: wanted {} admitted {} in {} us", r.wanted(), r.admitted(), (System.nanoTime() - started) / 1000);
                }
                // saturated: more work is waiting, come back soon; buffer full: the workers are busy, look again
                // after a few busy intervals; otherwise idle, unless a rate-limited tenant gets a token or a
                // tenant's next job comes due sooner. A wake-up ends the wait early.
                long waitMillis;
                if (r.saturated()) waitMillis = config.busyInterval().toMillis();
                else if (r.wanted() == 0) waitMillis = config.busyInterval().toMillis() * 5;
                else waitMillis = Math.min(config.idleInterval().toMillis(), r.nanosUntilNextEvent() / 1_000_000 + 1);
                // at least 2 ms: on this connection a 1 ms wait returns at once (ListenSocketFactory)
                wakeUps(pg.getNotifications((int) Math.max(2, waitMillis)));
            }
        } finally {
            scheduler.wakeWorkersWith(null); // the waker is closed; a tick outside a term wakes in its statement
        }
    }

    /**
     * The connection the scheduler's wake-ups for the workers go out on, opened when first needed and again after a
     * failure (one retry on a fresh one). Closed after the waker stopped; a send still stuck then (on the
     * notification lock, or a dead socket) is cut off by aborting the connection, so leaving leadership never
     * waits for it, and nothing opens a connection once it is closed.
     */
    private static final class WakeConnection implements AutoCloseable {
        private final ConnectionFactory connections;
        private volatile Connection current; // opened and used by the waker's thread only
        private volatile boolean closed;

        WakeConnection(ConnectionFactory connections) {
            this.connections = connections;
        }

        void wakeWorkers(JobStore store) {
            for (int attempt = 0; ; attempt++) {
                try {
                    if (closed) return;
                    Connection c = current;
                    if (c == null) current = c = connections.open();
                    store.leases().wakeWorkers(Database.dsl(c));
                    return;
                } catch (SQLException | RuntimeException e) {
                    drop();
                    if (attempt == 1 || closed) throw new IllegalStateException("could not wake the workers", e);
                }
            }
        }

        private void drop() {
            Connection c = current;
            current = null;
            if (c == null) return;
            try {
                c.abort(Runnable::run);
            } catch (SQLException | RuntimeException ignored) {
                // dropping a broken connection
            }
        }

        @Override
        public void close() {
            closed = true;
            drop();
        }
    }

    private void wakeUps(PGNotification[] notifications) {
        if (notifications == null) return;
        for (PGNotification n : notifications) scheduler.onWakeUp(n.getParameter());
    }

    private List<Maintenance.Duty> duties() {
        List<Maintenance.Duty> duties = new ArrayList<>();
        duties.add(new Maintenance.Duty("publish scheduler state", PUBLISH_EVERY, this::publishState));
        duties.add(new Maintenance.Duty("dashboard rollup", ROLLUP_EVERY, this::rollup));
        // every maintenance interval, and again within a second while a run stopped at its batch cap
        Duration behind = config.maintenanceEvery().compareTo(RETENTION_BEHIND_EVERY) < 0
                ? config.maintenanceEvery() : RETENTION_BEHIND_EVERY;
        duties.add(new Maintenance.Duty("retention", config.maintenanceEvery(), this::retention, behind));
        duties.add(new Maintenance.Duty("vacuum hot tables", VACUUM_EVERY, ctx -> store.retention().vacuumHotTables(ctx)));
        duties.addAll(extraDuties);
        return duties;
    }

    /**
     * The per-tenant state explain reads from any process: only what the scheduler holds in memory (the
     * active tenants), and of that only what changed since the last publish (its state, or its limits were
     * re-read), each again after {@link #PUBLISH_ALL_EVERY}, at most {@link #PUBLISH_MAX_ROWS} in one statement;
     * the rows of tenants it forgot since are deleted (a tenant that turns up again starts afresh, and explain
     * must not read an old state meanwhile).
     */
    void publishState(DSLContext ctx) {
        long t = System.nanoTime();
        // a new term's maps become the fields only once its first publish and clean-up succeeded: a failure
        // before that must leave the next attempt a new term too (an earlier term's rows are still there)
        boolean newTerm = published == null;
        Map<String, Scheduler.Snapshot> published = newTerm ? new HashMap<>() : this.published;
        Map<String, Long> publishedAt = newTerm ? new HashMap<>() : this.publishedAt;
        Set<String> current = new HashSet<>();
        List<Scheduler.Snapshot> due = new ArrayList<>();
        for (Scheduler.Snapshot s : scheduler.snapshot()) {
            String id = s.state().tenantId();
            current.add(id);
            Long at = publishedAt.get(id);
            if (at == null || t - at >= PUBLISH_ALL_EVERY.toNanos() || !s.equals(published.get(id))) due.add(s);
        }
        if (due.size() > PUBLISH_MAX_ROWS) { // never published first, then the longest ago
            due.sort(Comparator.comparingLong(s -> publishedAt.getOrDefault(s.state().tenantId(), Long.MIN_VALUE)));
            due = due.subList(0, PUBLISH_MAX_ROWS);
        }
        List<SchedulerStates.State> rows = new ArrayList<>(due.size());
        for (Scheduler.Snapshot s : due) rows.add(s.state());
        store.schedulerStates().publish(ctx, rows);
        for (Scheduler.Snapshot s : due) {
            published.put(s.state().tenantId(), s);
            publishedAt.put(s.state().tenantId(), t);
        }
        if (newTerm) {
            store.schedulerStates().keepOnly(ctx, new ArrayList<>(published.keySet())); // an earlier term's rows go
            this.published = published;
            this.publishedAt = publishedAt;
        } else {
            List<String> forgotten = new ArrayList<>();
            for (String id : published.keySet()) if (!current.contains(id)) forgotten.add(id);
            store.schedulerStates().forget(ctx, forgotten);
            for (String id : forgotten) {
                published.remove(id);
                publishedAt.remove(id);
            }
        }
    }

    /** The dashboards' rollup (idempotent, resumes from its cursor: see DashboardStore.rollup). */
    private void rollup(DSLContext ctx) {
        long started = System.nanoTime();
        // the first run as the leader counts every tenant that finished jobs: this process's memory of who ran
        // starts now, and the jobs that finished since the previous leader's last run are in the window
        Set<String> tenants = new HashSet<>(scheduler.recentlyActive(ROLLUP_ACTIVE_WINDOW.toNanos()));
        int rows = dashboards.rollup(ctx, tenants, !rolledUpAsLeader);
        rolledUpAsLeader = true;
        if (log.isDebugEnabled()) log.debug("rollup: {} rows in {} ms", rows, (System.nanoTime() - started) / 1_000_000);
    }

    /**
     * Fires due schedules (ScheduleFirer: exactly once from job_keys and row locks, not from leadership), and
     * goes on while it is behind (each call stops after its time budget), up to {@link #FIRE_RUN_MAX}.
     */
    private void fireSchedules(DSLContext ctx) {
        long until = System.nanoTime() + FIRE_RUN_MAX.toNanos();
        do {
            int jobs = firer.fire(ctx);
            if (jobs > 0 && log.isDebugEnabled()) log.debug("schedules: {} fires enqueued", jobs);
        } while (firer.behind() && !stopped && System.nanoTime() < until);
    }

    /** One retention run; whether it stopped at a batch cap with more past retention left. */
    private boolean retention(DSLContext ctx) {
        List<String> tenants = store.retention().tenantsWithFinished(ctx);
        int deleted = 0;
        boolean behind = false;
        for (int i = 0; i < RETENTION_BATCHES_PER_RUN && !stopped; i++) {
            int n = store.retention().deleteFinished(ctx, tenants, config.retention(), config.deadRetention(), RETENTION_BATCH);
            deleted += n;
            if (n < RETENTION_BATCH) break;
            if (i == RETENTION_BATCHES_PER_RUN - 1) behind = true;
        }
        int effects = 0;
        for (int i = 0; i < RETENTION_BATCHES_PER_RUN && !stopped; i++) {
            int n = store.retention().deleteSideEffects(ctx, config.effectRetention(), RETENTION_BATCH);
            effects += n;
            if (n < RETENTION_BATCH) break;
            if (i == RETENTION_BATCHES_PER_RUN - 1) behind = true;
        }
        store.leases().pruneWorkers(ctx, WORKER_REGISTRY_KEEP);
        dashboards.pruneRollup(ctx, ROLLUP_RETENTION);
        if (deleted > 0) log.info("retention: deleted {} finished jobs", deleted);
        if (effects > 0) log.info("retention: deleted {} side-effect keys", effects);
        return behind;
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
        return LeaderLock.held(db);
    }

    /** Stops; the lock goes with the connection, so a standby takes over at its next poll. */
    @Override
    public void close() {
        stopped = true;
        Maintenance.stop(thread, current);
    }
}
