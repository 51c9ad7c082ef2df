-- fairq dashboards: a per-tenant, per-minute rollup that the charts read, so they survive restarts and two
-- API processes draw the same lines. The active scheduler writes it (JobStore.rollupMinutes) by recomputing
-- the recent minutes from the jobs table and upserting: running it twice gives the same rows, never a
-- double count. Pruned on a retention (JobStore.pruneRollup).

-- When the job last failed and was sent back to pending for a retry. The jobs table keeps only a job's
-- latest state, so without it a retried failure leaves no time behind and no per-minute count is possible.
-- Set by the failure and the lease-reaper statements; left as is on success (the job keeps its history).
ALTER TABLE jobs ADD COLUMN failed_at timestamptz;

CREATE TABLE tenant_minute_stats (
    tenant_id            text        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    minute               timestamptz NOT NULL CHECK (minute = date_trunc('minute', minute)),
    -- events in the minute, recomputed from the jobs table while the minute is recent (see rollupMinutes)
    started              integer     NOT NULL DEFAULT 0,   -- attempts whose start (started_at) falls in it
    succeeded            integer     NOT NULL DEFAULT 0,
    failed               integer     NOT NULL DEFAULT 0,   -- failures that were retried (failed_at)
    dead                 integer     NOT NULL DEFAULT 0,
    -- worker time of the attempts that ended in the minute (succeeded, dead or retried), in milliseconds
    busy_ms              bigint      NOT NULL DEFAULT 0,
    -- queue depth as last seen during the minute; null when no rollup ran during that minute (a gap)
    pending              integer,
    ready                integer,
    running              integer,
    oldest_pending_age_ms bigint,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, minute)
);

-- Pruning by age over all tenants (the primary key leads with tenant_id).
CREATE INDEX tenant_minute_stats_minute_idx ON tenant_minute_stats (minute);

-- Rollup: attempts started per tenant in a time range. Partial: jobs never started (the whole backlog)
-- are not in it.
CREATE INDEX jobs_tenant_started_idx ON jobs (tenant_id, started_at) WHERE started_at IS NOT NULL;

-- Rollup: retried failures per tenant in a time range. Partial: only jobs that ever failed and retried.
CREATE INDEX jobs_tenant_failed_idx ON jobs (tenant_id, failed_at) WHERE failed_at IS NOT NULL;

-- Succeeded and dead per minute use jobs_tenant_finished_idx (tenant_id, status, finished_at) from V2.
