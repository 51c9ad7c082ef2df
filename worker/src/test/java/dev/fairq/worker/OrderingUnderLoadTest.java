package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobRequest;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Per-key order under concurrency: 2,000 jobs over 50 ordering keys, 8 handler threads in two workers,
 * random durations and transient failures. Every run records its start and end (database clock); order
 * and exclusivity are then checked on those records.
 */
class OrderingUnderLoadTest extends PlatformTest {

    @Test
    void jobsOfOneKeyStartInEnqueueOrderAndNeverOverlap() {
        Random random = new Random(42);
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            int sleep = random.nextInt(4);
            boolean failOnce = random.nextInt(100) < 5;
            jobs.add(JobRequest.builder("acme", "ordered").orderingKey("key-" + random.nextInt(50))
                    .payload("{\"ms\": " + sleep + ", \"fail_once\": " + failOnce + "}").build());
        }
        platform.store.enqueueAll(db.dsl(), jobs);

        DSLContext runs = Database.dsl(db.dataSource());
        RetryPolicy quick = new RetryPolicy(Duration.ofMillis(5), 2.0, Duration.ofMillis(20), 0.5);
        HandlerRegistry handlers = new HandlerRegistry().register("ordered", job -> {
            long runId = runs.resultQuery("INSERT INTO test_runs (job_id, attempt, worker, ordering_key) "
                    + "VALUES (?, ?, ?, ?) RETURNING run_id", job.jobId(), job.attempt(), job.workerId(), job.orderingKey())
                    .fetchOne(0, Long.class);
            try {
                Thread.sleep(job.payload().path("ms").asLong()); // the job's simulated work
                if (job.payload().path("fail_once").asBoolean() && job.attempt() == 1) {
                    throw new IllegalStateException("transient failure");
                }
            } finally {
                runs.execute("UPDATE test_runs SET ended_at = clock_timestamp() WHERE run_id = ?", runId);
            }
        }, quick);
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 4), handlers);
        platform.startWorker(TestPlatform.fastConfig("w2", 4), handlers);

        await().atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(250))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 2_000);

        long failedFirst = db.count("SELECT count(*) FROM jobs WHERE attempts = 2");
        long inversions = db.count("""
                WITH first_start AS (
                    SELECT job_id, ordering_key, min(started_at) AS s FROM test_runs GROUP BY job_id, ordering_key)
                SELECT count(*) FROM first_start a JOIN first_start b
                  ON a.ordering_key = b.ordering_key AND a.job_id < b.job_id AND b.s < a.s""");
        long overlaps = db.count("""
                SELECT count(*) FROM test_runs a JOIN test_runs b
                  ON a.ordering_key = b.ordering_key AND a.run_id <> b.run_id
                 AND a.started_at <= b.started_at AND b.started_at < a.ended_at""");
        long startedBeforePredecessorFinished = db.count("""
                WITH runs AS (SELECT job_id, ordering_key, min(started_at) AS s, max(ended_at) AS e
                              FROM test_runs GROUP BY job_id, ordering_key),
                     ordered AS (SELECT *, lag(e) OVER (PARTITION BY ordering_key ORDER BY job_id) AS prev_end FROM runs)
                SELECT count(*) FROM ordered WHERE prev_end IS NOT NULL AND s < prev_end""");
        System.out.printf("ORDERING-TEST jobs=2000 keys=50 transient_failures=%d inversions=%d overlaps=%d%n",
                failedFirst, inversions, overlaps);

        assertEquals(0, inversions, "order inversions");
        assertEquals(0, overlaps, "overlapping runs of one key");
        assertEquals(0, startedBeforePredecessorFinished, "a job started before its predecessor's last attempt ended");
        assertEquals(2_000 + failedFirst, db.count("SELECT count(*) FROM test_runs"), "one run per attempt");
        org.junit.jupiter.api.Assertions.assertTrue(failedFirst > 50, "the workload had transient failures: " + failedFirst);
    }
}
