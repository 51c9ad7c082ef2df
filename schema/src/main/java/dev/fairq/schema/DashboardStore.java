package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The dashboards' SQL: the per-minute rollup the active scheduler writes (idempotently) and prunes, and the
 * figures the dashboard pages read. Kept apart from {@link JobStore}, whose SQL moves jobs through their life
 * cycle; this class only reads jobs and writes tenant_minute_stats.
 */
public final class DashboardStore {

    /**
     * Recomputes the last {@code minutes} minutes (the current one included) of every tenant from the jobs
     * table and upserts them into tenant_minute_stats. Idempotent: each value is a count over the jobs table
     * for that minute, written with ON CONFLICT DO UPDATE SET x = excluded.x, never x = x + n, so a second run
     * (or a second scheduler after a fail-over) writes the same numbers. A minute older than the window is no
     * longer touched: its numbers are the ones seen while it was recent, so later retries or deletions by
     * retention do not rewrite history.
     *
     * <p>Per tenant and minute, every count is an index range: retried failures on jobs_tenant_failed_idx,
     * succeeded and dead on jobs_tenant_finished_idx (tenant_id, status, finished_at); started attempts are
     * those same ranges over the whole window plus the running jobs (jobs_lease_idx), grouped by minute. The
     * cost is the jobs that moved in the window, never the backlog or the retention. The
     * depth snapshot counts pending on jobs_tenant_status_idx (the only part that grows with the backlog,
     * as the metrics scrape does) and ready/running on the small claim and lease indexes and the oldest pending job is one probe of the same index. It
     * is written only into the current minute; a past minute keeps the last depth seen during it (coalesce),
     * null if no rollup ran then. A tenant gets a row only when something happened or waits, or when it
     * already has one for that minute (so a count that drops to zero is rewritten, not left stale).
     */
    private static final String ROLLUP = """
            WITH win AS (
                SELECT date_trunc('minute', now()) - (?::integer - 1) * interval '1 minute' AS since
            ), mins AS (
                SELECT g.m, g.m + interval '1 minute' AS m_end, g.m = date_trunc('minute', now()) AS current
                FROM win, generate_series(win.since, date_trunc('minute', now()), interval '1 minute') AS g(m)
            ), starts AS MATERIALIZED (
                -- No index on started_at (see STARTS): a job whose latest attempt started in the window has
                -- since finished, or failed and waits to retry, or is running.
                SELECT s.tenant_id, date_trunc('minute', s.started_at) AS m, count(*) AS n
                FROM (
                    SELECT t.id AS tenant_id, x.started_at
                    FROM tenants t, win CROSS JOIN LATERAL (
                        SELECT j.started_at FROM jobs j
                        WHERE j.tenant_id = t.id AND j.status IN ('succeeded', 'dead', 'cancelled')
                          AND j.finished_at >= win.since
                        UNION ALL
                        SELECT j.started_at FROM jobs j
                        WHERE j.tenant_id = t.id AND j.failed_at >= win.since AND j.status IN ('pending', 'ready')
                    ) x
                    UNION ALL
                    SELECT j.tenant_id, j.started_at FROM jobs j WHERE j.status = 'running'
                ) s, win
                WHERE s.started_at >= win.since
                GROUP BY 1, 2
            ), counts AS (
                SELECT t.id AS tenant_id, mi.m, mi.current,
                       coalesce(st.n, 0) AS started,
                       ok.n AS succeeded, dd.n AS dead, fl.n AS failed,
                       coalesce(ok.ms, 0) + coalesce(dd.ms, 0) + coalesce(fl.ms, 0) AS busy_ms
                FROM tenants t CROSS JOIN mins mi
                LEFT JOIN starts st ON st.tenant_id = t.id AND st.m = mi.m
                CROSS JOIN LATERAL (
                    SELECT count(*) AS n, sum(fairq_epoch(j.finished_at) - fairq_epoch(j.started_at)) * 1000 AS ms
                    FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'succeeded'
                                  AND j.finished_at >= mi.m AND j.finished_at < mi.m_end) ok
                CROSS JOIN LATERAL (
                    SELECT count(*) AS n, sum(fairq_epoch(j.finished_at) - fairq_epoch(j.started_at)) * 1000 AS ms
                    FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'dead'
                                  AND j.finished_at >= mi.m AND j.finished_at < mi.m_end) dd
                CROSS JOIN LATERAL (
                    -- started_at after failed_at: the retry already started again, that attempt's time is lost
                    SELECT count(*) AS n,
                           sum(CASE WHEN j.started_at <= j.failed_at
                                    THEN fairq_epoch(j.failed_at) - fairq_epoch(j.started_at) END) * 1000 AS ms
                    FROM jobs j WHERE j.tenant_id = t.id AND j.failed_at >= mi.m AND j.failed_at < mi.m_end) fl
            ), depth AS (
                SELECT t.id AS tenant_id,
                       (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'pending') AS pending,
                       (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'ready') AS ready,
                       (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'running') AS running,
                       (SELECT (fairq_epoch(now()) - fairq_epoch(j.created_at)) * 1000 FROM jobs j
                        WHERE j.tenant_id = t.id AND j.status = 'pending' ORDER BY j.id LIMIT 1) AS oldest
                FROM tenants t
            )
            INSERT INTO tenant_minute_stats AS r (tenant_id, minute, started, succeeded, failed, dead, busy_ms,
                                                  pending, ready, running, oldest_pending_age_ms, updated_at)
            SELECT c.tenant_id, c.m, c.started, c.succeeded, c.failed, c.dead, round(c.busy_ms),
                   CASE WHEN c.current THEN d.pending END, CASE WHEN c.current THEN d.ready END,
                   CASE WHEN c.current THEN d.running END, CASE WHEN c.current THEN round(d.oldest) END, now()
            FROM counts c JOIN depth d USING (tenant_id)
            WHERE c.started + c.succeeded + c.failed + c.dead > 0
               OR (c.current AND d.pending + d.ready + d.running > 0)
               OR EXISTS (SELECT 1 FROM tenant_minute_stats x WHERE x.tenant_id = c.tenant_id AND x.minute = c.m)
            ON CONFLICT (tenant_id, minute) DO UPDATE
            SET started = excluded.started, succeeded = excluded.succeeded, failed = excluded.failed,
                dead = excluded.dead, busy_ms = excluded.busy_ms,
                pending = coalesce(excluded.pending, r.pending), ready = coalesce(excluded.ready, r.ready),
                running = coalesce(excluded.running, r.running),
                oldest_pending_age_ms = CASE WHEN excluded.pending IS NULL THEN r.oldest_pending_age_ms
                                             ELSE excluded.oldest_pending_age_ms END,
                updated_at = excluded.updated_at
            """;

