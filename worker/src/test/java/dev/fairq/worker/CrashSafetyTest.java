package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A worker process is SIGKILLed mid-run; a new one finishes the work. Nothing is lost, and the only jobs
 * that run twice are ones the dead worker held at the moment it died.
 */
class CrashSafetyTest extends PlatformTest {
    private static final int JOBS = 10_000;
    private final List<ChildWorker> children = new ArrayList<>();

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        for (ChildWorker c : children) c.process.destroyForcibly().waitFor();
    }

    /**
     * Long enough that a live worker never loses a lease to a stall on a loaded machine (its heartbeat runs
     * every quarter lease): a re-run here must come from the kill, nothing else.
     */
    private static final long LEASE_MS = 10_000;

    @Test
    void sigkillAtFortyPercentLosesNothingAndRerunsOnlyWhatWasInFlight() throws Exception {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("acme", "record").payload("{\"n\":" + i + "}").build());
        platform.store.enqueueAll(db.dsl(), jobs);
        platform.startScheduler(SchedulerConfig.defaults());

        ChildWorker first = ChildWorker.start(db, "crash-first", 8, 8, LEASE_MS, 5000);
        children.add(first);
        await("first worker reaches 40%").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(20))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") >= JOBS * 4 / 10);
        first.kill();

        // What the dead worker held at its death: its lease rows (claimed, running, or finished but not yet
        // recorded). Nothing can change them now until the lease runs out and a reaper takes them back.
        long inFlight = db.count("SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'crash-first'");
        long doneAtKill = db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'");
        long startedAt = System.nanoTime();

        ChildWorker second = ChildWorker.start(db, "crash-second", 8, 8, LEASE_MS, 5000);
        children.add(second);
        await("every job succeeded").atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(200))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == JOBS);
        long recoveryMillis = (System.nanoTime() - startedAt) / 1_000_000;

        long runs = db.count("SELECT count(*) FROM test_runs");
        long distinct = db.count("SELECT count(DISTINCT job_id) FROM test_runs");
        long reruns = runs - distinct;
        long lost = JOBS - db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'");
        System.out.printf("CRASH-TEST jobs=%d done_at_kill=%d in_flight_at_kill=%d runs=%d reruns=%d lost=%d "
                + "recovery_ms=%d%n", JOBS, doneAtKill, inFlight, runs, reruns, lost, recoveryMillis);

        assertEquals(0, lost, "no job lost");
        assertEquals(JOBS, distinct, "every job ran");
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE status <> 'succeeded'"));
        assertTrue(reruns <= inFlight, "re-runs " + reruns + " must not exceed the jobs in flight at the kill " + inFlight);
        assertEquals(reruns, db.count("""
                SELECT count(*) FROM test_runs r WHERE r.worker = 'crash-first'
                  AND EXISTS (SELECT 1 FROM test_runs s WHERE s.job_id = r.job_id AND s.worker = 'crash-second')"""),
                "every re-run is of a job the killed worker had started");
        assertTrue(first.output().contains("WORKER STARTED"), first.output());
    }

    @Test
    void sigtermLetsTheRunningJobFinishHandsBackUnstartedOnesAndExitsZero() throws Exception {
        long running = platform.store.enqueue(db.dsl(),
                JobRequest.builder("acme", "sleep").payload("{\"ms\": 5000}").build()).job().getId();
        long waiting = platform.store.enqueue(db.dsl(),
                JobRequest.builder("acme", "sleep").payload("{\"ms\": 5000}").build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());

        // one handler thread and one prefetched job: the second job is claimed but cannot start
        ChildWorker child = ChildWorker.start(db, "graceful", 1, 1, 30_000, 20_000);
        children.add(child);
        await("both claimed, one running").atMost(Duration.ofMinutes(1)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'graceful'") == 2
                        && db.count("SELECT count(*) FROM test_runs") == 1);

        child.terminateAndAwaitExit();

        assertEquals(0, child.process.exitValue(), child.output());
        long ranFirst = db.count("SELECT job_id FROM test_runs");
        long other = ranFirst == running ? waiting : running;
        assertEquals("succeeded", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", ranFirst));
        assertTrue(db.count("SELECT count(*) FROM test_runs WHERE ended_at IS NOT NULL") == 1, "the running job completed");
        assertEquals("ready", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", other),
                "the claimed-but-unstarted job is handed back");
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", other), "its attempt is not counted");
        assertEquals(0, db.count("SELECT count(*) FROM workers WHERE id = 'graceful'"),
                () -> "the worker unregistered; its output:\n" + child.output());
    }

    /**
     * A stop that outlasts the grace: the job that finishes within it is recorded, the claimed one that never
     * started is handed back, the one still running when the grace (less its reserve) is over is left to its
     * lease, and the process exits 0 before the grace ends.
     */
    @Test
    void sigtermPastTheGraceLeavesTheRunningJobToItsLeaseAndExitsBeforeTheGraceEnds() throws Exception {
        long graceMs = 6_000;
        long endless = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "sleep").payload("{\"ms\": 120000}").build()).job().getId();
        long shortOne = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "sleep").payload("{\"ms\": 1500}").build()).job().getId();
        long waiting = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "sleep").payload("{\"ms\": 120000}").build()).job().getId();
        platform.store.admit(db.dsl(), List.of(endless, shortOne, waiting));

        ChildWorker child = ChildWorker.start(db, "past-grace", 2, 1, 30_000, graceMs);
        children.add(child);
        await("two running, one claimed").atMost(Duration.ofMinutes(1)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'past-grace'") == 3
                        && db.count("SELECT count(*) FROM test_runs") == 2);

        child.terminateAndAwaitExit();
        String output = child.output();
        assertEquals(0, child.process.exitValue(), output);

        assertEquals("succeeded", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", shortOne), output);
        assertEquals("ready", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", waiting), "handed back");
        assertEquals(0, db.count("SELECT attempts FROM jobs WHERE id = ?", waiting));
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE id = ? AND status = 'running' AND locked_by = 'past-grace'",
                endless), "left to its lease");
        assertEquals(1, db.count("SELECT count(*) FROM test_runs WHERE job_id = ? AND ended_at IS NULL", endless),
                "its handler was stopped, not finished");
        assertTrue(output.contains("1 jobs still running after"), output);
        java.util.regex.Matcher stoppedIn = java.util.regex.Pattern.compile("stopped in (\\d+) ms").matcher(output);
        assertTrue(stoppedIn.find(), output);
        assertTrue(Long.parseLong(stoppedIn.group(1)) < graceMs, "the stop ends within the grace: " + stoppedIn.group());
    }
}
