package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.fairq.schema.generated.tables.records.TenantsRecord;


/**
 * The dashboards' SQL: the per-minute rollup the active scheduler writes (idempotently) and prunes, and the
 * figures the dashboard pages read. Kept apart from {@link JobStore}, whose SQL moves jobs through their life
 * cycle; this class only reads jobs and writes tenant_minute_stats.
 */
public final class DashboardStore {

    /**
     * Recomputes the minutes from {@code :since} to now for the given tenants from the jobs table and upserts
     * them into tenant_minute_stats. Idempotent: each value is a count over the jobs table for that minute,
     * written with ON CONFLICT DO UPDATE SET x = excluded.x, never x = x + n, so a second run (or a second
     * scheduler after a fail-over) writes the same numbers.
     *
     * <p>Cost follows what changed: the tenants named (the scheduler's active ones, those with jobs ready or
     * running, those that already have a row in the window), and for each the jobs that moved since
     * {@code :since}: one range per tenant of jobs_tenant_finished_idx (succeeded, dead, and the start of
     * finished attempts), of jobs_tenant_failed_idx (retried failures), and the running jobs, grouped by
     * minute. Never the tenants table, never the backlog, never the retention. The depth snapshot (pending on
     * jobs_tenant_status_idx, ready and running, the oldest pending job) is written only into the current
     * minute; a past minute keeps the last depth seen during it (coalesce), null if no rollup ran then. A
     * tenant gets a row only when something happened or waits, or when it already has one for that minute
     * (so a count that drops to zero is rewritten, not left stale), or when nothing waits but its latest
     * snapshot, in an earlier minute, said something did (a zero snapshot: the overview shows the latest one).
     */
    static final NamedSql ROLLUP = NamedSql.of("""
            WITH win AS (
                SELECT :since::timestamptz AS since, date_trunc('minute', :now) AS cur,
                       :now - :commit_lag_ms * interval '1 millisecond' AS upto
            ), live AS MATERIALIZED (
                -- one status per branch: each is a range of its partial index (jobs_claim_idx, jobs_lease_idx);
                -- "status IN ('ready', 'running')" matches neither, and was a parallel scan of the whole table
                -- every 10 s (2.7 s of database CPU with 1,000,000 retained jobs, tenants bench, stats phase)
                SELECT tenant_id, status, started_at FROM jobs WHERE status = 'ready'
                UNION ALL
                SELECT tenant_id, status, started_at FROM jobs WHERE status = 'running'
            ), live_depth AS MATERIALIZED (
                -- grouped once: a count over the CTE per tenant (it has no index) scanned all of it for each
                -- tenant, 1.4 s a run with 10,000 active tenants and 500 jobs ready
                SELECT tenant_id, count(*) FILTER (WHERE status = 'ready') AS ready,
                       count(*) FILTER (WHERE status = 'running') AS running
                FROM live GROUP BY tenant_id
            ), t AS MATERIALIZED (
                SELECT id FROM unnest(:tenant_ids::text[]) AS x(id)
                UNION
                SELECT tenant_id FROM live
                UNION
                SELECT r.tenant_id FROM tenant_minute_stats r, win WHERE r.minute >= win.since
            ), ev AS (
                SELECT t.id AS tenant_id, e.m, sum(e.started) AS started, sum(e.succeeded) AS succeeded,
                       sum(e.failed) AS failed, sum(e.dead) AS dead, coalesce(sum(e.busy_ms), 0) AS busy_ms
                -- each range read once, each row giving an end and a start (k.start): a range per event read
                -- the same index twice, four probes per tenant (0.5 s a run at 10,000 tenants)
                FROM t, win CROSS JOIN LATERAL (
                    SELECT CASE WHEN k.start THEN CASE WHEN j.started_at >= win.since THEN date_trunc('minute', j.started_at) END
                                WHEN j.finished_at <= win.upto THEN date_trunc('minute', j.finished_at) END AS m,
                           k.start::int AS started, (NOT k.start AND j.status = 'succeeded')::int AS succeeded,
                           0 AS failed, (NOT k.start AND j.status = 'dead')::int AS dead,
                           CASE WHEN NOT k.start AND j.status <> 'cancelled'
                                THEN (fairq_epoch(j.finished_at) - fairq_epoch(j.started_at)) * 1000 END AS busy_ms
                    -- no index on started_at (V6): the start of an attempt that ended since is found with its end
                    FROM jobs j CROSS JOIN (VALUES (false), (true)) AS k(start)
                    WHERE j.tenant_id = t.id AND j.status IN ('succeeded', 'dead', 'cancelled')
                      AND j.finished_at >= win.since
                      AND (j.status <> 'cancelled' OR j.started_at >= win.since)
                    UNION ALL
                    -- retried failures; started_at after failed_at: the retry already started, that time is lost
                    SELECT CASE WHEN k.start THEN CASE WHEN j.status IN ('pending', 'ready') AND j.started_at >= win.since
                                                       THEN date_trunc('minute', j.started_at) END
                                WHEN j.failed_at <= win.upto THEN date_trunc('minute', j.failed_at) END,
                           k.start::int, 0, (NOT k.start)::int, 0,
                           CASE WHEN NOT k.start AND j.started_at <= j.failed_at
                                THEN (fairq_epoch(j.failed_at) - fairq_epoch(j.started_at)) * 1000 END
                    FROM jobs j CROSS JOIN (VALUES (false), (true)) AS k(start)
                    WHERE j.tenant_id = t.id AND j.failed_at >= win.since
                ) e
                WHERE e.m IS NOT NULL
                GROUP BY 1, 2
                UNION ALL
                SELECT l.tenant_id, date_trunc('minute', l.started_at), count(*), 0, 0, 0, 0
                FROM live l, win WHERE l.status = 'running' AND l.started_at >= win.since
                GROUP BY 1, 2
            ), counts AS (
                SELECT tenant_id, m, sum(started) AS started, sum(succeeded) AS succeeded, sum(failed) AS failed,
                       sum(dead) AS dead, sum(busy_ms) AS busy_ms
                FROM ev GROUP BY 1, 2
            ), depth AS (
                SELECT t.id AS tenant_id,
                       (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'pending') AS pending,
                       coalesce(ld.ready, 0) AS ready, coalesce(ld.running, 0) AS running,
                       (SELECT (fairq_epoch(:now) - fairq_epoch(j.created_at)) * 1000 FROM jobs j
                        WHERE j.tenant_id = t.id AND j.status = 'pending' ORDER BY j.id LIMIT 1) AS oldest
                FROM t LEFT JOIN live_depth ld ON ld.tenant_id = t.id
            ), keys AS (
                SELECT tenant_id, m FROM counts
                UNION
                SELECT d.tenant_id, win.cur FROM depth d, win WHERE d.pending + d.ready + d.running > 0
                UNION
                -- nothing waits or runs now, but the tenant's latest snapshot says something did (it drained after
                -- its minute's last run): a zero snapshot, else the overview showed that backlog for five minutes.
                -- One backward probe of the primary key per tenant named with nothing waiting.
                SELECT d.tenant_id, win.cur FROM depth d, win
                WHERE d.pending + d.ready + d.running = 0
                  AND (SELECT r.pending + r.ready + r.running > 0 FROM tenant_minute_stats r
                       WHERE r.tenant_id = d.tenant_id AND r.minute < win.cur AND r.pending IS NOT NULL
                       ORDER BY r.minute DESC LIMIT 1)
                UNION
                SELECT r.tenant_id, r.minute FROM tenant_minute_stats r, win
                WHERE r.minute >= win.since AND r.tenant_id IN (SELECT id FROM t)
            )
            INSERT INTO tenant_minute_stats AS r (tenant_id, minute, started, succeeded, failed, dead, busy_ms,
                                                  pending, ready, running, oldest_pending_age_ms, updated_at)
            SELECT k.tenant_id, k.m, coalesce(c.started, 0), coalesce(c.succeeded, 0), coalesce(c.failed, 0),
                   coalesce(c.dead, 0), round(coalesce(c.busy_ms, 0)),
                   CASE WHEN k.m = win.cur THEN d.pending END, CASE WHEN k.m = win.cur THEN d.ready END,
                   CASE WHEN k.m = win.cur THEN d.running END, CASE WHEN k.m = win.cur THEN round(d.oldest) END, win.upto
            FROM keys k CROSS JOIN win
            LEFT JOIN counts c ON c.tenant_id = k.tenant_id AND c.m = k.m
            LEFT JOIN depth d ON d.tenant_id = k.tenant_id
            WHERE k.m >= win.since AND k.m <= win.cur
            ON CONFLICT (tenant_id, minute) DO UPDATE
            SET started = excluded.started, succeeded = excluded.succeeded, failed = excluded.failed,
                dead = excluded.dead, busy_ms = excluded.busy_ms,
                pending = coalesce(excluded.pending, r.pending), ready = coalesce(excluded.ready, r.ready),
                running = coalesce(excluded.running, r.running),
                oldest_pending_age_ms = CASE WHEN excluded.pending IS NULL THEN r.oldest_pending_age_ms
                                             ELSE excluded.oldest_pending_age_ms END,
                updated_at = excluded.updated_at
            """);

