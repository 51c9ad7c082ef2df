package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.fairq.schema.generated.Tables.JOBS;

/**
 * The API's read-only SQL: job listings (keyset pages), a tenant's numbers, queue depths for the metrics,
 * blocked ordering keys, an ordering key's head, how many jobs go before one (explain), and the database
 * clock. Nothing here changes a job; the queue's life cycle is in {@link JobStore}, the dashboards' rollup in
 * {@link DashboardStore}. Stateless: construct it where it is needed.
 */
public final class JobQueries {

    /** Filters of a job listing; null means any. */
    public record JobFilter(String tenantId, JobStatus status, String queue, String type, String orderingKey) {}

    /**
     * One keyset page, newest first: {@code id < afterId}. With a tenant and a status this walks
     * jobs_tenant_status_idx; with a tenant alone it walks the same index once per status and merges the
     * newest (six short probes, so the hot table needs no second full (tenant_id, id) index, which every
     * status change would have to update); for an admin without a tenant, the primary key. queue, type and
     * ordering_key filter the rows walked. A page never uses OFFSET, so page 1000 costs what page 1 costs.
     */
    public List<JobsRecord> list(DSLContext ctx, JobFilter f, Long afterId, int limit) {
        var c = org.jooq.impl.DSL.noCondition();
        if (f.queue() != null) c = c.and(JOBS.QUEUE.eq(f.queue()));
        if (f.type() != null) c = c.and(JOBS.TYPE.eq(f.type()));
        if (f.orderingKey() != null) c = c.and(JOBS.ORDERING_KEY.eq(f.orderingKey()));
        if (f.tenantId() == null) {
            if (afterId != null) c = c.and(JOBS.ID.lt(afterId));
            if (f.status() != null) c = c.and(statusIs(f.status()));
            return oneStatusPage(ctx, c, limit).fetch();
        }
        if (f.status() != null) return tenantStatusPage(ctx, c, f.tenantId(), f.status(), afterId, limit).fetch();
        org.jooq.Select<JobsRecord> union = null;
        for (JobStatus status : JobStatus.values()) {
            var one = tenantStatusPage(ctx, c, f.tenantId(), status, afterId, limit);
            union = union == null ? one : union.unionAll(one);
        }
        var all = union.asTable("j");
        return ctx.selectFrom(all).orderBy(all.field(JOBS.ID).desc()).limit(limit).fetchInto(JOBS);
    }

    /**
     * Index entries a filtered page may walk per status it pages through. queue, type and ordering_key are not in
     * any index of finished jobs (one more index on the hot table would cost every insert and status change), so a
     * page filtered on them walked the tenant's history until it had its rows: GET /v1/jobs?type=(a type it never
     * used) read every job of the retention window at every call (400,000 of a tenant's jobs: 73-128 ms, a
     * parallel scan of the whole table, PG15 here). Bounded, a page reads at most 10,000 rows per status (19-28 ms
     * for the same) and may hold fewer rows than asked, even none, with a {@code next} to go on from.
     */
    public static final int FILTERED_SCAN = 10_000;

    /** One page of {@link #page}: at most the limit, newest first; {@code next} is the next page's afterId, null at the end. */
    public record Page(List<JobsRecord> jobs, Long next) {}

