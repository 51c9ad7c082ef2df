package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
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
        if (f.tenantId() != null) c = c.and(JOBS.TENANT_ID.eq(f.tenantId()));
        if (f.queue() != null) c = c.and(JOBS.QUEUE.eq(f.queue()));
        if (f.type() != null) c = c.and(JOBS.TYPE.eq(f.type()));
        if (f.orderingKey() != null) c = c.and(JOBS.ORDERING_KEY.eq(f.orderingKey()));
        if (afterId != null) c = c.and(JOBS.ID.lt(afterId));
        if (f.status() != null || f.tenantId() == null) {
            if (f.status() != null) c = c.and(JOBS.STATUS.eq(f.status()));
            return ctx.selectFrom(JOBS).where(c).orderBy(JOBS.ID.desc()).limit(limit).fetch();
        }
        org.jooq.Select<JobsRecord> union = null;
        for (JobStatus status : JobStatus.values()) {
            var one = ctx.selectFrom(JOBS).where(c.and(JOBS.STATUS.eq(status))).orderBy(JOBS.ID.desc()).limit(limit);
            union = union == null ? one : union.unionAll(one);
        }
        var all = union.asTable("j");
        return ctx.selectFrom(all).orderBy(all.field(JOBS.ID).desc()).limit(limit).fetchInto(JOBS);
    }

    /** A tenant's own numbers. {@code oldestPendingAgeMs} is null when nothing is pending. */
    public record TenantStats(long pending, long ready, long running, long succeededRecent, long deadRecent,
                              long deadTotal, Long oldestPendingAgeMs, long blockedOrderingKeys) {}

    /**
     * Status counts walk jobs_tenant_status_idx (index-only once the visibility map is set); the recent
     * succeeded/dead counts are a range on jobs_tenant_finished_idx; the oldest pending job is the one with
     * the lowest id (ids grow with time), one probe of jobs_tenant_status_idx rather than a min() over all
     * pending rows; blocked keys come from the small jobs_blocked_keys_idx.
     */
    private static final String TENANT_STATS = """
            SELECT (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'pending'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'ready'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'running'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'succeeded'
                                              AND finished_at > now() - ? * interval '1 millisecond'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'dead'
                                              AND finished_at > now() - ? * interval '1 millisecond'),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'dead'),
                   (SELECT (fairq_epoch(now()) - fairq_epoch(created_at)) * 1000 FROM jobs
                    WHERE tenant_id = ? AND status = 'pending' ORDER BY id LIMIT 1),
                   (SELECT count(*) FROM jobs WHERE tenant_id = ? AND key_head AND status = 'dead')
            """;

    public TenantStats tenantStats(DSLContext ctx, String tenantId, Duration recent) {
        long ms = recent.toMillis();
        Record r = ctx.resultQuery(TENANT_STATS, tenantId, tenantId, tenantId, tenantId, ms, tenantId, ms, tenantId,
                tenantId, tenantId).fetchOne();
        Double age = r.get(6, Double.class);
        return new TenantStats(r.get(0, Long.class), r.get(1, Long.class), r.get(2, Long.class), r.get(3, Long.class),
                r.get(4, Long.class), r.get(5, Long.class), age == null ? null : Math.round(age), r.get(7, Long.class));
    }

    /**
     * Queue depth per tenant and status for the metrics scrape: one pass over jobs_tenant_status_idx
     * (finished statuses left out: they are counted by the workers' counters, and retention keeps many).
     */
    private static final String DEPTHS = """
            SELECT tenant_id, status::text, count(*) FROM jobs
            WHERE status IN ('pending', 'ready', 'running', 'dead') GROUP BY tenant_id, status
            """;

    /** The oldest pending job per tenant: one probe of jobs_tenant_status_idx per tenant (see TENANT_STATS). */
    private static final String OLDEST_PENDING = """
            SELECT t.id, (SELECT (fairq_epoch(now()) - fairq_epoch(j.created_at)) * 1000 FROM jobs j
                          WHERE j.tenant_id = t.id AND j.status = 'pending' ORDER BY j.id LIMIT 1)
            FROM tenants t
            """;

    /** Per tenant: status -> count. */
    public Map<String, Map<String, Long>> queueDepths(DSLContext ctx) {
        Map<String, Map<String, Long>> out = new HashMap<>();
        for (Record r : ctx.resultQuery(DEPTHS).fetch()) {
            out.computeIfAbsent(r.get(0, String.class), k -> new HashMap<>()).put(r.get(1, String.class), r.get(2, Long.class));
        }
        return out;
    }

    /** Per tenant: age of its oldest pending job in ms (absent when it has none). */
    public Map<String, Long> oldestPendingAgeMs(DSLContext ctx) {
        Map<String, Long> out = new HashMap<>();
        for (Record r : ctx.resultQuery(OLDEST_PENDING).fetch()) {
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
     * How many of the tenant's admissible due jobs go before this one in its own aging order: a range of
     * jobs_admit_idx, capped at {@code cap} so explain stays cheap behind a flood.
     */
    private static final String JOBS_AHEAD = """
            SELECT count(*) FROM (
                SELECT 1 FROM jobs j
                WHERE j.tenant_id = ? AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                  AND (j.sort_key, j.id) < (?, ?) AND j.run_at <= now()
                LIMIT ?) x
            """;

    public long jobsAhead(DSLContext ctx, JobsRecord job, int cap) {
        return ctx.resultQuery(JOBS_AHEAD, job.getTenantId(), job.getSortKey(), job.getId(), cap).fetchOne(0, Long.class);
    }

    /** The database clock, so that API answers about run_at compare on the same clock the queue uses. */
    public java.time.OffsetDateTime now(DSLContext ctx) {
        return ctx.resultQuery("SELECT now()").fetchOne(0, java.time.OffsetDateTime.class);
    }
}
