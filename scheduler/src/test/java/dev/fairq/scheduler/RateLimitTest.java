package dev.fairq.scheduler;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant's rate limit as the scheduler applies it: over every window of t simulated seconds the tenant is
 * admitted at most {@code burst + rate * t} jobs, and with work waiting it is admitted all of that (the
 * limit is not a throttle on top of a throttle). The buffer is far bigger than the rate, so the bucket is
 * the only thing that holds the tenant back.
 */
class RateLimitTest {
    static final double RATE = 10;
    static final int BURST = 5;

    final TestDatabase db = TestDatabase.get();

    @BeforeEach
    void reset() {
        db.reset();
        db.createTenant("t", 1, RATE, BURST, 100_000);
    }

    private SimulatedScheduler scheduler() {
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(1_000, 0).build());
        s.enqueue(jobs("t", 2_000));
        return s;
    }

    /** One tick at the current simulated time, then the simulated workers run what it admitted. */
    private static long[] tickAndRecord(SimulatedScheduler s) {
        int admitted = s.tick().admitted();
        s.completeReady();
        return new long[]{s.clock.nanoTime(), admitted};
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 99})
    void admissionsStayWithinBurstPlusRateOverEveryWindow(long seed) {
        SimulatedScheduler s = scheduler();
        Random random = new Random(seed);
        long start = s.clock.nanoTime();
        long end = start + Duration.ofSeconds(30).toNanos();

        List<long[]> record = new ArrayList<>();
        record.add(tickAndRecord(s)); // the first tick meets the tenant: its bucket starts full
        while (s.clock.nanoTime() < end) {
            // random small steps: mostly a few ms to 200 ms, sometimes the same instant again
            long step = random.nextInt(10) == 0 ? 0 : 1 + (long) (random.nextDouble() * 200_000_000L);
            s.clock.advance(Duration.ofNanos(Math.min(step, end - s.clock.nanoTime())));
            record.add(tickAndRecord(s));
        }

        assertEquals(BURST, record.get(0)[1], "a full bucket at the start: burst jobs at once");
        TokenBucketTest.assertWindowBound(record, BURST, RATE);

        long total = record.stream().mapToLong(r -> r[1]).sum();
        long budget = BURST + (long) (RATE * 30); // 305: everything the bucket gave in 30 s
        assertTrue(total >= budget - 2 && total <= budget,
                "work conserving: admitted " + total + " in 30 simulated seconds, the budget is " + budget);
        assertEquals(total, s.count("SELECT count(*) FROM jobs WHERE status = 'succeeded'"));
    }

    @Test
    void loweringTheRateTakesEffectAtTheNextTenantReload() {
        SimulatedScheduler s = scheduler();
        Duration step = Duration.ofMillis(100);
        // 10 simulated seconds at the old rate, ticking every 100 ms: the bucket is kept drained.
        long before = tickAndRecord(s)[1];
        for (int i = 0; i < 100; i++) {
            s.clock.advance(step);
            before += tickAndRecord(s)[1];
        }
        assertTrue(before >= BURST + 100 - 1 && before <= BURST + 100, "10 s at 10/s after a burst of 5: " + before);

        s.dsl.execute("UPDATE tenants SET rate_per_second = 2, updated_at = now() WHERE id = 't'");
        TokenBucket bucket = s.scheduler.tenants().get("t").bucket();
        Duration reload = SchedulerConfig.defaults().tenantReload();

        // Until the scheduler re-reads the tenants (tenantReload, 500 ms) the old rate still applies; by the
        // first tick at least tenantReload after the change, the new one does.
        long elapsed = 0;
        while (bucket.ratePerSecond() != 2.0) {
            assertTrue(elapsed <= reload.toNanos(), "still at the old rate " + elapsed + " ns after the update");
            s.clock.advance(step);
            elapsed += step.toNanos();
            tickAndRecord(s);
        }

        // From the reload on the bucket was drained (it was taken greedily at the reload tick), so the
        // following 10 s are worth 2/s * 10 s = 20 jobs, and never more than burst + 2 * t in any window.
        List<long[]> after = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            s.clock.advance(step);
            after.add(tickAndRecord(s));
        }
        TokenBucketTest.assertWindowBound(after, BURST, 2.0);
        long total = after.stream().mapToLong(r -> r[1]).sum();
        assertTrue(total >= 19 && total <= 21, "10 s at the new rate of 2/s: " + total);
        // ... and never even one job faster than that: at most one token is ever waiting, so at most 2/s
        // plus that one over any window.
        TokenBucketTest.assertWindowBound(after, 1, 2.0);
    }

    @Test
    void raisingTheRateTakesEffectToo() {
        db.dsl().execute("UPDATE tenants SET rate_per_second = 1 WHERE id = 't'");
        SimulatedScheduler s = scheduler();
        Duration step = Duration.ofMillis(100);
        tickAndRecord(s);
        s.dsl.execute("UPDATE tenants SET rate_per_second = 50, burst = 50 WHERE id = 't'");
        // one reload later the new limits are in force; the earned tokens carried over (< 1 + 0.5 s * 1/s)
        for (int i = 0; i < 5; i++) {
            s.clock.advance(step);
            tickAndRecord(s);
        }
        assertEquals(50.0, s.scheduler.tenants().get("t").bucket().ratePerSecond());
        long total = 0;
        for (int i = 0; i < 10; i++) {
            s.clock.advance(step);
            total += tickAndRecord(s)[1];
        }
        assertTrue(total >= 49 && total <= 52, "1 s at 50/s: " + total);
    }
}
