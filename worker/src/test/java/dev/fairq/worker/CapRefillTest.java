package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A tenant at its max_running gets its next job admitted as soon as one of its jobs ends, not at the scheduler's
 * next timed tick. Measured over the API before the fix: a tenant with max_running 1 and 50 ms jobs ran one job
 * every ~250 ms (the idle tick), 4 a second instead of ~20; with max_running 2, 30 such jobs took 3.7 s instead of
 * under one. The worker woke the scheduler when its claim came short, but before its completion had committed, so
 * the tick still saw the tenant at its cap. Here the scheduler's idle tick and the worker's poll are 60 s: the jobs
 * finish within the wait below only if the completion itself leads to a tick.
 */
class CapRefillTest extends PlatformTest {

    @Override
    void prepareDatabase() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 1);
    }

    @Test
    void aCompletionAtTheCapAdmitsTheNextJobWithoutWaitingForATimedTick() {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 5; i++) jobs.add(JobRequest.builder("capped", "record").build());
        platform.store.enqueueAll(db.dsl(), jobs);
        platform.startScheduler(SchedulerConfig.builder().idleInterval(Duration.ofSeconds(60)).build());
        platform.startWorker(WorkerConfig.builder().workerId("w1").threads(4)
                .lease(Duration.ofSeconds(30), Duration.ofSeconds(1))
                .pollInterval(Duration.ofSeconds(60)).build(), RecordingHandlers.registry(db.dataSource()));

        // without the wake-up after the completion each job after the first waits 60 s
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 5);
        assertEquals(5, db.count("SELECT count(*) FROM test_runs"), "each job ran once");
        assertEquals(0, db.count("""
                SELECT count(*) FROM test_runs a JOIN test_runs b ON a.job_id < b.job_id
                WHERE a.started_at < b.ended_at AND b.started_at < a.ended_at"""), "never two at once (max_running 1)");
    }
}
