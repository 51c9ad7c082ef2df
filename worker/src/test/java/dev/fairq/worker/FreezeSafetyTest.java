package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A worker process frozen with SIGSTOP past its lease while it runs 8 jobs and holds more it has claimed but
 * not started; another worker reaps the lapsed leases and runs those jobs; then the frozen process resumes.
 * It must start none of the jobs it had claimed before the freeze: only the deliveries in flight at the
 * freeze may run twice.
 */
class FreezeSafetyTest extends PlatformTest {
    private static final int JOBS = 40;
    private static final int THREADS = 8;
    /** Short, so the test waits seconds; its heartbeat (a quarter) survives a 4.5 s stall of a loaded machine. */
    private static final long LEASE_MS = 6_000;
    /** Long enough that the 8 first deliveries, however unevenly a loaded machine starts them, overlap. */
    private static final long JOB_MS = 5_000;

    private ChildWorker child;

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        if (child != null && child.process.isAlive()) {
            child.resume();
            child.process.destroyForcibly().waitFor();
        }
    }

    private Set<Long> ids(String sql) {
        return new HashSet<>(db.dsl().fetch(sql).getValues(0, Long.class));
    }

    @Test
    void aWorkerFrozenPastItsLeaseStartsNoneOfTheJobsItHadClaimedOnlyInFlightOnesRunTwice() throws Exception {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("acme", "sleep").payload("{\"ms\": " + JOB_MS + "}").build());
        List<Long> all = platform.store.enqueueAll(db.dsl(), jobs).stream().map(r -> r.job().getId()).toList();
        platform.store.admit(db.dsl(), all); // all ready: the frozen worker claims its threads plus its prefetch at once
        platform.startScheduler(SchedulerConfig.defaults()); // re-admits what the reaper takes back

        child = ChildWorker.start(db, "frozen", THREADS, THREADS, LEASE_MS, 5_000);
        // freeze while every thread is inside a delivery that began under 4 s ago (none is about to end, so
        // no thread is between two jobs) and some claimed jobs wait for a thread
        await("8 deliveries in flight, more claimed").atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> db.count("""
                        SELECT count(*) FROM test_runs WHERE worker = 'frozen' AND ended_at IS NULL
                          AND started_at > clock_timestamp() - interval '4 seconds'""") == THREADS
                        && db.count("SELECT count(*) FROM jobs WHERE status = 'running' AND locked_by = 'frozen'") >= THREADS + 2);
        child.freeze();

        Set<Long> inFlight = ids("SELECT job_id FROM test_runs WHERE worker = 'frozen' AND ended_at IS NULL");
        Set<Long> claimed = ids("SELECT id FROM jobs WHERE status = 'running' AND locked_by = 'frozen'");
        Set<Long> waiting = new HashSet<>(claimed);
        waiting.removeAll(inFlight);
        assertEquals(THREADS, inFlight.size());
        // a fresh worker holds 3 beyond its threads until a job has finished (Worker.jobsPerClaimRoundTrip)
        assertTrue(waiting.size() >= 2, "claimed but not started at the freeze: " + waiting);
        // every claim is the job's first attempt: all were ready, none had run
        assertEquals(claimed.size(), db.count("SELECT count(*) FROM jobs WHERE locked_by = 'frozen' AND attempts = 1"));

        // another worker reaps the lapsed leases and delivers those jobs while the first is frozen
        platform.startWorker(TestPlatform.fastConfig("rescuer", THREADS), RecordingHandlers.registry(db.dataSource()));
        await("every lease of the frozen worker was taken back").atMost(Duration.ofMinutes(2))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE locked_by = 'frozen'") == 0);
        child.resume();

        await("every job succeeded").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == JOBS);
        child.process.destroy(); // SIGTERM: a graceful stop, so nothing the frozen worker still does goes uncounted
        await("the frozen worker exits").atMost(Duration.ofMinutes(1)).until(() -> !child.process.isAlive());

        Set<Long> twice = ids("SELECT job_id FROM test_runs GROUP BY job_id HAVING count(*) > 1");
        // the attempts it had claimed (attempt 1); a later claim of its own, after the reaper, is a new attempt
        long startedAfterResume = db.count("""
                SELECT count(*) FROM test_runs WHERE worker = 'frozen' AND attempt = 1 AND job_id = ANY(?)""",
                (Object) waiting.toArray(Long[]::new));
        String output = child.output();
        System.out.printf("FREEZE-TEST in_flight=%d claimed_waiting=%d redelivered=%d waiting_started_by_frozen=%d%n",
                inFlight.size(), waiting.size(), twice.size(), startedAfterResume);

        assertEquals(JOBS, db.count("SELECT count(DISTINCT job_id) FROM test_runs"), "every job ran");
        assertEquals(0, startedAfterResume, "the frozen worker started none of the jobs it had claimed before the freeze");
        assertTrue(inFlight.containsAll(twice), "only deliveries in flight at the freeze ran twice: " + twice + " vs " + inFlight);
        assertTrue(twice.size() <= inFlight.size());
        assertEquals(0, child.process.exitValue(), output);
        assertTrue(output.contains("not started") || output.contains("before it started") || output.contains("lease gone"),
                "the frozen worker said what it did with the jobs it had claimed:\n" + output);
    }
}