    /**
     * A keyset page as {@link #list}, for the API. With a queue, type or ordering_key filter, each status range is
     * walked for at most {@link #FILTERED_SCAN} entries: the rows that match among what was walked are the page
     * (ids at or above the highest place where a capped range stopped, so the page and the next one leave no gap),
     * and {@code next} goes on from there when a range was cut.
     */
    public Page page(DSLContext ctx, JobFilter f, Long afterId, int limit) {
        if (f.queue() == null && f.type() == null && f.orderingKey() == null) {
            List<JobsRecord> rows = list(ctx, f, afterId, limit + 1);
            if (rows.size() <= limit) return new Page(rows, null);
            return new Page(rows.subList(0, limit), rows.get(limit - 1).getId());
        }
        List<Object> args = new ArrayList<>();
        StringBuilder hit = new StringBuilder("true");
        List<Object> hitArgs = new ArrayList<>();
        if (f.queue() != null) { hit.append(" AND j.queue = ?"); hitArgs.add(f.queue()); }
        if (f.type() != null) { hit.append(" AND j.type = ?"); hitArgs.add(f.type()); }
        if (f.orderingKey() != null) { hit.append(" AND j.ordering_key = ?"); hitArgs.add(f.orderingKey()); }
        List<JobStatus> statuses = f.status() != null ? List.of(f.status())
                : f.tenantId() != null ? List.of(JobStatus.values()) : java.util.Collections.singletonList(null);
        StringBuilder ranges = new StringBuilder();
        for (int n = 0; n < statuses.size(); n++) {
            StringBuilder where = new StringBuilder("true");
            String order = "j.id DESC";
            // the status written into the statement, as statusIs explains: jobs_tenant_status_idx is partial
            String status = statuses.get(n) == null ? null : "'" + statuses.get(n).getLiteral() + "'";
            List<Object> whereArgs = new ArrayList<>();
            if (f.tenantId() != null) {
                // one range of jobs_tenant_status_idx, bounded and ordered as tenantStatusPage explains (with
                // j.tenant_id = ? the primary key was walked backwards through every newer job instead)
                where.append(" AND (j.tenant_id, j.status) >= (?, ").append(status).append(")");
                whereArgs.add(f.tenantId());
                if (afterId != null) {
                    where.append(" AND (j.tenant_id, j.status, j.id) < (?, ").append(status).append(", ?)");
                    whereArgs.add(f.tenantId());
                    whereArgs.add(afterId);
                } else {
                    where.append(" AND (j.tenant_id, j.status) <= (?, ").append(status).append(")");
                    whereArgs.add(f.tenantId());
                }
                order = "j.tenant_id DESC, j.id DESC";
            } else if (afterId != null) {
                where.append(" AND j.id < ?");
                whereArgs.add(afterId);
            }
            if (status != null) where.append(" AND j.status = ").append(status);
            if (n > 0) ranges.append(" UNION ALL ");
            ranges.append("SELECT ").append(n).append(" AS n, x.* FROM (SELECT j.id, (").append(hit).append(") AS hit FROM jobs j WHERE ")
                    .append(where).append(" ORDER BY ").append(order).append(" LIMIT ").append(FILTERED_SCAN).append(") x");
            args.addAll(hitArgs);
            args.addAll(whereArgs);
        }
        String sql = "WITH walked AS MATERIALIZED (" + ranges + "), "
                + "edge AS (SELECT max(low) AS b FROM (SELECT min(id) AS low FROM walked GROUP BY n HAVING count(*) = "
                + FILTERED_SCAN + ") g) "
                + "SELECT (SELECT b FROM edge), array(SELECT w.id FROM walked w WHERE w.hit AND w.id >= coalesce((SELECT b FROM edge), 0) "
                + "ORDER BY w.id DESC LIMIT ?)";
        args.add(limit + 1);
        // sorts off for this read only (its transaction): with statistics that expect a tenant's status range to be
        // small (analysed before a flood), the walk of up to FILTERED_SCAN rows was planned as a bitmap read of the
        // whole range, sorted (905,151 rows for one tenant's succeeded jobs, 0.98 s); the ordered index walk is the
        // plan that needs no sort
        Record r = ctx.transactionResult(c -> {
            c.dsl().execute("SET LOCAL enable_sort = off");
            return c.dsl().fetchOne(sql, args.toArray());
        });
        Long edge = r.get(0, Long.class);
        Long[] ids = r.get(1, Long[].class);
        List<JobsRecord> rows = ids.length == 0 ? List.of()
                : ctx.selectFrom(JOBS).where(JOBS.ID.in(java.util.Arrays.asList(ids))).orderBy(JOBS.ID.desc()).fetch();
        // a row the retention deleted meanwhile is missing from rows; the page's end is still the ids'
        if (ids.length > limit) {
            List<JobsRecord> kept = new ArrayList<>();
            for (JobsRecord j : rows) if (j.getId() >= ids[limit - 1]) kept.add(j);
            return new Page(kept, ids[limit - 1]);
        }
        return new Page(rows, edge);
    }

    static org.jooq.ResultQuery<JobsRecord> oneStatusPage(DSLContext ctx, org.jooq.Condition c, int limit) {
        return ctx.selectFrom(JOBS).where(c).orderBy(JOBS.ID.desc()).limit(limit);
    }

