-- Recurring schedules per tenant (issue 12). A schedule is data: a cron expression read in an IANA time zone,
-- a job template, and what to do with fires missed while no scheduler ran and with fires that come while the
-- previous fire's job is still unfinished. The active scheduler fires them (ScheduleFirer): each fire enqueues
-- one job whose job_key is 'schedule:<name>:<fire instant in UTC to the second>', so jobs_job_key_uidx makes a
-- second enqueue of the same fire impossible, whoever tries it.

-- The two per-tenant limits on schedules, declared in TenantLimit (LimitRangesMatchTheSchemaTest holds them
-- to these CHECKs). min_schedule_interval_s starts at 60: a five-field cron cannot fire more often anyway.
ALTER TABLE tenants
    ADD COLUMN max_schedules integer NOT NULL DEFAULT 1000 CHECK (max_schedules BETWEEN 0 AND 1000000),
    ADD COLUMN min_schedule_interval_s integer NOT NULL DEFAULT 60
        CHECK (min_schedule_interval_s BETWEEN 60 AND 31622400);

CREATE TABLE schedules (
    tenant_id        text        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- the rules of a queue name (JobRequest.NAME)
    name             text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
    cron             text        NOT NULL CHECK (length(cron) BETWEEN 1 AND 200),
    time_zone        text        NOT NULL CHECK (length(time_zone) BETWEEN 1 AND 100),
    -- the job template: what each fire enqueues
    job_type         text        NOT NULL CHECK (length(job_type) BETWEEN 1 AND 100),
    job_payload      jsonb       NOT NULL DEFAULT '{}',
    job_queue        text        NOT NULL DEFAULT 'default' CHECK (length(job_queue) BETWEEN 1 AND 100),
    job_priority     smallint    NOT NULL DEFAULT 0 CHECK (job_priority BETWEEN -100 AND 100),
    job_ordering_key text        CHECK (length(job_ordering_key) BETWEEN 1 AND 255),
    job_max_attempts integer     CHECK (job_max_attempts BETWEEN 1 AND 1000),
    missed_runs      text        NOT NULL DEFAULT 'skip' CHECK (missed_runs IN ('skip', 'run_once', 'run_all')),
    backfill_limit   integer     NOT NULL DEFAULT 10 CHECK (backfill_limit BETWEEN 1 AND 1000),
    overlap          text        NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow', 'skip', 'queue')),
    paused           boolean     NOT NULL DEFAULT false,
    start_at         timestamptz,
    end_at           timestamptz CHECK (end_at > start_at),
    -- The first fire not handled yet; null when none is left (past end_at). The firer moves it on in the
    -- transaction that enqueues the fire's job, under the row's lock.
    next_fire_at     timestamptz,
    -- The last fire handled and the one before it (a fire's job may be created up to 30 s ahead, and GET shows
    -- the last fire that is due): its instant, what happened ('enqueued', 'skipped_overlap', 'queue_full',
    -- 'invalid') and its job.
    last_fire_at     timestamptz,
    last_outcome     text,
    last_job_id      bigint,
    prev_fire_at     timestamptz,
    prev_outcome     text,
    prev_job_id      bigint,
    -- the job of the latest fire that enqueued one: 'overlap: skip' skips while it is unfinished
    latest_job_id    bigint,
    fired            bigint      NOT NULL DEFAULT 0,
    skipped          bigint      NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);

-- Firing reads only what is due: one range scan in fire order. 'overlap: skip' schedules are decided at their
-- fire instant (the previous job's state then is what counts), the others up to 30 s ahead, so the two are
-- kept apart in the index and each firer query is one range of one of them. Paused schedules and finished
-- ones (next_fire_at null) are not in it at all. tenant_id last: fires of one instant come tenant by tenant, so a
-- batch of 1,000 "every minute" fires touches about ten tenants (one max_queued check each), not a thousand.
CREATE INDEX schedules_due_idx ON schedules ((overlap = 'skip'), next_fire_at, tenant_id)
    WHERE NOT paused AND next_fire_at IS NOT NULL;

-- Listing (a tenant's, or every tenant's page by page for admins) reads the primary key: a tenant has at most
-- max_schedules of them. No index on next_fire_at alone: every fire rewrites it.