    /**
     * The tenants that have finished jobs at all: a loose index scan of jobs_tenant_finished_idx, one probe per
     * tenant. Only for catching up after a gap, when the scheduler's memory does not know who ran what.
     */
    static final NamedSql TENANTS_WITH_FINISHED = NamedSql.of("""
            WITH RECURSIVE f(tenant_id) AS (
                (SELECT tenant_id FROM jobs WHERE finished_at IS NOT NULL ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM jobs j WHERE j.finished_at IS NOT NULL AND j.tenant_id > f.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM f WHERE f.tenant_id IS NOT NULL
            )
            SELECT tenant_id FROM f WHERE tenant_id IS NOT NULL
            """);

    static final NamedSql READ_CURSOR = NamedSql.of("""
            SELECT (SELECT rolled_through FROM rollup_cursor WHERE id = 1) AS rolled_through,
                   date_trunc('minute', :now) AS cur, :now AS db_now
            """);

    static final NamedSql WRITE_CURSOR = NamedSql.of("""
            INSERT INTO rollup_cursor (id, rolled_through) VALUES (1, :rolled_through::timestamptz)
            ON CONFLICT (id) DO UPDATE SET rolled_through = excluded.rolled_through
            """);

    /**
     * A minute's counts are final once a run that started this long after the minute ended has counted it:
     * the runs before that recount it (a job that finished in its last second may commit a little later),
     * the runs after it count the current minute only. A completion's finished_at is its statement's time,
     * committed milliseconds later; 15 s leaves room for a stalled commit, and the previous minute is
     * reread by one or two of the six runs a minute instead of by all of them.
     */
    public static final Duration SETTLE = Duration.ofSeconds(15);
    /**
     * A run counts the ends of attempts up to this long before its own time, and stamps its rows with that
     * time (updated_at), which GET /v1/stats takes as the point from which it counts finished jobs itself.
     * Stamping the run's own now() counted twice a completion that began after it and committed before its
     * snapshot (taken after the big statement's planning, milliseconds later on a loaded machine: one
     * DashboardApiTest run in six saw 9 succeeded jobs of 8); the margin also covers a completion that began
     * before the run and committed after its snapshot, unless its commit took longer than this.
     */
    public static final Duration COMMIT_LAG = Duration.ofSeconds(2);
    /** The most a catch-up fills in: the finished jobs it counts are kept a day (the default retention). */
    public static final Duration MAX_CATCH_UP = Duration.ofHours(24);