    /** A tenant's jobs of one status, newest first: what {@link #list} runs with a tenant and a status. */
    static org.jooq.ResultQuery<JobsRecord> tenantStatusPage(DSLContext ctx, String tenantId, JobStatus status, int limit) {
        return tenantStatusPage(ctx, org.jooq.impl.DSL.noCondition(), tenantId, status, null, limit);
    }

    /**
     * A tenant's jobs of one status below {@code afterId} (null: from the newest), newest first, as one range of
     * jobs_tenant_status_idx (of the small claim or lease index for ready or running jobs). The tenant is bounded by
     * row comparisons, not {@code tenant_id = ?}, and the rows ordered by (tenant_id, id): with an equality the order is
     * the id alone, which the primary key gives too, and the planner walked it backwards through every newer job of any
     * tenant and status until it had the page (it expects the tenant's rows spread evenly over the ids). On 1.2M jobs,
     * 1M of them one tenant's finished ones (PostgreSQL 15): its succeeded page read 339,951 rows (77 ms) past its
     * 200,000 newer waiting jobs, and a page of its history (after an old id) read every job below it for each status
     * with none there (1,000,357 rows, 456 ms). Now the page's rows, or the ready or running ones.
     */
    static org.jooq.SelectLimitPercentStep<JobsRecord> tenantStatusPage(DSLContext ctx, org.jooq.Condition filter,
                                                                        String tenantId, JobStatus status, Long afterId,
                                                                        int limit) {
        return ctx.selectFrom(JOBS).where(filter.and(tenantStatusRange(JOBS, tenantId, status, afterId)))
                .orderBy(JOBS.TENANT_ID.desc(), JOBS.ID.desc()).limit(limit);
    }

    /**
     * The tenant's jobs of one status below {@code afterId} (null: all), as {@link #tenantStatusPage} bounds them: the
     * row comparisons stop a backward walk of jobs_tenant_status_idx at the tenant and status, and the status is also
     * written as an equality (inline, see {@link #statusIs}) so that the partial index is seen to apply.
     */
    static org.jooq.Condition tenantStatusRange(dev.fairq.schema.generated.tables.Jobs j, String tenantId, JobStatus status,
                                                Long afterId) {
        var tenant = org.jooq.impl.DSL.val(tenantId);
        var st = org.jooq.impl.DSL.inline(status);
        var upper = afterId == null ? org.jooq.impl.DSL.row(j.TENANT_ID, j.STATUS).le(tenant, st)
                : org.jooq.impl.DSL.row(j.TENANT_ID, j.STATUS, j.ID).lt(tenant, st, org.jooq.impl.DSL.val(afterId));
        return org.jooq.impl.DSL.row(j.TENANT_ID, j.STATUS).ge(tenant, st).and(upper).and(j.STATUS.eq(st));
    }

    /**
     * The status written into the statement, not bound: jobs_tenant_status_idx is partial (not ready, not
     * running), and a generic plan with the status as a parameter cannot prove that, so it walked the primary key
     * backwards through the tenant's history instead. Measured with 1,000,000 of a tenant's finished jobs: the
     * dashboard's dead-letter list took 670 ms a call (tenants bench, stats phase).
     */
    private static org.jooq.Condition statusIs(JobStatus status) {
        return JOBS.STATUS.eq(org.jooq.impl.DSL.inline(status));
    }

    /** A tenant's own numbers. {@code oldestPendingAgeMs} is null when nothing is pending. */
    public record TenantStats(long pending, long ready, long running, long succeededRecent, long deadRecent,
                              long deadTotal, Long oldestPendingAgeMs, long blockedOrderingKeys) {}

    /**
     * A tenant's live figures: what waits, runs and is dead now, never its history. pending and dead are
     * index-only ranges of jobs_tenant_status_idx (bounded by max_queued and the dead-letter queue), ready and
     * running ranges of the small claim and lease indexes, the oldest pending job one probe (ids grow with
     * time), blocked keys the small jobs_blocked_keys_idx.
     */
    static final String LIVE_COLUMNS = """
            (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'pending') AS live_pending,
            (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'ready') AS live_ready,
            (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'running') AS live_running,
            (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'dead') AS live_dead,
            (SELECT (fairq_epoch(now()) - fairq_epoch(created_at)) * 1000 FROM jobs
             WHERE tenant_id = :tenant AND status = 'pending' ORDER BY id LIMIT 1) AS live_oldest_pending_ms,
            (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND key_head AND status = 'dead') AS live_blocked_keys
            """;

