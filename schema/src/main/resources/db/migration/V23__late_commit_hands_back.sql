-- A job started in its enqueue (Enqueue.INSERT_JOBS: inserted running under a worker's lease, LocalStarts) whose
-- transaction commits after that lease ran out, or after that worker stopped (it unregistered), is handed back at the
-- commit: ready again, at its place in the claim order, the attempt not counted, and the workers woken. Committed as
-- it was, it was a running job that nobody would start: with a lapsed lease any worker's reaper could take it back
-- before the worker that awaited its commit handed it back (the attempt counted: at max_attempts 1 dead without a
-- run), and always when that worker no longer awaited it; after a stop it waited out its lease, then the same.
-- A deferred constraint trigger runs at the commit, in the committing transaction; the row is checked as it is then
-- (fenced as the worker's hand-back is). The worker never starts a job handed back here: its own reckoning of the
-- lease starts before the statement (a commit past the lease is too late for it too), and a stopped worker starts
-- nothing.
CREATE FUNCTION fairq_hand_back_late_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.locked_until >= clock_timestamp() AND EXISTS (SELECT 1 FROM workers WHERE id = NEW.locked_by) THEN
        RETURN NULL; -- the common case: committed within the lease of a live worker (one primary-key probe)
    END IF;
    UPDATE jobs j SET status = 'ready', locked_by = NULL, locked_until = NULL, started_at = NULL, attempts = j.attempts - 1
    WHERE j.id = NEW.id AND j.status = 'running' AND j.locked_by = NEW.locked_by AND j.attempts = 1
      AND j.started_at = j.created_at AND j.cancel_requested_at IS NULL
      AND (j.locked_until < clock_timestamp() OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = j.locked_by));
    IF FOUND THEN
        PERFORM pg_notify('fairq_ready', '');
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER jobs_hand_back_late_start AFTER INSERT ON jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.status = 'running')
    EXECUTE FUNCTION fairq_hand_back_late_start();
