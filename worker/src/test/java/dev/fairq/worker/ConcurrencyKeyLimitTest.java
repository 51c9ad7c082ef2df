package dev.fairq.worker;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.TenantLimit;
import dev.fairq.schema.TenantStore;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Concurrency keys with real workers (two processes' worth of engines, 8 threads): a handler counts the jobs of
 * its key running in it at every start and keeps the maximum. A saturated slow key never runs more than its
 * limit, the tenant's other keys and another tenant finish while its backlog waits, and a limit raised live is
 * used (and not passed).
 */
class ConcurrencyKeyLimitTest {
    private final TestDatabase db = TestDatabase.get();
    private TestPlatform platform;
    /** Per key: jobs of it inside a handler right now, and the most seen at any start. */
    private final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> maxAtStart = new ConcurrentHashMap<>();

    @BeforeEach
    void setUp() {
        db.reset();
        db.createTenant("t");
        db.createTenant("other");
        platform = new TestPlatform(db);
    }

    @AfterEach
    void tearDown() throws Exception {
        platform.close();
    }

    private HandlerRegistry recording() {
        return new HandlerRegistry().register("keyed", job -> {
            String key = job.payload().path("key").asText();
            int now = running.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            maxAtStart.computeIfAbsent(key, k -> new AtomicInteger()).accumulateAndGet(now, Math::max);
            try {
                Thread.sleep(job.payload().path("ms").asLong()); // the job's simulated work
            } finally {
                running.get(key).decrementAndGet();
            }
        });
    }

    private static JobRequest job(String tenant, String key, long ms) {
        JobRequest.Builder b = JobRequest.builder(tenant, "keyed").payload("{\"key\": \"" + key + "\", \"ms\": " + ms + "}");
        return (key.startsWith("-") ? b : b.concurrencyKey(key)).build();
    }

    private long succeeded(String where) {
        return db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND " + where);
    }

    @Test
    void aSaturatedKeyRunsAtItsLimitWhileEverythingElseGoesOn() {
        Map<String, Object> limits = new java.util.HashMap<>();
        limits.put("slow", 2);
        for (int k = 0; k < 10; k++) limits.put("k" + k, 2);
        new TenantStore().write(db.dsl(), "t", Map.of(TenantLimit.CONCURRENCY_LIMITS.field(),
                TenantLimit.CONCURRENCY_LIMITS.accept(limits)), false, "test");

        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 40; i++) jobs.add(job("t", "slow", 1_000)); // first in the tenant's order: 20 s at 2
        for (int k = 0; k < 10; k++) for (int i = 0; i < 15; i++) jobs.add(job("t", "k" + k, 20));
        for (int i = 0; i < 40; i++) jobs.add(job("t", "-none", 10));
        for (int i = 0; i < 60; i++) jobs.add(job("other", "-other", 10));
        platform.store.enqueueAll(db.dsl(), jobs);
        platform.startScheduler(SchedulerConfig.defaults());
        HandlerRegistry handlers = recording();
        platform.startWorker(TestPlatform.fastConfig("w1", 4), handlers);
        platform.startWorker(TestPlatform.fastConfig("w2", 4), handlers);

        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(50))
                .until(() -> succeeded("concurrency_key LIKE 'k%'") == 150 && succeeded("tenant_id = 'other'") == 60
                        && succeeded("tenant_id = 't' AND concurrency_key IS NULL") == 40);
        long slowDone = succeeded("concurrency_key = 'slow'");
        System.out.printf("KEY-TEST slow_done_when_others_done=%d max_at_start=%s%n", slowDone, maxAtStart);
        assertTrue(slowDone < 40, "the others finished while the slow key's backlog still waited (" + slowDone + " done)");
        assertEquals(2, maxAtStart.get("slow").get(), "the slow key ran at its limit, never past it");
        for (int k = 0; k < 10; k++) {
            assertTrue(maxAtStart.get("k" + k).get() <= 2, "key k" + k + " ran " + maxAtStart.get("k" + k));
        }
        assertTrue(maxAtStart.get("-none").get() > 2 || maxAtStart.get("-other").get() > 2,
                "jobs without a key are not limited (the check above is not vacuous)");

        // raised live: the slow key uses its new limit and does not pass it
        maxAtStart.get("slow").set(0);
        new TenantStore().write(db.dsl(), "t", Map.of(TenantLimit.CONCURRENCY_LIMITS.field(),
                TenantLimit.CONCURRENCY_LIMITS.accept(Map.of("slow", 4))), false, "test");
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(50))
                .until(() -> maxAtStart.get("slow").get() >= 4);
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(100))
                .until(() -> succeeded("concurrency_key = 'slow'") == 40);
        assertEquals(4, maxAtStart.get("slow").get(), "at most the new limit");
        assertEquals(1, db.count("SELECT count(*) FROM tenant_audit WHERE tenant_id = 't' AND action = 'patch' "
                + "AND new_values -> 'concurrency_limits' ->> 'slow' = '4'"), "the change is audited");
    }
}