    /** Live figures read by {@link #LIVE_COLUMNS} (the column names it gives them), from a plain JDBC row. */
    static TenantStats liveStats(java.sql.ResultSet rs, long succeededRecent, long deadRecent) throws java.sql.SQLException {
        double age = rs.getDouble("live_oldest_pending_ms");
        Long ageMs = rs.wasNull() ? null : Math.round(age);
        return new TenantStats(rs.getLong("live_pending"), rs.getLong("live_ready"), rs.getLong("live_running"),
                succeededRecent, deadRecent, rs.getLong("live_dead"), ageMs, rs.getLong("live_blocked_keys"));
    }

    /**
     * Succeeded and dead in the recent minutes: what the dashboard rollup counted (tenant_minute_stats, a
     * handful of rows, refreshed every 10 s), plus the jobs that finished since that rollup ran (a range of
     * jobs_tenant_finished_idx after the rollup's time, so at most 10 s of the tenant's completions). Exact,
     * and independent of how many jobs the tenant ran before: counting the whole window in the jobs table
     * cost a range of every job finished in it, 205 ms per call at 180,000 recent jobs. The window is whole
     * minutes: from the start of the minute {@code window} ago.
     *
     * <p>"Since that rollup" is the time the latest minute's row carries (what its run counted through, see
     * DashboardStore#COMMIT_LAG), not the latest time of any row: a run recounts every minute of its window with
     * one time, and a minute it no longer recounts is final (its time lies after the minute's end), but a test's or
     * tool's rollup (rollupMinutes, through its own time) could leave an older minute's row later than the
     * current minute's row a scheduler run rewrote just after, and the completions between the two times were
     * then counted by neither. Never before the window.
     *
     * <p>With the live figures ({@link #LIVE_COLUMNS}) and the tenant's row, in one round trip: what GET /v1/stats
     * answers. Three statements took three round trips of the API's pool per call, each about as costly in CPU
     * (parse, bind, protocol, on both sides) as the index ranges they read.
     */
    static final NamedSql STATS = NamedSql.of("""
            WITH r AS (
                SELECT coalesce(sum(succeeded), 0) AS succeeded, coalesce(sum(dead), 0) AS dead,
                       (array_agg(updated_at ORDER BY minute DESC))[1] AS rolled_at,
                       date_trunc('minute', now() - :window_ms * interval '1 millisecond') AS since
                FROM tenant_minute_stats
                WHERE tenant_id = :tenant AND minute >= date_trunc('minute', now() - :window_ms * interval '1 millisecond')
            )
            SELECT t.*,
            """ + LIVE_COLUMNS + """
                   , r.succeeded + (SELECT count(*) FROM jobs j WHERE j.tenant_id = :tenant AND j.status = 'succeeded'
                                      AND j.finished_at > greatest(r.rolled_at, r.since)) AS recent_succeeded,
                   r.dead + (SELECT count(*) FROM jobs j WHERE j.tenant_id = :tenant AND j.status = 'dead'
                               AND j.finished_at > greatest(r.rolled_at, r.since)) AS recent_dead
            FROM tenants t CROSS JOIN r
            WHERE t.id = :tenant
            """);

    /** A tenant's row and its numbers, read together ({@link #STATS}). */
    public record TenantFigures(TenantsRecord tenant, TenantStats stats) {}

    /** The tenant's row, live figures and recent counts in one statement; empty when there is no such tenant. */
    public Optional<TenantFigures> tenantFigures(DSLContext ctx, String tenantId, Duration recent) {
        return STATS.bind().set("tenant", tenantId).set("window_ms", recent.toMillis()).query(ctx, rs -> new TenantFigures(
                TenantStore.record(rs), liveStats(rs, rs.getLong("recent_succeeded"), rs.getLong("recent_dead"))))
                .stream().findFirst();
    }

