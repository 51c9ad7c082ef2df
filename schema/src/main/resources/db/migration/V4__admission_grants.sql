-- An admission the active scheduler made in advance for a quiet tenant (no admissible job waiting, active in
-- the last minute): the tenant's next due job without an ordering key is inserted as ready and takes the
-- row (INSERT_JOBS in JobStore deletes it), so it starts without waiting for a scheduler round trip. The
-- scheduler takes the tenant's token, counts the grant against max_running and charges it to the tenant's
-- fair-queueing virtual time when it grants, so every limit holds as for any other admission. The job is
-- ranked -Infinity, at the front of the claim order, where weighted fair queueing puts a tenant that
-- becomes active (LOAD leaves -Infinity out of the virtual time).
-- At most one per tenant (the primary key); the scheduler revokes it when the tenant is paused, has jobs
-- waiting, or stays quiet for a minute.
CREATE TABLE admission_grants (
    tenant_id  text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    granted_at timestamptz NOT NULL DEFAULT now()
);
