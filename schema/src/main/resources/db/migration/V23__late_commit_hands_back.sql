-- A job started in its enqueue (Enqueue.INSERT_JOBS: inserted running under a worker's lease, LocalStarts) whose
-- transaction commits after that lease ran out is handed back at the commit: ready again, at its place in the claim
-- order, the attempt not counted, and the workers woken. Committed as it was, it was a running job with a lapsed lease
-- the moment it became visible, and any worker's reaper could take it back before the worker that awaited its commit
-- handed it back (the attempt counted: at max_attempts 1 dead without a run), and always when that worker no longer
-- awaited it (stopped or restarted meanwhile, or past its hour or 1,024 entries). A deferred constraint trigger runs
-- at the commit, in the committing transaction; the row is checked as it is then (fenced as the worker's hand-back
-- is), and only when the lease is over by the database's clock, so the worker, whose own reckoning of the lease
-- starts before the statement, never starts a job handed back here.
CREATE FUNCTION fairq_hand_back_late_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.locked_until >= clock_timestamp() THEN
        RETURN NULL; -- the common case: committed within the lease, no statement
    END IF;
    UPDATE jobs SET status = 'ready', locked_by = NULL, locked_until = NULL, started_at = NULL, attempts = attempts - 1
    WHERE id = NEW.id AND status = 'running' AND locked_by = NEW.locked_by AND attempts = 1
      AND started_at = created_at AND cancel_requested_at IS NULL AND locked_until < clock_timestamp();
    IF FOUND THEN
        PERFORM pg_notify('fairq_ready', '');
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER jobs_hand_back_late_start AFTER INSERT ON jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.status = 'running')
    EXECUTE FUNCTION fairq_hand_back_late_start();
