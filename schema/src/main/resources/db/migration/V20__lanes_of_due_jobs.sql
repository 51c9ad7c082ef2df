-- A tenant's lanes (fairness key, concurrency key pairs with jobs waiting) are found at each of its rounds by a loose
-- index scan, one probe a lane. A lane whose jobs were all not due yet cost that probe too: a tenant with 10,000
-- customers holding a reminder for tomorrow, beside a busy one, made each of its rounds about 50 ms (30,000 buffer
-- reads, PG15), and every tenant's admissions waited for it. A keyed job written to wait (enqueued for later,
-- retried or snoozed with a delay) is not_due, out of the lanes' index, until the scheduler's tick sees it due and
-- clears the flag (Admission.PROMOTE_DUE, through jobs_not_due_idx: cost follows the jobs coming due). Rows are
-- false by default, as every existing one is: such a job is found as before, at the old price.
ALTER TABLE jobs ADD COLUMN not_due boolean NOT NULL DEFAULT false;

CREATE INDEX jobs_lanes_idx ON jobs (tenant_id, coalesce(fairness_key, ''), coalesce(concurrency_key, ''))
    WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
      AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL) AND NOT not_due;

CREATE INDEX jobs_not_due_idx ON jobs (run_at) WHERE not_due AND status = 'pending';
