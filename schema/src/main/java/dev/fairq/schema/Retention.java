package dev.fairq.schema;

import org.jooq.DSLContext;

import java.time.Duration;

/**
 * Retention: finished jobs leave the table after their retention (succeeded and cancelled after one, dead
 * after another: dead jobs are the dead-letter queue), a bounded batch at a time so that no statement holds
 * many row locks or runs long. A dead head is never deleted: it blocks its key until someone replays or
 * discards it.
 */
public final class Retention {
    /**
     * Each tenant and status is one range of jobs_tenant_finished_idx (tenant_id, status, finished_at), which
     * the dashboards need anyway: a finished-time index of its own would cost every completion one more
     * index entry.
     */
    static final NamedSql DELETE_FINISHED = NamedSql.of("""
            DELETE FROM jobs WHERE id IN (
                SELECT old.id
                FROM tenants t
                CROSS JOIN (VALUES ('succeeded'::job_status, :keep_ms::bigint), ('cancelled', :keep_ms::bigint),
                                   ('dead', :dead_keep_ms::bigint)) AS r(status, keep_ms)
                CROSS JOIN LATERAL (
                    SELECT j.id FROM jobs j
                    WHERE j.tenant_id = t.id AND j.status = r.status AND j.finished_at IS NOT NULL
                      AND j.finished_at < :now - r.keep_ms * interval '1 millisecond' AND NOT j.key_head
                    LIMIT :batch) old
                LIMIT :batch)
            """);

    private final QueueClock clock;

    Retention(QueueClock clock) {
        this.clock = clock;
    }

    /** Deletes at most {@code batch} finished jobs past their retention; returns how many. */
    public int deleteFinished(DSLContext ctx, Duration retention, Duration deadRetention, int batch) {
        return DELETE_FINISHED.bind().clock(clock).set("keep_ms", retention.toMillis())
                .set("dead_keep_ms", deadRetention.toMillis()).set("batch", batch).execute(ctx);
    }
}
