package dev.fairq.schema;

import org.jooq.DSLContext;

import java.time.Duration;
import java.util.List;

/**
 * Retention: finished jobs (and the side-effect store's old keys) leave their tables after their retention (succeeded and cancelled after one, dead
 * after another: dead jobs are the dead-letter queue), a bounded batch at a time so that no statement holds
 * many row locks or runs long. A dead head is never deleted: it blocks its key until someone replays or
 * discards it. Cost follows the finished jobs: the tenants that have any (a loose index scan, once per run),
 * then per tenant and status one range of jobs_tenant_finished_idx; never the tenants table.
 */
public final class Retention {
    /**
     * The tenants with finished jobs: a loose index scan of jobs_tenant_finished_idx, one probe per tenant.
     */
    static final NamedSql TENANTS_WITH_FINISHED = DashboardStore.TENANTS_WITH_FINISHED;

    /**
     * One batch. Plan-proof against stale statistics (a queue is analysed empty, then floods): the ids are
     * collected first into an array (an InitPlan, run once) and deleted by primary key, so the planner cannot
     * turn "id IN (subquery ... LIMIT)" into a nested loop over the whole table that re-runs the per-tenant
     * probes for every row (measured: 11 minutes of CPU after an ANALYZE of an empty table). The probes run
     * with enable_seqscan and enable_bitmapscan off in this transaction only (see {@link #deleteFinished}). Oldest first by its ORDER BY
     * (jobs_tenant_finished_idx's own order), not by the plan: with statistics of 40,000 pending jobs, left by
     * another test's ANALYZE, the plan without it deleted in id order (OperatorActionsTest after DelayedBacklogTest).
     */
    static final NamedSql DELETE_FINISHED = NamedSql.of("""
            DELETE FROM jobs WHERE id = ANY(ARRAY(
                SELECT old.id
                FROM unnest(:tenant_ids::text[]) AS t(id)
                CROSS JOIN (VALUES ('succeeded'::job_status, :keep_ms::bigint), ('cancelled', :keep_ms::bigint),
                                   ('dead', :dead_keep_ms::bigint)) AS r(status, keep_ms)
                CROSS JOIN LATERAL (
                    SELECT j.id FROM jobs j
                    WHERE j.tenant_id = t.id AND j.status = r.status AND j.finished_at IS NOT NULL
                      AND j.finished_at < :now - r.keep_ms * interval '1 millisecond' AND NOT j.key_head
                    ORDER BY j.finished_at
                    LIMIT :batch) old
                LIMIT :batch))
            """);

    /**
     * Side-effect keys ({@link SideEffects}), one bounded batch: rows not written for {@code keep_ms} (done keys,
     * and pending keys whose holder never came back), unless the job that wrote one last is still in the jobs
     * table: a dead job kept for replay (or still retrying) must find its effects however long ago it wrote them.
     * Counted from the key's write alone, a job that wrote its effect on its first attempt and died on its last,
     * up to about 14 hours later with the default backoff, or one kept longer than the keys
     * (FAIRQ_DEAD_RETENTION_HOURS above FAIRQ_EFFECT_RETENTION_HOURS), ran the effect again when replayed. The
     * keys are collected first through side_effects_updated_idx (oldest first, LIMIT, one primary-key probe of
     * jobs each), then deleted by primary key. Keys kept for their job are walked past by every batch, a probe
     * each: as many as the kept jobs wrote past the key retention (the dead ones' retry spans, by default).
     */
    static final NamedSql DELETE_SIDE_EFFECTS = NamedSql.of("""
            DELETE FROM side_effects s
            USING (SELECT e.tenant_id, e.key FROM side_effects e
                   WHERE e.updated_at < :now - :keep_ms * interval '1 millisecond'
                     AND (e.job_id IS NULL OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id))
                   ORDER BY e.updated_at LIMIT :batch) old
            WHERE s.tenant_id = old.tenant_id AND s.key = old.key
            """);

    private final QueueClock clock;

    Retention(QueueClock clock) {
        this.clock = clock;
    }

    /** The tenants that have finished jobs (what a retention run walks). */
    public List<String> tenantsWithFinished(DSLContext ctx) {
        return TENANTS_WITH_FINISHED.bind().fetch(ctx).getValues(0, String.class);
    }

    /** Deletes at most {@code batch} finished jobs of the given tenants past their retention; returns how many. */
    public int deleteFinished(DSLContext ctx, List<String> tenants, Duration retention, Duration deadRetention,
                              int batch) {
        if (tenants.isEmpty()) return 0;
        return ctx.transactionResult(c -> {
            // scoped to this transaction: every access here has an index built for it, and a bitmap scan would
            // read every entry past retention before the LIMIT (then sort them all for the ORDER BY)
            c.dsl().execute("SET LOCAL enable_seqscan = off");
            c.dsl().execute("SET LOCAL enable_bitmapscan = off");
            return DELETE_FINISHED.bind().clock(clock).set("tenant_ids", tenants.toArray(String[]::new))
                    .set("keep_ms", retention.toMillis()).set("dead_keep_ms", deadRetention.toMillis())
                    .set("batch", batch).execute(c.dsl());
        });
    }

    /** Deletes at most {@code batch} finished jobs past their retention, over every tenant; returns how many. */
    public int deleteFinished(DSLContext ctx, Duration retention, Duration deadRetention, int batch) {
        return deleteFinished(ctx, tenantsWithFinished(ctx), retention, deadRetention, batch);
    }

    /**
     * The small tables the queue rewrites all the time: a tenant grant is made by a tick and deleted by the enqueue that
     * uses it (about a hundred a second under the tenants bench's trickle), the explain state is upserted every second,
     * the worker registry at every heartbeat. Autovacuum visits a database at most once a minute (autovacuum_naptime),
     * and between its visits every read of such a table walks the dead rows: admission_grants held 1,001 live rows in
     * 230 pages after six minutes of the trickle on a server with autovacuum off (the benchmark machine's PostgreSQL
     * 15), and its share of the tick's read took 2.2 ms instead of 1.2. SKIP_LOCKED: a table locked by someone else
     * waits for the next turn, nothing waits for this.
     */
    static final String VACUUM_HOT_TABLES =
            "VACUUM (SKIP_LOCKED) admission_grants, key_grants, scheduler_tenant_state, workers, rollup_cursor";

    /** Vacuums the small, constantly rewritten tables ({@link #VACUUM_HOT_TABLES}); outside any transaction. */
    public void vacuumHotTables(DSLContext ctx) {
        ctx.execute(VACUUM_HOT_TABLES);
    }

    /** Deletes at most {@code batch} side-effect keys not written for {@code keep}; returns how many. */
    public int deleteSideEffects(DSLContext ctx, Duration keep, int batch) {
        return DELETE_SIDE_EFFECTS.bind().clock(clock).set("keep_ms", keep.toMillis()).set("batch", batch).execute(ctx);
    }
}