    /** Ready and running, for explain's concurrency check: ranges of the small claim and lease indexes. */
    static final NamedSql ADMITTED = NamedSql.of("""
            SELECT (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'ready'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'running')
            """);

    public record Admitted(long ready, long running) {}

    public Admitted admitted(DSLContext ctx, String tenantId) {
        Record r = ADMITTED.bind().set("tenant", tenantId).fetch(ctx).get(0);
        return new Admitted(r.get(0, Long.class), r.get(1, Long.class));
    }

    /**
     * What explain reads for a waiting job, in one round trip: the database clock, the tenant's row and its
     * {@link #ADMITTED} counts (three statements before, each a round trip of the API's pool).
     */
    static final NamedSql WAITING_CONTEXT = NamedSql.of("""
            SELECT now() AS db_now, t.*,
                   (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'ready') AS admitted_ready,
                   (SELECT count(*) FROM jobs WHERE tenant_id = :tenant AND status = 'running') AS admitted_running
            FROM tenants t WHERE t.id = :tenant
            """);

    public record WaitingContext(java.time.OffsetDateTime now, TenantsRecord tenant, Admitted admitted) {}

    /** The clock, the tenant and its admitted and running jobs; empty when there is no such tenant. */
    public Optional<WaitingContext> waitingContext(DSLContext ctx, String tenantId) {
        return WAITING_CONTEXT.bind().set("tenant", tenantId).query(ctx, rs -> new WaitingContext(
                rs.getObject("db_now", java.time.OffsetDateTime.class), TenantStore.record(rs),
                new Admitted(rs.getLong("admitted_ready"), rs.getLong("admitted_running")))).stream().findFirst();
    }

    /**
     * The live jobs (pending, ready, running) per tenant, for the metrics scrape: one pass over the partial
     * indexes of the live jobs, so it costs the backlog, never the tenants or the retention.
     */
    static final NamedSql LIVE_DEPTHS = NamedSql.of("""
            SELECT tenant_id, 0 AS s, count(*), min(id) FROM jobs WHERE status = 'pending' GROUP BY tenant_id
            UNION ALL
            SELECT tenant_id, 1, count(*), NULL FROM jobs WHERE status = 'ready' GROUP BY tenant_id
            UNION ALL
            SELECT tenant_id, 2, count(*), NULL FROM jobs WHERE status = 'running' GROUP BY tenant_id
            UNION ALL
            SELECT NULL, 3, count(*), NULL FROM jobs WHERE status = 'dead'
            """);

    /**
     * Live jobs per tenant ({pending, ready, running}), totals per status (dead included), and each tenant's
     * lowest pending id (its oldest pending job: ids grow with time), read with the pending count from the same
     * index entries.
     */
    public record Depths(Map<String, long[]> byTenant, Map<String, Long> totals, Map<String, Long> oldestPendingId) {}

    public Depths liveDepths(DSLContext ctx) {
        Map<String, long[]> byTenant = new HashMap<>();
        Map<String, Long> totals = new HashMap<>();
        Map<String, Long> oldestPendingId = new HashMap<>();
        String[] names = {"pending", "ready", "running", "dead"};
        for (String n : names) totals.put(n, 0L);
        for (Record r : LIVE_DEPTHS.bind().fetch(ctx)) {
            int s = r.get(1, Integer.class);
            long n = r.get(2, Long.class);
            totals.merge(names[s], n, Long::sum);
            if (s < 3) byTenant.computeIfAbsent(r.get(0, String.class), k -> new long[3])[s] = n;
            if (s == 0) oldestPendingId.put(r.get(0, String.class), r.get(3, Long.class));
        }
        return new Depths(byTenant, totals, oldestPendingId);
    }

    /** The age of one job in ms if it is still pending (one primary-key probe), else null. */
    public Long pendingAgeMs(DSLContext ctx, long id) {
        Record r = ctx.fetchOne("SELECT (fairq_epoch(now()) - fairq_epoch(created_at)) * 1000 FROM jobs "
                + "WHERE id = ? AND status = 'pending'", id);
        return r == null ? null : Math.round(r.get(0, Double.class));
    }

    static final NamedSql DEAD_COUNTS = NamedSql.of("""
            SELECT t.id, (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'dead')
            FROM unnest(:tenant_ids::text[]) AS t(id)
            """);

