package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The active scheduler is a separate process, SIGKILLed mid-flood. The standby (this JVM) takes over within
 * 5 seconds, and every job still succeeds exactly once.
 */
class SchedulerFailoverProcessTest extends PlatformTest {
    private static final int JOBS = 3_000;
    private static final String CHILD = "fairq-child-scheduler";
    private Process child;

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        if (child != null) child.destroyForcibly().waitFor();
    }

    /** Sessions of the given application that hold the scheduler's advisory lock. */
    private long lockHolders(String applicationName) {
        return ((Number) db.dsl().fetchValue("""
                SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = ? AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())""", applicationName)).longValue();
    }

    @Test
    void sigkillOfTheActiveSchedulerProcessHandsOverWithinFiveSecondsAndNoJobRunsTwice() throws Exception {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < JOBS; i++) jobs.add(JobRequest.builder("acme", "sleep").payload("{\"ms\": 2}").build());
        platform.store.enqueueAll(db.dsl(), jobs);

        child = SchedulerProcessMain.start(db, CHILD, "fairq-child-scheduler");
        await("the child process leads").atMost(Duration.ofMinutes(1)).until(() -> lockHolders(CHILD) == 1);

        SchedulerService standby = platform.startScheduler(SchedulerConfig.defaults());
        HandlerRegistry handlers = RecordingHandlers.registry(db.dataSource());
        platform.startWorker(TestPlatform.fastConfig("w1", 4), handlers);
        platform.startWorker(TestPlatform.fastConfig("w2", 4), handlers);

        await("a third of the flood is done").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(20))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") >= JOBS / 3);
        assertTrue(!standby.isLeader(), "the standby did not lead while the child held the lock");
        child.destroyForcibly().waitFor(); // SIGKILL: no shutdown, PostgreSQL sees the connection drop
        long killedAt = System.nanoTime();
        long doneAtKill = db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'");

        await("the standby takes over").atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> standby.isLeader() && lockHolders("fairq-test-scheduler") == 1);
        long takeoverMillis = (System.nanoTime() - killedAt) / 1_000_000;
        await("every job succeeded").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == JOBS);
        System.out.printf("FAILOVER-TEST jobs=%d done_at_kill=%d takeover_ms=%d%n", JOBS, doneAtKill, takeoverMillis);

        assertTrue(doneAtKill < JOBS, "the kill happened mid-flood");
        assertEquals(JOBS, db.count("SELECT count(*) FROM test_runs"), "one run per job: nothing admitted or run twice");
        assertEquals(JOBS, db.count("SELECT count(DISTINCT job_id) FROM test_runs"));
        assertEquals(JOBS, db.count("SELECT count(*) FROM jobs WHERE attempts = 1"));
        assertEquals(0, lockHolders(CHILD));
    }
}