    /**
     * What one run recounts: the minutes from {@code since} to the current one; with {@code catchUp}, for every
     * tenant that finished jobs (minutes passed that no run covered, and the scheduler's memory of who ran
     * may not reach back that far); {@code finalThrough} is the cursor the run leaves: the last minute whose
     * counts no later run needs to recount.
     */
    record Window(OffsetDateTime since, boolean catchUp, OffsetDateTime finalThrough) {}

    /**
     * The window of a run at {@code now} (in minute {@code current}), after runs that made the minutes up to
     * {@code finalThrough} final (null: no run ever). In steady state (a run every 10 s) a run recounts the
     * current minute, and the previous one until a run {@link #SETTLE} into the current minute has counted it;
     * only a gap of a whole minute without a run (no scheduler active) catches up. Recounting the previous
     * minute at every run, and catching up at every turn of the minute (the cursor stood one minute behind
     * then), read every job finished in the last one to three minutes six times a minute, and once a minute
     * probed every tenant that ever finished a job.
     */
    static Window window(OffsetDateTime now, OffsetDateTime current, OffsetDateTime finalThrough) {
        return window(now, current, finalThrough, MAX_CATCH_UP);
    }

    /**
     * As {@link #window(OffsetDateTime, OffsetDateTime, OffsetDateTime)}, catching up only over the whole minutes
     * within {@code reach} of now: the finished jobs a minute is counted from are kept that long (the shorter
     * retention), so a catch-up that reached past it recounted minutes retention had emptied and wrote zeros over
     * the counts they had (with a one-hour retention and a two-hour gap, the minutes before the gap).
     */
    static Window window(OffsetDateTime now, OffsetDateTime current, OffsetDateTime finalThrough, Duration reach) {
        OffsetDateTime previous = current.minusMinutes(1);
        // a cursor past the previous minute was left by runs on a clock that was ahead (the database's clock was set
        // back since): the minutes from here on were not counted on this clock, so count as if the previous minute
        // had not settled yet; trusting it made every run count the current minute alone, and a minute's last
        // seconds (after its last run) went uncounted until the clock caught up with the cursor
        if (finalThrough != null && finalThrough.isAfter(previous)) finalThrough = previous.minusMinutes(1);
        OffsetDateTime since;
        boolean catchUp = false;
        if (finalThrough == null || !finalThrough.isBefore(previous.minusMinutes(1))) {
            since = finalThrough != null && !finalThrough.isBefore(previous) ? current : previous;
        } else {
            // the first minute wholly within reach: the one before it has lost its first seconds to retention
            OffsetDateTime oldest = now.minus(reach).truncatedTo(java.time.temporal.ChronoUnit.MINUTES).plusMinutes(1);
            if (oldest.isAfter(previous)) oldest = previous;
            since = finalThrough.isBefore(oldest) ? oldest : finalThrough;
            catchUp = true;
        }
        // every minute before the previous one ended over a minute ago: final once counted (a catch-up did)
        boolean settles = !since.isAfter(previous) && !now.isBefore(current.plus(SETTLE));
        OffsetDateTime through = settles ? previous : previous.minusMinutes(1);
        if (finalThrough != null && finalThrough.isAfter(through)) through = finalThrough;
        return new Window(since, catchUp, through);
    }

