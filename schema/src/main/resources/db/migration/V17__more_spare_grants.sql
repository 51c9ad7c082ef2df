-- More than one spare tenant grant (issue 16). V16's one spare covered 60-80% of the enqueues of a tenant
-- enqueueing every 20 ms under the latency bench's background load: a tick renewed a used grant 25-90 ms after the
-- use there, so two grants (40 ms at that rate) ran out at the slow ticks, and each job that found none waited a round
-- (created -> admitted p99 57-101 ms). The scheduler now gives such a tenant one more spare each time it finds every
-- grant used, up to 8 grants (slots 0-7), and takes one back for each spare unused for a second. Each is a grant as in
-- V4: a token, a place under max_running, a charge.
ALTER TABLE admission_grants DROP CONSTRAINT admission_grants_slot_check;
ALTER TABLE admission_grants ADD CONSTRAINT admission_grants_slot_check CHECK (slot BETWEEN 0 AND 7);