    /** Dead letters of the given tenants (one range of jobs_tenant_status_idx each). */
    public Map<String, Long> deadCounts(DSLContext ctx, java.util.Collection<String> tenants) {
        return countsPerTenant(ctx, DEAD_COUNTS, tenants);
    }

    /** A statement of (tenant id, count) rows over {@code :tenant_ids}, one row per given tenant, as a map. */
    private static Map<String, Long> countsPerTenant(DSLContext ctx, NamedSql counts, java.util.Collection<String> tenants) {
        Map<String, Long> out = new HashMap<>();
        if (tenants.isEmpty()) return out;
        for (Record r : counts.bind().set("tenant_ids", tenants.toArray(String[]::new)).fetch(ctx)) {
            out.put(r.get(0, String.class), r.get(1, Long.class));
        }
        return out;
    }

    static final NamedSql BLOCKED_KEY_COUNTS = NamedSql.of("""
            SELECT t.id, (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.key_head AND j.status = 'dead')
            FROM unnest(:tenant_ids::text[]) AS t(id)
            """);

    /**
     * Ordering keys blocked by a dead head, of the given tenants (one range of jobs_blocked_keys_idx each): the
     * admin overview's count for its page, exact whatever other tenants hold.
     */
    public Map<String, Long> blockedKeyCounts(DSLContext ctx, java.util.Collection<String> tenants) {
        return countsPerTenant(ctx, BLOCKED_KEY_COUNTS, tenants);
    }

    /** The oldest pending job of each given tenant: one probe of jobs_tenant_status_idx per tenant. */
    static final NamedSql OLDEST_PENDING = NamedSql.of("""
            SELECT t.id, (SELECT (fairq_epoch(now()) - fairq_epoch(j.created_at)) * 1000 FROM jobs j
                          WHERE j.tenant_id = t.id AND j.status = 'pending' ORDER BY j.id LIMIT 1)
            FROM unnest(:tenant_ids::text[]) AS t(id)
            """);

    /** Per given tenant: age of its oldest pending job in ms (absent when it has none). */
    public Map<String, Long> oldestPendingAgeMs(DSLContext ctx, java.util.Collection<String> tenants) {
        Map<String, Long> out = new HashMap<>();
        if (tenants.isEmpty()) return out;
        for (Record r : OLDEST_PENDING.bind().set("tenant_ids", tenants.toArray(String[]::new)).fetch(ctx)) {
            Double age = r.get(1, Double.class);
            if (age != null) out.put(r.get(0, String.class), Math.round(age));
        }
        return out;
    }

    /** An ordering key held by its dead head job, and how many jobs wait behind it. */
    public record BlockedKey(String tenantId, String orderingKey, long deadJobId, java.time.OffsetDateTime deadSince,
                             String lastError, long waiting) {}

    /**
     * Keys blocked by a dead head: jobs_blocked_keys_idx gives the heads, jobs_ordering_next_idx counts the
     * jobs waiting behind each (capped, so a huge backlog is not counted row by row).
     */
    private static final String BLOCKED_KEYS = """
            SELECT h.tenant_id, h.ordering_key, h.id, h.finished_at, h.last_error,
                   (SELECT count(*) FROM (SELECT 1 FROM jobs w
                                          WHERE w.tenant_id = h.tenant_id AND w.ordering_key = h.ordering_key
                                            AND w.status = 'pending' AND NOT w.key_head LIMIT 100000) x)
            FROM jobs h
            WHERE h.key_head AND h.status = 'dead' AND (?::text IS NULL OR h.tenant_id = ?)
            ORDER BY h.tenant_id, h.ordering_key
            LIMIT ?
            """;

    public List<BlockedKey> blockedOrderingKeys(DSLContext ctx, String tenantIdOrNull, int limit) {
        List<BlockedKey> out = new ArrayList<>();
        for (Record r : ctx.resultQuery(BLOCKED_KEYS, tenantIdOrNull, tenantIdOrNull, limit).fetch()) {
            out.add(new BlockedKey(r.get(0, String.class), r.get(1, String.class), r.get(2, Long.class),
                    r.get(3, java.time.OffsetDateTime.class), r.get(4, String.class), r.get(5, Long.class)));
        }
        return out;
    }

