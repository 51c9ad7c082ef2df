-- The handlers' toolkit (issue 11): an idempotency store for side effects, snooze, versioned payloads, and
-- jobs routed to the workers that can run them.

-- 1. Side effects guarded by a key (seed 003, approach A). One row per (tenant, key): 'pending' while an
-- attempt holds the key's lock (lock_token, until locked_until on the database clock), 'done' once the effect
-- happened, with what it returned (result). A re-run finds 'done' and gets the stored result without running
-- the effect again; a 'pending' row whose lock ran out (its holder died between taking the lock and writing
-- 'done') is taken over under a new token, and 'done' is written only under the current token, so a stale
-- holder that wakes up late cannot overwrite it (SideEffects.COMPLETE, zero rows: it fails loudly).
CREATE TABLE side_effects (
    tenant_id    text        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    status       text        NOT NULL CHECK (status IN ('pending', 'done')),
    lock_token   uuid,
    locked_until timestamptz,
    result       text,
    -- the job whose attempt wrote the row last (for people reading the table; nothing depends on it)
    job_id       bigint,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, key),
    CONSTRAINT side_effects_lock_only_while_pending CHECK ((status = 'pending') = (lock_token IS NOT NULL)
                                                          AND (status = 'pending') = (locked_until IS NOT NULL))
);

-- Retention: rows by age (the scheduler's retention deletes them in bounded batches).
CREATE INDEX side_effects_updated_idx ON side_effects (updated_at);

-- 2. Snooze: a handler puts its job back for later without using an attempt. snoozes counts them, so a
-- handler that snoozes forever is bounded (the worker's max_snoozes; past it the attempt fails).
ALTER TABLE jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0 CHECK (snoozes >= 0);

-- 3. Versioned payloads: which shape the payload has (JobRequest.MIN_PAYLOAD_VERSION..MAX_PAYLOAD_VERSION,
-- proven equal by LimitRangesMatchTheSchemaTest). A handler declares the versions it reads and may upcast
-- older ones; a version it can neither read nor upcast is a permanent error naming it.
ALTER TABLE jobs ADD COLUMN payload_version integer NOT NULL DEFAULT 1 CHECK (payload_version BETWEEN 1 AND 1000000);

-- 4. Routing. The worker registry says what each live process can run: the queues it serves (NULL: every
-- queue), the job types it has handlers for (NULL: every type, what a process of an older release or a tool
-- registers), and the threads it reserves per queue ({"urgent": 2}). capacity is its threads and heartbeat_at
-- its last_seen.
ALTER TABLE workers ADD COLUMN queues text[], ADD COLUMN types text[],
                    ADD COLUMN reserved jsonb NOT NULL DEFAULT '{}';

-- A pending job that no live worker can run (its queue and type are served by none) is parked: it leaves the
-- admission index, so the scheduler's per-tenant probes never walk it again (a tenant's backlog of a type
-- nobody serves costs a tick nothing), and explain says no_worker. The scheduler parks it when a probe meets
-- it, and un-parks the jobs of the routes a worker brings when the set of live routes changes.
ALTER TABLE jobs ADD COLUMN no_worker_since timestamptz;

DROP INDEX jobs_admit_idx;
CREATE INDEX jobs_admit_idx ON jobs (tenant_id, sort_key, id) INCLUDE (run_at)
    WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL;

-- Un-parking: the parked jobs of the types a worker brings, one range per type.
CREATE INDEX jobs_no_worker_idx ON jobs (type, queue, id)
    WHERE no_worker_since IS NOT NULL AND status = 'pending';
