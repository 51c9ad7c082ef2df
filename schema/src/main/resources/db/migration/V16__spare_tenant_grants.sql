-- A second admission grant for a tenant whose grants are used faster than the scheduler renews them (issue 16). An
-- enqueue that takes a grant wakes no scheduler (V4, V13), so its renewal waits for the next tick to see it used and
-- the grant pass after: under the latency bench's background load (6,000 other jobs a second, PostgreSQL 15) a tick
-- took 20-30 ms of wall time on 2 cores, and a tenant enqueueing every 20 ms found its one grant used and not yet
-- renewed at 60-70% of its enqueues (created -> admitted p50 16-26 ms for those). Slot 1, the spare, goes only to a
-- tenant whose last two grant uses came within a second of each other, and goes back unused after a second, so a
-- quiet tenant still holds one grant, one token and one place of max_running. Each slot is a grant as in V4: a token,
-- a place, a charge. An enqueue takes the older of the tenant's unused grants (both stay fresh while it trickles).
ALTER TABLE admission_grants ADD COLUMN slot smallint NOT NULL DEFAULT 0 CHECK (slot BETWEEN 0 AND 1);
ALTER TABLE admission_grants DROP CONSTRAINT admission_grants_pkey;
ALTER TABLE admission_grants ADD PRIMARY KEY (tenant_id, slot);