    /** The job whose turn it is in an ordering key (jobs_ordering_head_uidx), if any. */
    public Optional<JobsRecord> orderingHead(DSLContext ctx, String tenantId, String orderingKey) {
        return ctx.selectFrom(JOBS).where(JOBS.TENANT_ID.eq(tenantId).and(JOBS.ORDERING_KEY.eq(orderingKey))
                .and(JOBS.KEY_HEAD)).fetchOptional();
    }

    /**
     * How many of the tenant's admissible due jobs go before this one in its own aging order, among the jobs of
     * its lane (no concurrency or fairness key: a range of jobs_admit_idx; else its (fairness key, concurrency
     * key) range of jobs_admit_key_idx), capped at
     * {@code cap} so explain stays cheap behind a flood.
     */
    private static final String JOBS_AHEAD = """
            SELECT count(*) FROM (
                SELECT 1 FROM jobs j
                WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                  AND j.concurrency_key IS NULL AND j.fairness_key IS NULL AND j.no_worker_since IS NULL
                  AND (j.sort_key, j.id) < (?, ?) AND j.run_at <= now()
                LIMIT ?) x
            """;

    private static final String KEYED_JOBS_AHEAD = """
            SELECT count(*) FROM (
                SELECT 1 FROM jobs j
                WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                  AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                  AND coalesce(j.fairness_key, '') = ? AND coalesce(j.concurrency_key, '') = ?
                  AND (j.sort_key, j.id) < (?, ?) AND j.run_at <= now()
                LIMIT ?) x
            """;

    public long jobsAhead(DSLContext ctx, JobsRecord job, int cap) {
        if (job.getConcurrencyKey() != null || job.getFairnessKey() != null) {
            return ctx.resultQuery(KEYED_JOBS_AHEAD, job.getTenantId(),
                    job.getFairnessKey() == null ? "" : job.getFairnessKey(),
                    job.getConcurrencyKey() == null ? "" : job.getConcurrencyKey(), job.getSortKey(), job.getId(), cap)
                    .fetchOne(0, Long.class);
        }
        return ctx.resultQuery(JOBS_AHEAD, job.getTenantId(), job.getSortKey(), job.getId(), cap).fetchOne(0, Long.class);
    }

    /** Jobs of the tenant's concurrency key that are ready or running (jobs_claim_idx and jobs_lease_idx). */
    private static final String KEY_ACTIVE = """
            SELECT (SELECT count(*) FROM jobs WHERE status = 'ready' AND tenant_id = ? AND concurrency_key = ?)
                 + (SELECT count(*) FROM jobs WHERE status = 'running' AND tenant_id = ? AND concurrency_key = ?)
            """;

    /**
     * The tenant's fairness keys with admissible jobs waiting, counted up to {@code cap}: a loose scan of
     * jobs_admit_key_idx (one probe per lane), for explain's fair_share_key. A lane counts only with a job due
     * now (one more probe per lane, as the scheduler's candidate read makes): a key whose jobs are all delayed
     * or in backoff competes for nothing yet, and had been counted. The probe stops at the highest sort_key a
     * due job can have (run_at now, priority -100), so a lane of delayed jobs is not walked to its end: without
     * that bound, 200,000 of one key's jobs delayed by a day took it through every one (28.5 ms, 4,508 buffers;
     * 0.06 ms with it). Lanes whose jobs were written to wait (not_due, V20) are not walked at all (jobs_lanes_idx).
     * The cap counts keys, not lanes: the walk counts a key at its first lane with a due job (lanes come in key
     * order, so a key's lanes are side by side) and stops at the cap; the cap had been applied to the lanes before
     * they were told apart by key (600 keys in two concurrency keys each counted as 500).
     */
    private static final String ACTIVE_FAIRNESS_KEYS = """
            WITH RECURSIVE lanes(fk, ck, counted, n) AS (
                SELECT f.fk, f.ck, CASE WHEN d.due THEN f.fk END, CASE WHEN d.due THEN 1 ELSE 0 END
                FROM (SELECT coalesce(j.fairness_key, '') AS fk, coalesce(j.concurrency_key, '') AS ck FROM jobs j
                      WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                        AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                        AND NOT j.not_due
                      ORDER BY 1, 2 LIMIT 1) f
                     CROSS JOIN LATERAL ({lane_due}) d
                UNION ALL
                SELECT f.fk, f.ck, CASE WHEN d.due THEN f.fk ELSE l.counted END,
                       l.n + CASE WHEN d.due AND f.fk IS DISTINCT FROM l.counted THEN 1 ELSE 0 END
                FROM lanes l CROSS JOIN LATERAL (
                    SELECT coalesce(j.fairness_key, '') AS fk, coalesce(j.concurrency_key, '') AS ck FROM jobs j
                    WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                      AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                      AND NOT j.not_due AND (coalesce(j.fairness_key, ''), coalesce(j.concurrency_key, '')) > (l.fk, l.ck)
                    ORDER BY 1, 2 LIMIT 1) f
                     CROSS JOIN LATERAL ({lane_due}) d
                WHERE l.n < ?
            )
            SELECT coalesce(max(n), 0) FROM lanes
            """.replace("{lane_due}", """
                    SELECT f.fk <> '' AND EXISTS (
                        SELECT 1 FROM jobs j
                        WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                          AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                          AND coalesce(j.fairness_key, '') = f.fk AND coalesce(j.concurrency_key, '') = f.ck
                          AND {due_bound} AND j.run_at <= now()) AS due""")
            .replace("{due_bound}", Admission.DUE_SORT_KEY_BOUND.replace(":now", "now()"));