    private final QueueClock clock;
    /** How far back a catch-up recounts: {@link #MAX_CATCH_UP}, or the shorter retention of finished jobs. */
    private final Duration catchUpReach;

    public DashboardStore() {
        this(QueueClock.SYSTEM);
    }

    public DashboardStore(QueueClock clock) {
        this(clock, MAX_CATCH_UP);
    }

    /** {@code retention}: how long the finished jobs the rollup counts are kept (the shorter retention, if two). */
    public DashboardStore(QueueClock clock, Duration retention) {
        this.clock = clock;
        this.catchUpReach = retention.compareTo(MAX_CATCH_UP) < 0 ? retention : MAX_CATCH_UP;
    }

    /**
     * Recomputes the recent minutes of the given tenants (plus those with jobs ready or running, those with
     * pending jobs, and those with rows in the window), resuming from the stored cursor: minutes that passed while no scheduler ran
     * are filled in for every tenant that finished jobs, up to {@link #MAX_CATCH_UP} back. Returns rows written.
     */
    public int rollup(DSLContext ctx, Collection<String> activeTenants) {
        return rollup(ctx, activeTenants, false);
    }

    /**
     * As {@link #rollup(DSLContext, Collection)}; with {@code everyTenant}, for every tenant that finished jobs as
     * well as the named ones: what a scheduler's first run after it became the leader asks, since its memory of
     * who ran does not cover the jobs that finished between the previous leader's last run and its own.
     */
    public int rollup(DSLContext ctx, Collection<String> activeTenants, boolean everyTenant) {
        Record cursor = READ_CURSOR.bind().clock(clock).fetch(ctx).get(0);
        Window w = window(cursor.get("db_now", OffsetDateTime.class), cursor.get("cur", OffsetDateTime.class),
                cursor.get("rolled_through", OffsetDateTime.class), catchUpReach);
        Set<String> tenants = new HashSet<>(activeTenants);
        if (w.catchUp() || everyTenant) tenants.addAll(TENANTS_WITH_FINISHED.bind().fetch(ctx).getValues(0, String.class));
        addTenantsWithWaitingJobs(ctx, tenants);
        try {
            return rollup(ctx, w, tenants);
        } catch (org.jooq.exception.DataAccessException e) {
            if (!w.catchUp() || !cancelled(e)) throw e;
            // a catch-up over more completions than one statement counts within the statement timeout (measured: 8 s
            // for 1,000,000 of them) failed, and would at every run after, each over a longer gap: the dashboards
            // stopped for good. Count from the previous minute, as a steady run; the minutes before keep what they have.
            OffsetDateTime current = cursor.get("cur", OffsetDateTime.class);
            log.warn("dashboard rollup: catching up from {} took longer than the statement timeout; counting from {} "
                    + "on (the minutes before keep the counts they have)", w.since(), current.minusMinutes(1));
            return rollup(ctx, new Window(current.minusMinutes(1), false, w.finalThrough()), tenants);
        }
    }

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(DashboardStore.class);

