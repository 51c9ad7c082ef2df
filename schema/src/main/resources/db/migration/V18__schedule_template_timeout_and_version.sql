-- A schedule's job template carries the two job fields that came after schedules (V9): the time limit of each
-- attempt (V8's jobs.timeout_ms) and the payload's version (V11). Null / 1: the fired jobs' defaults, as before.
ALTER TABLE schedules
    ADD COLUMN job_timeout_ms integer CHECK (job_timeout_ms BETWEEN 1 AND 86400000),
    ADD COLUMN job_payload_version integer NOT NULL DEFAULT 1 CHECK (job_payload_version BETWEEN 1 AND 1000000);
