-- An enqueue that takes a tenant's admission grant (V4) marks it used instead of deleting it, and the scheduler reads
-- the used ones at every tick through this partial index: what changed since its last tick, a row or two, instead of
-- every grant outstanding. With the tenants bench's 1,000 trickling tenants holding one each, the read of all of
-- them every 20 ms was 1.3 ms of PostgreSQL 15 alone and 3.1 ms under the flood (LOAD with and without them,
-- pg_stat_statements), and decoding their rows was the scheduler thread's largest allocation (JFR), which set the
-- server's young collections going every 8 s. The scheduler deletes a used row, or makes it a grant again, at its
-- next grant pass; it still reads every unused grant once a second, and when it becomes the leader.
ALTER TABLE admission_grants ADD COLUMN used_at timestamptz;
CREATE INDEX admission_grants_used_idx ON admission_grants (tenant_id) WHERE used_at IS NOT NULL;
