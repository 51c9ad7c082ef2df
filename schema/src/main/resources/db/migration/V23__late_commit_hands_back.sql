-- A job started in its enqueue (Enqueue.INSERT_JOBS: inserted running under a worker's lease, LocalStarts) whose
-- transaction commits after that worker stopped (it unregistered: a deploy, a restart of the application's process)
-- is handed back at the commit: ready again, at its place in the claim order, the attempt not counted, and the
-- workers woken. Committed as it was, it was a running job that nobody would start: it waited out its lease, and a
-- reaper then took it back with the attempt counted (at max_attempts 1: dead without a run).
-- A deferred constraint trigger runs at the commit, in the committing transaction; the row is checked as it is then
-- (fenced as the worker's hand-back is). A live worker hands back a commit that came too late in the lease itself
-- (Worker, the start margin). The rule reads no clock: the database's real clock against a lease written on a test's
-- SettableClock would hand back jobs that the worker, on the same settable clock, then also starts.
-- Only rows an enqueue inserted running: created, admitted and started at once (a row written running by hand, as
-- tests do to hold a lease, is left alone).
CREATE FUNCTION fairq_hand_back_late_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM workers WHERE id = NEW.locked_by) THEN
        RETURN NULL; -- the common case: committed while its worker is registered (one primary-key probe)
    END IF;
    UPDATE jobs j SET status = 'ready', locked_by = NULL, locked_until = NULL, started_at = NULL, attempts = j.attempts - 1
    WHERE j.id = NEW.id AND j.status = 'running' AND j.locked_by = NEW.locked_by AND j.attempts = 1
      AND j.started_at = j.created_at AND j.cancel_requested_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = j.locked_by);
    IF FOUND THEN
        PERFORM pg_notify('fairq_ready', '');
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER jobs_hand_back_late_start AFTER INSERT ON jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.status = 'running' AND NEW.attempts = 1 AND NEW.started_at = NEW.created_at
          AND NEW.admitted_at = NEW.created_at)
    EXECUTE FUNCTION fairq_hand_back_late_start();
