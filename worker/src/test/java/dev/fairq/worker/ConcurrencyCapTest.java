package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * max_running holds across processes: 8 handler threads in two workers, a capped tenant (3) and an
 * uncapped neighbour. Checked twice: by sampling the jobs table while the load runs, and exactly, from the
 * recorded start and end of every run.
 */
class ConcurrencyCapTest extends PlatformTest {

    @Override
    void prepareDatabase() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 3);
        db.createTenant("free");
    }

    @Test
    void maxRunningIsNeverExceeded() throws Exception {
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            // long enough that runs overlap even on a starved machine, so "the cap is reached" cannot miss
            jobs.add(JobRequest.builder("capped", "sleep").payload("{\"ms\": " + (50 + i % 50) + "}").build());
            jobs.add(JobRequest.builder("free", "sleep").payload("{\"ms\": " + (20 + i % 30) + "}").build());
        }
        platform.store.enqueueAll(db.dsl(), jobs);
        platform.startScheduler(SchedulerConfig.defaults());
        HandlerRegistry handlers = RecordingHandlers.registry(db.dataSource());
        platform.startWorker(TestPlatform.fastConfig("w1", 4), handlers);
        platform.startWorker(TestPlatform.fastConfig("w2", 4), handlers);

        AtomicLong maxSampled = new AtomicLong();
        AtomicLong samples = new AtomicLong();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                long n = db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'capped' AND status = 'running'");
                maxSampled.accumulateAndGet(n, Math::max);
                samples.incrementAndGet();
            }
        });
        sampler.start();
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(100))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 300);
        sampling.set(false);
        sampler.join();

        long maxOverlap = db.count("""
                SELECT coalesce(max(c), 0) FROM (
                    SELECT (SELECT count(*) FROM test_runs o JOIN jobs oj ON oj.id = o.job_id
                            WHERE oj.tenant_id = 'capped' AND o.started_at <= r.started_at AND r.started_at < o.ended_at) AS c
                    FROM test_runs r JOIN jobs j ON j.id = r.job_id WHERE j.tenant_id = 'capped') x""");
        long maxOverlapFree = db.count("""
                SELECT coalesce(max(c), 0) FROM (
                    SELECT (SELECT count(*) FROM test_runs o JOIN jobs oj ON oj.id = o.job_id
                            WHERE oj.tenant_id = 'free' AND o.started_at <= r.started_at AND r.started_at < o.ended_at) AS c
                    FROM test_runs r JOIN jobs j ON j.id = r.job_id WHERE j.tenant_id = 'free') x""");
        System.out.printf("CAP-TEST samples=%d max_sampled_running=%d max_overlapping_runs=%d uncapped_neighbour_max=%d%n",
                samples.get(), maxSampled.get(), maxOverlap, maxOverlapFree);

        assertTrue(maxSampled.get() <= 3, "sampled running " + maxSampled.get());
        assertTrue(maxOverlap <= 3, "overlapping runs of the capped tenant: " + maxOverlap);
        assertEquals(3, maxOverlap, "the cap is reached, so the check is not vacuous");
        assertTrue(maxOverlapFree > 3, "the uncapped neighbour used more than 3 threads: " + maxOverlapFree);
        assertTrue(samples.get() > 10, "the sampler took samples");
    }
}
