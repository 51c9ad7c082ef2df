-- The scheduler's timer probe (Admission.NEXT_DUE: a drained tenant's next admissible job due later) reads the first
-- entry of jobs_due_later_idx that is not parked. Parked jobs (no live worker serves their type: no_worker_since) that
-- had been delayed, retried or scheduled stayed in the index, so each probe walked them all, a heap visit each, every
-- time the tenant drained: 5,000 such jobs were 5,001 entries a probe (PG15). They are admissible again only when
-- un-parked, which wakes the scheduler with their tenant; the index now leaves them out.
DROP INDEX jobs_due_later_idx;

CREATE INDEX jobs_due_later_idx ON jobs (tenant_id, run_at)
    WHERE status = 'pending' AND run_at > created_at AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL;