    public long activeFairnessKeys(DSLContext ctx, String tenantId, int cap) {
        return ctx.resultQuery(ACTIVE_FAIRNESS_KEYS, tenantId, tenantId, tenantId, tenantId, cap).fetchOne(0, Long.class);
    }

    /**
     * The keys with the most jobs ready or running (one tenant's, or every tenant's with null), concurrency and
     * fairness keys apart, at most {@code limit}: one grouped count over jobs_claim_idx and jobs_lease_idx, whose
     * rows the worker capacity bounds, whatever the backlog or the keys ever used.
     */
    private static final String TOP_KEYS = """
            WITH live AS (
                SELECT tenant_id, concurrency_key, fairness_key, status FROM jobs
                WHERE status = 'ready' AND (?::text IS NULL OR tenant_id = ?::text)
                  AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL)
                UNION ALL
                SELECT tenant_id, concurrency_key, fairness_key, status FROM jobs
                WHERE status = 'running' AND (?::text IS NULL OR tenant_id = ?::text)
                  AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL)
            ), keyed AS (
                SELECT tenant_id, 'concurrency' AS kind, concurrency_key AS key, status FROM live
                WHERE concurrency_key IS NOT NULL
                UNION ALL
                SELECT tenant_id, 'fairness', fairness_key, status FROM live WHERE fairness_key IS NOT NULL
            )
            SELECT tenant_id, kind, key, count(*) FILTER (WHERE status = 'running'),
                   count(*) FILTER (WHERE status = 'ready')
            FROM keyed GROUP BY tenant_id, kind, key
            ORDER BY count(*) DESC, tenant_id, kind, key LIMIT ?
            """;

    /** A key in use: its jobs running, and admitted (ready) to start. */
    public record KeyUsage(String tenantId, String kind, String key, long running, long admitted) {}

    public List<KeyUsage> topKeys(DSLContext ctx, String tenantIdOrNull, int limit) {
        List<KeyUsage> out = new ArrayList<>();
        for (Record r : ctx.resultQuery(TOP_KEYS, tenantIdOrNull, tenantIdOrNull, tenantIdOrNull, tenantIdOrNull, limit)
                .fetch()) {
            out.add(new KeyUsage(r.get(0, String.class), r.get(1, String.class), r.get(2, String.class),
                    r.get(3, Long.class), r.get(4, Long.class)));
        }
        return out;
    }

    public long keyActive(DSLContext ctx, String tenantId, String concurrencyKey) {
        return ctx.resultQuery(KEY_ACTIVE, tenantId, concurrencyKey, tenantId, concurrencyKey).fetchOne(0, Long.class);
    }

    /** The database clock, so that API answers about run_at compare on the same clock the queue uses. */
    public java.time.OffsetDateTime now(DSLContext ctx) {
        return ctx.resultQuery("SELECT now()").fetchOne(0, java.time.OffsetDateTime.class);
    }
}