    /** Recomputes the last {@code minutes} minutes (at least 1: the current one) for all tenants; returns rows written. */
    public int rollupMinutes(DSLContext ctx, int minutes) {
        return ctx.execute(ROLLUP, Math.max(1, minutes));
    }

    /** Retention of the rollup: tenant_minute_stats_minute_idx finds the old minutes. */
    public int pruneRollup(DSLContext ctx, Duration retention) {
        return ctx.execute("DELETE FROM tenant_minute_stats WHERE minute < now() - ? * interval '1 millisecond'",
                retention.toMillis());
    }

    /** One tenant's minute. Depth fields are null when no rollup ran during that minute. */
    public record MinuteStats(String tenantId, java.time.OffsetDateTime minute, int started, int succeeded, int failed,
                              int dead, long busyMs, Integer pending, Integer ready, Integer running,
                              Long oldestPendingAgeMs) {}

    /** A tenant's minutes since {@code since} ago, oldest first: a range of the primary key (tenant_id, minute). */
    private static final String MINUTES = """
            SELECT tenant_id, minute, started, succeeded, failed, dead, busy_ms, pending, ready, running,
                   oldest_pending_age_ms
            FROM tenant_minute_stats
            WHERE tenant_id = ? AND minute >= date_trunc('minute', now() - ? * interval '1 millisecond')
            ORDER BY minute
            """;

    public List<MinuteStats> minuteStats(DSLContext ctx, String tenantId, Duration since) {
        List<MinuteStats> out = new ArrayList<>();
        for (Record r : ctx.resultQuery(MINUTES, tenantId, since.toMillis()).fetch()) {
            out.add(new MinuteStats(r.get(0, String.class), r.get(1, java.time.OffsetDateTime.class),
                    r.get(2, Integer.class), r.get(3, Integer.class), r.get(4, Integer.class), r.get(5, Integer.class),
                    r.get(6, Long.class), r.get(7, Integer.class), r.get(8, Integer.class), r.get(9, Integer.class),
                    r.get(10, Long.class)));
        }
        return out;
    }