    /** Whether the statement was cancelled (statement_timeout, or a cancel request). */
    private static boolean cancelled(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.sql.SQLException s && "57014".equals(s.getSQLState())) return true;
        }
        return false;
    }

    /** One run over the window, its rows and the cursor it leaves in one transaction. */
    private int rollup(DSLContext ctx, Window w, Set<String> tenants) {
        return ctx.transactionResult(c -> {
            int n = ROLLUP.bind().clock(clock).set("since", w.since()).set("commit_lag_ms", COMMIT_LAG.toMillis())
                    .set("tenant_ids", tenants.toArray(String[]::new)).execute(c.dsl());
            WRITE_CURSOR.bind().set("rolled_through", w.finalThrough()).execute(c.dsl());
            return n;
        });
    }

    /**
     * Every run also counts the tenants with waiting jobs no round admits (all delayed, or all behind a full or closed
     * concurrency key): a scheduler forgets them until a job comes due or a key frees, but their backlog is real and
     * the admin overview lists what the rollup saw. One probe per tenant with pending jobs (a loose index scan).
     */
    private void addTenantsWithWaitingJobs(DSLContext ctx, Set<String> tenants) {
        tenants.addAll(new Admission(clock).tenantsWithWork(ctx));
    }

    /**
     * The rollup of the last {@code minutes} minutes for every tenant that finished jobs (tests and tools),
     * through its own time: every completion committed before it, none of the {@link #COMMIT_LAG} left to the
     * stats. For a caller that waited for the completions it wants counted; one still in flight may be counted
     * twice by GET /v1/stats until the scheduler's next run.
     */
    public int rollupMinutes(DSLContext ctx, int minutes) {
        Record cursor = READ_CURSOR.bind().clock(clock).fetch(ctx).get(0);
        OffsetDateTime since = cursor.get("cur", OffsetDateTime.class).minusMinutes(Math.max(1, minutes) - 1);
        Set<String> tenants = new HashSet<>(TENANTS_WITH_FINISHED.bind().fetch(ctx).getValues(0, String.class));
        addTenantsWithWaitingJobs(ctx, tenants);
        return ROLLUP.bind().clock(clock).set("since", since).set("commit_lag_ms", 0L)
                .set("tenant_ids", tenants.toArray(String[]::new)).execute(ctx);
    }

    static final NamedSql PRUNE = NamedSql.of("""
            DELETE FROM tenant_minute_stats WHERE minute < :now - :keep_ms * interval '1 millisecond'
            """);

    /** Retention of the rollup: tenant_minute_stats_minute_idx finds the old minutes. */
    public int pruneRollup(DSLContext ctx, Duration retention) {
        return PRUNE.bind().clock(clock).set("keep_ms", retention.toMillis()).execute(ctx);
    }

    /** One tenant's minute. Depth fields are null when no rollup ran during that minute. */
    public record MinuteStats(String tenantId, java.time.OffsetDateTime minute, int started, int succeeded, int failed,
                              int dead, long busyMs, Integer pending, Integer ready, Integer running,
                              Long oldestPendingAgeMs) {}

    /**
     * A tenant's minutes since {@code since} ago, oldest first: a range of the primary key (tenant_id, minute). The
     * minutes of the chart: for an hour, the current one and the 59 before it (the window's totals sum the same
     * minutes, {@link #TOTALS}, {@link #TENANT_HEAD}; they had summed one more, off the chart's left edge).
     */
    static final NamedSql MINUTES = NamedSql.of("""
            SELECT tenant_id, minute, started, succeeded, failed, dead, busy_ms, pending, ready, running,
                   oldest_pending_age_ms
            FROM tenant_minute_stats
            WHERE tenant_id = :tenant AND minute > date_trunc('minute', :now - :since_ms * interval '1 millisecond')
            ORDER BY minute
            """);

    public List<MinuteStats> minuteStats(DSLContext ctx, String tenantId, Duration since) {
        // plain JDBC: up to 60 rows on every dashboard refresh (see NamedSql.Binding#query)
        return MINUTES.bind().clock(clock).set("tenant", tenantId).set("since_ms", since.toMillis()).query(ctx, rs ->
                new MinuteStats(rs.getString(1), rs.getObject(2, java.time.OffsetDateTime.class), rs.getInt(3),
                        rs.getInt(4), rs.getInt(5), rs.getInt(6), rs.getLong(7), rs.getObject(8, Integer.class),
                        rs.getObject(9, Integer.class), rs.getObject(10, Integer.class), rs.getObject(11, Long.class)));
    }

    /**
     * A tenant's rollup totals over a window, its worker time and starts over a shorter recent window, and its
     * start rate over the current and the previous minute (as of the last rollup, at most 10 s ago).
     */
    public record RollupTotals(long started, long succeeded, long failed, long dead, long busyMs, long busyMsRecent,
                               long startedRecent, double startRatePerSecond) {
        public static final RollupTotals NONE = new RollupTotals(0, 0, 0, 0, 0, 0, 0, 0);
    }

    private static final String START_OF_PREVIOUS = "date_trunc('minute', :now) - interval '1 minute'";
    private static final String COUNTED_THROUGH = "max(updated_at) FILTER (WHERE minute >= " + START_OF_PREVIOUS + ")";
    private static final String START_OF_RECENT = "date_trunc('minute', :now - :recent_ms * interval '1 millisecond')";
    /**
     * A tenant's sums over its rows of the window, in {@link RollupTotals}'s order: one text for {@link #TOTALS}
     * and {@link #TENANT_HEAD}, which had each written them (and the start rate's denominator twice each).
     */
    static final String SUMS = "\n"
            + "  sum(started) AS started, sum(succeeded) AS succeeded, sum(failed) AS failed, sum(dead) AS dead,\n"
            + "  sum(busy_ms) AS busy_ms,\n"
            + "  coalesce(sum(busy_ms) FILTER (WHERE minute >= " + START_OF_RECENT + "), 0) AS busy_ms_recent,\n"
            + "  coalesce(sum(started) FILTER (WHERE minute >= " + START_OF_RECENT + "), 0) AS started_recent,\n"
            + "  coalesce(sum(started) FILTER (WHERE minute >= " + START_OF_PREVIOUS + "), 0)\n"
            + "    / greatest(1, fairq_epoch(CASE WHEN " + COUNTED_THROUGH + " >= :now - interval '15 seconds'\n"
            + "                                   THEN " + COUNTED_THROUGH + " ELSE :now END)\n"
            + "                  - fairq_epoch(" + START_OF_PREVIOUS + ")) AS start_rate\n";

    /**
     * Per tenant, sums over the window (the current minute and the ones before it, as many as the window has:
     * the chart's minutes, {@link #MINUTES}): at most one row per minute of the window per tenant named, on the
     * primary key (tenant_id, minute). The recent sums count whole minutes from the start of the minute
     * {@code recent} ago, as GET /v1/stats does. The start rate divides the starts of the previous and the current
     * minute by the time they cover: up to the last run that counted the tenant (its rows' updated_at, the run's
     * upto) when that run was the latest one (within 15 s: a run every 10 s), else up to now (nothing counted
     * since, so the rate decays). Up to now always, a steady 10 starts/s read 8.0/s just after a minute turned.
     */
    static final NamedSql TOTALS = NamedSql.of("""
            SELECT tenant_id, """ + SUMS + """
            FROM tenant_minute_stats
            WHERE tenant_id = ANY(:tenant_ids::text[])
              AND minute > date_trunc('minute', :now - :window_ms * interval '1 millisecond')
            GROUP BY tenant_id
            """);

    /**
     * The head of a tenant dashboard in one round trip: the tenant's row, the database clock, its live figures
     * ({@link JobQueries#LIVE_COLUMNS}), its {@link #TOTALS} and whether it has schedules. Four statements
     * before (five round trips with the clock); the figures are the same, and all of one snapshot now.
     */
    static final NamedSql TENANT_HEAD = NamedSql.of("""
            SELECT t.*, :now AS db_now,
            """ + JobQueries.LIVE_COLUMNS + """
                   , coalesce(h.started, 0) AS h_started, coalesce(h.succeeded, 0) AS h_succeeded,
                   coalesce(h.failed, 0) AS h_failed, coalesce(h.dead, 0) AS h_dead, coalesce(h.busy_ms, 0) AS h_busy_ms,
                   h.busy_ms_recent AS h_busy_ms_recent, h.started_recent AS h_started_recent, h.start_rate AS h_start_rate,
                   EXISTS (SELECT 1 FROM schedules s WHERE s.tenant_id = :tenant) AS has_schedules
            FROM tenants t CROSS JOIN LATERAL (
                SELECT """ + SUMS + """
                FROM tenant_minute_stats
                WHERE tenant_id = :tenant AND minute > date_trunc('minute', :now - :window_ms * interval '1 millisecond')
            ) h
            WHERE t.id = :tenant
            """);

    /** What {@link #TENANT_HEAD} reads; {@code live}'s recent counts are 0 (the dashboard shows the hour's). */
    public record TenantHead(OffsetDateTime now, TenantsRecord tenant, JobQueries.TenantStats live, RollupTotals totals,
                             boolean hasSchedules) {}

    /** The tenant's head figures; empty when there is no such tenant. */
    public java.util.Optional<TenantHead> tenantHead(DSLContext ctx, String tenantId, Duration window, Duration recent) {
        return TENANT_HEAD.bind().clock(clock).set("tenant", tenantId).set("window_ms", window.toMillis())
                .set("recent_ms", recent.toMillis()).query(ctx, rs -> new TenantHead(rs.getObject("db_now", OffsetDateTime.class),
                        TenantStore.record(rs), JobQueries.liveStats(rs, 0, 0),
                        new RollupTotals(rs.getLong("h_started"), rs.getLong("h_succeeded"), rs.getLong("h_failed"),
                                rs.getLong("h_dead"), rs.getLong("h_busy_ms"), rs.getLong("h_busy_ms_recent"),
                                rs.getLong("h_started_recent"), rs.getDouble("h_start_rate")),
                        rs.getBoolean("has_schedules"))).stream().findFirst();
    }

    /** The totals of the given tenants (absent: no row in the window). */
    public Map<String, RollupTotals> rollupTotals(DSLContext ctx, Collection<String> tenants, Duration window, Duration recent) {
        Map<String, RollupTotals> out = new HashMap<>();
        if (tenants.isEmpty()) return out;
        for (Record r : TOTALS.bind().clock(clock).set("recent_ms", recent.toMillis()).set("window_ms", window.toMillis())
                .set("tenant_ids", tenants.toArray(String[]::new)).fetch(ctx)) {
            out.put(r.get(0, String.class), new RollupTotals(r.get(1, Long.class), r.get(2, Long.class),
                    r.get(3, Long.class), r.get(4, Long.class), r.get(5, Long.class), r.get(6, Long.class),
                    r.get(7, Long.class), r.get(8, Double.class)));
        }
        return out;
    }

    /**
     * What the admin overview sorts by, per tenant active in the recent window (a row in the rollup: something
     * ran, or jobs waited): worker time and starts in the window, and the latest depth snapshot. Cost: the
     * active tenants' rows of the window (at most one per minute each), never the tenants table.
     */
    public record Activity(String tenantId, int weight, boolean paused, long busyMs, long started, long pending,
                           long ready, long running) {}

    static final NamedSql ACTIVITY = NamedSql.of("""
            WITH recent AS (
                SELECT s.tenant_id, sum(s.busy_ms) AS busy, sum(s.started) AS started,
                       (array_agg(s.pending ORDER BY s.minute DESC) FILTER (WHERE s.pending IS NOT NULL))[1] AS pending,
                       (array_agg(s.ready ORDER BY s.minute DESC) FILTER (WHERE s.pending IS NOT NULL))[1] AS ready,
                       (array_agg(s.running ORDER BY s.minute DESC) FILTER (WHERE s.pending IS NOT NULL))[1] AS running
                FROM tenant_minute_stats s
                WHERE s.minute >= date_trunc('minute', :now - :window_ms * interval '1 millisecond')
                  AND (:tenant_ids::text[] IS NULL OR s.tenant_id = ANY(:tenant_ids::text[]))
                GROUP BY s.tenant_id
            )
            SELECT r.tenant_id, t.weight, t.paused, coalesce(r.busy, 0), coalesce(r.started, 0),
                   coalesce(r.pending, 0), coalesce(r.ready, 0), coalesce(r.running, 0)
            FROM recent r JOIN tenants t ON t.id = r.tenant_id
            """);

    /** The activity of every tenant active in the window ({@code tenants} null), or of the tenants named. */
    public List<Activity> activity(DSLContext ctx, Duration window, Collection<String> tenants) {
        List<Activity> out = new ArrayList<>();
        for (Record r : ACTIVITY.bind().clock(clock).set("window_ms", window.toMillis())
                .set("tenant_ids", tenants == null ? null : tenants.toArray(String[]::new)).fetch(ctx)) {
            out.add(new Activity(r.get(0, String.class), r.get(1, Integer.class), r.get(2, Boolean.class),
                    r.get(3, Long.class), r.get(4, Long.class), r.get(5, Long.class), r.get(6, Long.class),
                    r.get(7, Long.class)));
        }
        return out;
    }

    /**
     * A tenant's running jobs, longest running first, with their age on the database clock. At most
     * max_running rows, found on jobs_tenant_status_idx; the sort is over those few.
     */
    static final NamedSql RUNNING = NamedSql.of("""
            SELECT id, type, queue, attempts, max_attempts, ordering_key, started_at,
                   round((fairq_epoch(:now) - fairq_epoch(started_at)) * 1000)
            FROM jobs WHERE tenant_id = :tenant AND status = 'running'
            ORDER BY started_at LIMIT :limit
            """);

    public record RunningJob(long id, String type, String queue, int attempts, int maxAttempts, String orderingKey,
                             java.time.OffsetDateTime startedAt, long ageMs) {}

    public List<RunningJob> runningJobs(DSLContext ctx, String tenantId, int limit) {
        List<RunningJob> out = new ArrayList<>();
        for (Record r : RUNNING.bind().clock(clock).set("tenant", tenantId).set("limit", limit).fetch(ctx)) {
            Double age = r.get(7, Double.class);
            out.add(new RunningJob(r.get(0, Long.class), r.get(1, String.class), r.get(2, String.class),
                    r.get(3, Integer.class), r.get(4, Integer.class), r.get(5, String.class),
                    r.get(6, java.time.OffsetDateTime.class), age == null ? 0 : age.longValue()));
        }
        return out;
    }
}
