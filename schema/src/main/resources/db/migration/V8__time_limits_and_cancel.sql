-- Time limits and the cancellation of running jobs (issue 10).
--
-- timeout_ms: this job's time limit per attempt; NULL means the default of its type (registered with the
-- handler, see HandlerRegistry), else the worker's. 1 ms to 24 h: JobRequest.MIN_TIMEOUT / MAX_TIMEOUT,
-- proven equal by LimitRangesMatchTheSchemaTest.
ALTER TABLE jobs ADD COLUMN timeout_ms integer CHECK (timeout_ms BETWEEN 1 AND 86400000);

-- cancel_requested_at: someone asked to cancel the job while it was running. The worker running it learns
-- through NOTIFY fairq_cancel (payload: the job id, sent at commit) or, should that be missed, through its
-- periodic fenced check, and ends the attempt 'cancelled'. Every other way out of 'running' honours it too:
-- a failure, a lease the reaper takes back and a hand-back all end 'cancelled' instead of going back to
-- waiting. Only a success wins over it (the handler's effect happened; the column stays as the record of
-- a cancel that came too late). So a job that was asked to stop never waits or runs again unless an
-- operator replays it (which clears the column), and the table says so whatever the code does:
ALTER TABLE jobs ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE jobs ADD CONSTRAINT jobs_cancel_request_only_ends
    CHECK (cancel_requested_at IS NULL OR status IN ('running', 'succeeded', 'cancelled'));