    /** A tenant's rollup totals over a window, and its worker time over a shorter recent window. */
    public record RollupTotals(long started, long succeeded, long failed, long dead, long busyMs, long busyMsRecent,
                               long startedRecent) {
        public static final RollupTotals NONE = new RollupTotals(0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * Per tenant, sums over the window; a range of tenant_minute_stats_minute_idx (tenants x minutes rows,
     * at most 60 per tenant for an hour). {@code tenantId} null: every tenant (admin).
     */
    private static final String TOTALS = """
            SELECT tenant_id, sum(started), sum(succeeded), sum(failed), sum(dead), sum(busy_ms),
                   coalesce(sum(busy_ms) FILTER (WHERE minute >= date_trunc('minute', now() - ? * interval '1 millisecond')), 0),
                   coalesce(sum(started) FILTER (WHERE minute >= date_trunc('minute', now() - ? * interval '1 millisecond')), 0)
            FROM tenant_minute_stats
            WHERE minute >= date_trunc('minute', now() - ? * interval '1 millisecond')
              AND (?::text IS NULL OR tenant_id = ?)
            GROUP BY tenant_id
            """;

    public Map<String, RollupTotals> rollupTotals(DSLContext ctx, String tenantIdOrNull, Duration window, Duration recent) {
        Map<String, RollupTotals> out = new HashMap<>();
        for (Record r : ctx.resultQuery(TOTALS, recent.toMillis(), recent.toMillis(), window.toMillis(), tenantIdOrNull, tenantIdOrNull).fetch()) {
            out.put(r.get(0, String.class), new RollupTotals(r.get(1, Long.class), r.get(2, Long.class),
                    r.get(3, Long.class), r.get(4, Long.class), r.get(5, Long.class), r.get(6, Long.class), r.get(7, Long.class)));
        }
        return out;
    }

    /**
     * Attempts started per tenant in the last {@code window} (live, for the start rate against
     * rate_per_second). There is no index on started_at on purpose: it took an entry at every claim and
     * another at every completion, the two hottest writes of the queue (V6; see bench/RESULTS.md). A job
     * whose latest attempt started in the window has since finished (jobs_tenant_finished_idx), or failed
     * and waits to retry (jobs_tenant_failed_idx), or is running (the small jobs_lease_idx, read once).
     * {@code tenantId} null: all tenants.
     */
    private static final String STARTS = """
            WITH w AS (
                SELECT now() - ? * interval '1 millisecond' AS since
            ), running AS MATERIALIZED (
                SELECT j.tenant_id, count(*) AS n FROM jobs j, w
                WHERE j.status = 'running' AND j.started_at > w.since GROUP BY j.tenant_id
            )
            SELECT t.id,
                   (SELECT count(*) FROM jobs j
                    WHERE j.tenant_id = t.id AND j.status IN ('succeeded', 'dead', 'cancelled')
                      AND j.finished_at > w.since AND j.started_at > w.since)
                 + (SELECT count(*) FROM jobs j
                    WHERE j.tenant_id = t.id AND j.failed_at > w.since AND j.status IN ('pending', 'ready')
                      AND j.started_at > w.since)
                 + coalesce((SELECT r.n FROM running r WHERE r.tenant_id = t.id), 0)
            FROM tenants t, w WHERE ?::text IS NULL OR t.id = ?
            """;

    public Map<String, Long> startsSince(DSLContext ctx, String tenantIdOrNull, Duration window) {
        Map<String, Long> out = new HashMap<>();
        for (Record r : ctx.resultQuery(STARTS, window.toMillis(), tenantIdOrNull, tenantIdOrNull).fetch()) {
            out.put(r.get(0, String.class), r.get(1, Long.class));
        }
        return out;
    }

    /**
     * A tenant's running jobs, longest running first, with their age on the database clock. At most
     * max_running rows, found on jobs_tenant_status_idx; the sort is over those few.
     */
    private static final String RUNNING = """
            SELECT id, type, queue, attempts, max_attempts, ordering_key, started_at,
                   round((fairq_epoch(now()) - fairq_epoch(started_at)) * 1000)
            FROM jobs WHERE tenant_id = ? AND status = 'running'
            ORDER BY started_at LIMIT ?
            """;

    public record RunningJob(long id, String type, String queue, int attempts, int maxAttempts, String orderingKey,
                             java.time.OffsetDateTime startedAt, long ageMs) {}

    public List<RunningJob> runningJobs(DSLContext ctx, String tenantId, int limit) {
        List<RunningJob> out = new ArrayList<>();
        for (Record r : ctx.resultQuery(RUNNING, tenantId, limit).fetch()) {
            Double age = r.get(7, Double.class);
            out.add(new RunningJob(r.get(0, Long.class), r.get(1, String.class), r.get(2, String.class),
                    r.get(3, Integer.class), r.get(4, Integer.class), r.get(5, String.class),
                    r.get(6, java.time.OffsetDateTime.class), age == null ? 0 : age.longValue()));
        }
        return out;
    }
}
