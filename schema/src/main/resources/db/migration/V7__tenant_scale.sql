-- Tenant scale: the active scheduler keeps the set of tenants that may have work in memory, fed by wake-ups
-- that name the tenant, instead of finding them by scanning; idle tenants cost nothing per tick.

-- An enqueue wakes the scheduler with the tenants it gave pending jobs ('t:' || tenant id; PostgreSQL folds
-- identical notifications of one transaction into one and sends them only at commit). Jobs inserted ready
-- (an admission grant) need no admission, so they wake nobody here (the insert wakes the workers itself).
-- A transition table, not a row trigger: one statement, one pass over the inserted rows.
CREATE OR REPLACE FUNCTION fairq_notify_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fairq_jobs', 't:' || x.tenant_id)
    FROM (SELECT DISTINCT tenant_id FROM inserted WHERE status = 'pending') x;
    RETURN NULL;
END $$;

DROP TRIGGER jobs_notify_enqueued ON jobs;
CREATE TRIGGER jobs_notify_enqueued AFTER INSERT ON jobs REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION fairq_notify_enqueued();

-- The scheduler's timers: for a tenant with nothing due now, when its next admissible job becomes due. Only
-- jobs whose run_at lies after their creation are in it (delayed, scheduled, retried), so the jobs that are
-- due at once (the bulk of a flood) cost it nothing; one probe per tenant finds the next due instant.
CREATE INDEX jobs_due_later_idx ON jobs (tenant_id, run_at)
    WHERE status = 'pending' AND run_at > created_at AND (ordering_key IS NULL OR key_head);

-- Limit changes are read incrementally (updated_at after the last read), so every write must move
-- updated_at, whoever makes it (the admin API, tenants.yml seeding, or plain SQL by an operator).
CREATE FUNCTION fairq_touch_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END $$;

CREATE TRIGGER tenants_touch BEFORE UPDATE ON tenants
    FOR EACH ROW EXECUTE FUNCTION fairq_touch_tenant();

CREATE INDEX tenants_updated_idx ON tenants (updated_at);

-- The admin overview searches tenants by id prefix (LIKE 'acme%' needs pattern ops under any collation).
CREATE INDEX tenants_id_pattern_idx ON tenants (id text_pattern_ops);

-- The dashboard rollup resumes from here: minutes after it that no scheduler rolled up (a restart, a
-- failover) are filled in from the jobs table at the next run. One row.
CREATE TABLE rollup_cursor (
    id              smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    rolled_through  timestamptz NOT NULL
);
