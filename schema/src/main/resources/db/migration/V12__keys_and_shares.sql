-- Fairness below the tenant (issue 14).
--
-- concurrency_key: a shared resource a job uses; the tenant's concurrency_limits map says how many jobs of a key
-- may be admitted or running at once (a key without an entry is unlimited). Exact because the scheduler (the one
-- admitter, fenced by its lock connection) counts each key's ready and running jobs in the LOAD every tick starts
-- from, and a keyed job never takes an admission grant (Enqueue.INSERT_JOBS).
--
-- fairness_key: a tenant's own customer, project or user; the tenant's share is split among its keys with jobs
-- waiting by weighted fair queueing one level down, with optional key_weights (a map, key to weight).

ALTER TABLE jobs
    ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 255),
    ADD COLUMN fairness_key    text CHECK (length(fairness_key) BETWEEN 1 AND 255),
    -- how long a succeeded attempt's handler ran (microseconds, the worker's clock): what shares by worker time
    -- learn from. started_at..finished_at also holds the wait for a thread after a prefetching claim and the
    -- group commit of the completion, which doubled a 5 ms job's apparent cost under load.
    ADD COLUMN run_us          bigint CHECK (run_us >= 0);

-- A map from key (1-255 characters) to a whole number in [lo, hi], at most 1000 entries (TenantLimit). CASE, not
-- AND/OR: PostgreSQL does not promise to evaluate those left to right, and jsonb_each of an array, or a string
-- cast to numeric, is an error where the constraint must simply say no.
CREATE FUNCTION fairq_valid_key_map(m jsonb, lo integer, hi integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(m) <> 'object' THEN false
                WHEN (SELECT count(*) FROM jsonb_each(m)) > 1000 THEN false
                ELSE NOT EXISTS (SELECT 1 FROM jsonb_each(m) e
                                 WHERE CASE WHEN length(e.key) NOT BETWEEN 1 AND 255 THEN true
                                            WHEN jsonb_typeof(e.value) <> 'number' THEN true
                                            ELSE e.value::numeric <> trunc(e.value::numeric)
                                                 OR e.value::numeric NOT BETWEEN lo AND hi END)
           END
$$;

ALTER TABLE tenants
    ADD COLUMN concurrency_limits jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT tenants_concurrency_limits_check CHECK (fairq_valid_key_map(concurrency_limits, 0, 100000)),
    ADD COLUMN key_weights jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT tenants_key_weights_check CHECK (fairq_valid_key_map(key_weights, 1, 1000));

-- Admission reads a tenant's waiting jobs per *lane*: a (fairness key, concurrency key) pair. The jobs without
-- either key keep jobs_admit_idx, now only theirs; the others live in jobs_admit_key_idx, one range per lane, so a
-- round reads each lane with room up to its room (a full concurrency key is not read at all: no head-of-line
-- blocking behind its backlog) and finds the lanes with a loose index scan (one probe per lane, none per job).
-- Every job is in exactly one of the two indexes: no job pays for a second entry. '' stands for "no key" (keys
-- are 1-255 characters), so that the pair is an equality an index range can serve. A parked job (no live worker
-- can run it, V11's no_worker_since) stays out of both, as it stayed out of V11's jobs_admit_idx.
DROP INDEX jobs_admit_idx;
CREATE INDEX jobs_admit_idx ON jobs (tenant_id, sort_key, id) INCLUDE (run_at)
    WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
      AND concurrency_key IS NULL AND fairness_key IS NULL;
CREATE INDEX jobs_admit_key_idx
    ON jobs (tenant_id, (coalesce(fairness_key, '')), (coalesce(concurrency_key, '')), sort_key, id) INCLUDE (run_at)
    WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
      AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL);
