-- An admission the active scheduler made in advance for a quiet fairness key of a busy tenant (issue 14): the
-- key had a job admitted in the last 2 s and has none waiting now. The key's next due job without an ordering
-- or concurrency key is inserted ready and takes the row (Enqueue.INSERT_JOBS), so a trickling key of a tenant
-- that floods with another key starts without waiting for a scheduler round (a tenant with jobs waiting holds no
-- admission_grants row: V4's grants are for quiet tenants). Every limit holds as for V4's grants: the scheduler
-- takes the tenant's token, counts the grant against max_running and charges it to the tenant's and the key's
-- virtual times when it grants. ready_rank is where the scheduler would have ranked the key's next job then (the
-- tenant's first buffered job, or its pass, and never ahead of the key's own buffered jobs), not the front of the
-- claim order: the tenant is busy, and its job must not pass other tenants' jobs ranked ahead of its own. The
-- enqueue raises it to the claim point if the buffer moved past it. An enqueue uses the row only when the key has
-- no due job waiting. The scheduler revokes it (token and charges back) when the tenant is paused or has nothing
-- waiting, when a round reads waiting jobs of the key, or unused for 2 s (200 ms for a key admitted only once).
-- Two slots a key: the enqueue that uses one wakes the scheduler, which renews it, but under load an enqueue's
-- commit and the next tick took 20-40 ms, as long as a trickle's interval (subkeys: one job in 30 ms), and with one
-- slot every such race left the next job waiting for a round; the spare takes it.
CREATE TABLE key_grants (
    tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    fairness_key text NOT NULL CHECK (length(fairness_key) BETWEEN 1 AND 255),
    slot         smallint NOT NULL CHECK (slot BETWEEN 0 AND 1),
    ready_rank   double precision NOT NULL,
    granted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, fairness_key, slot)
);
