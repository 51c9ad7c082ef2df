package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Concurrency keys on a settable clock: a key never has more jobs ready or running than its limit, whatever
 * the buffer, the backlog or a failover; jobs behind a full key hold back neither the tenant's other keys nor
 * other tenants; a held key goes on when one of its jobs ends (no wake-up needed); limits change live.
 */
class ConcurrencyKeysTest extends SimulatedSchedulerTest {
    private static List<JobRequest> keyed(String tenant, String key, int n) {
        return SimulatedScheduler.jobs(tenant, n, b -> b.concurrencyKey(key));
    }

    private long activeOfKey(SimulatedScheduler s, String tenant, String key) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND concurrency_key = ? AND status IN ('ready', 'running')",
                tenant, key);
    }

    private long doneOf(SimulatedScheduler s, String tenant, String key) {
        return key == null
                ? s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = 'succeeded'", tenant)
                : s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND concurrency_key = ? AND status = 'succeeded'",
                tenant, key);
    }

    @Test
    void aFullKeyBlocksNeitherTheTenantsOtherKeysNorOtherTenants() {
        db.createTenant("t");
        db.createTenant("other");
        db.dsl().execute("UPDATE tenants SET concurrency_limits = '{\"slow\": 2, \"k1\": 2, \"k2\": 1}' WHERE id = 't'");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(50, 10).build());
        // the slow key's backlog comes first in the tenant's aging order: a single walk of it would block the rest
        s.enqueue(keyed("t", "slow", 300));
        s.enqueue(keyed("t", "k1", 40));
        s.enqueue(keyed("t", "k2", 20));
        s.enqueue(keyed("t", "unlimited", 30));
        s.enqueue(SimulatedScheduler.jobs("t", 30));
        s.enqueue(SimulatedScheduler.jobs("other", 40));

        List<ClaimedJob> slowRunning = new ArrayList<>();
        long maxSlow = 0, maxK1 = 0, maxK2 = 0;
        for (int round = 0; round < 200 && doneOf(s, "t", "k1") + doneOf(s, "t", "k2") < 60; round++) {
            s.tick();
            maxSlow = Math.max(maxSlow, activeOfKey(s, "t", "slow"));
            maxK1 = Math.max(maxK1, activeOfKey(s, "t", "k1"));
            maxK2 = Math.max(maxK2, activeOfKey(s, "t", "k2"));
            // workers claim what is ready; slow jobs never end, the others end at once
            for (ClaimedJob j : s.store.claim(s.dsl, "w", 1_000, LEASE)) {
                if ("slow".equals(keyOf(s, j))) slowRunning.add(j);
                else s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
            }
            s.clock.advance(Duration.ofMillis(10));
        }
        assertEquals(2, maxSlow, "the slow key reached its limit and never passed it");
        assertEquals(2, maxK1);
        assertEquals(1, maxK2);
        assertEquals(40, doneOf(s, "t", "k1"), "k1 went on beside the full slow key");
        assertEquals(20, doneOf(s, "t", "k2"));
        // drain what is left of the others
        for (int round = 0; round < 50; round++) {
            s.tick();
            for (ClaimedJob j : s.store.claim(s.dsl, "w", 1_000, LEASE)) {
                if ("slow".equals(keyOf(s, j))) slowRunning.add(j);
                else s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
            }
        }
        assertEquals(30, doneOf(s, "t", "unlimited"));
        assertEquals(40, doneOf(s, "other", null));
        assertEquals(2, slowRunning.size(), "exactly the slow key's limit started");
        assertEquals(298, s.count("SELECT count(*) FROM jobs WHERE concurrency_key = 'slow' AND status = 'pending'"));

        // One slow job ends: the held key goes on at the next tick, with no wake-up from anybody.
        s.dropWakeUps();
        ClaimedJob done = slowRunning.remove(0);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(done.id(), done.attempt())));
        assertEquals(1, s.scheduler.tick(s.dsl).admitted(), "the freed place of the key is filled");
        assertEquals(2, activeOfKey(s, "t", "slow"));
        assertEquals(0, s.scheduler.tick(s.dsl).admitted(), "and no more");

        // The limit raised live: two more start, never more.
        s.dsl.execute("UPDATE tenants SET concurrency_limits = '{\"slow\": 4}' WHERE id = 't'");
        s.clock.advance(RELOAD);
        s.tick();
        s.tick();
        assertEquals(4, activeOfKey(s, "t", "slow"));
    }

    @Test
    void theLimitHoldsAcrossAFailoverAndForAKeyWithLimitZero() {
        db.createTenant("t");
        db.dsl().execute("UPDATE tenants SET concurrency_limits = '{\"a\": 3, \"held\": 0}' WHERE id = 't'");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 10).build());
        s.enqueue(keyed("t", "a", 50));
        s.enqueue(keyed("t", "held", 10));
        s.tick();
        assertEquals(3, activeOfKey(s, "t", "a"));
        s.store.claim(s.dsl, "w", 2, LEASE); // two running, one ready

        // a new leader knows nothing of the old one's memory: the counts come from the table
        SimulatedScheduler next = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 10).build());
        for (int i = 0; i < 5; i++) next.tick();
        assertEquals(3, activeOfKey(next, "t", "a"));
        assertEquals(0, activeOfKey(next, "t", "held"), "a key with limit 0 starts nothing");
    }

    @Test
    void orderingKeysKeepTheirOrderInsideAConcurrencyKey() {
        db.createTenant("t");
        db.dsl().execute("UPDATE tenants SET concurrency_limits = '{\"api\": 2}' WHERE id = 't'");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(20, 5).build());
        OffsetDateTime due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(1);
        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            for (String order : List.of("o1", "o2", "o3")) {
                jobs.add(JobRequest.builder("t", "noop").runAt(due).concurrencyKey("api").orderingKey(order)
                        .payload("{\"i\": " + i + "}").build());
            }
        }
        s.enqueue(jobs);
        List<Long> started = new ArrayList<>();
        for (int round = 0; round < 100 && started.size() < 30; round++) {
            s.tick();
            assertTrue(activeOfKey(s, "t", "api") <= 2);
            for (ClaimedJob j : s.store.claim(s.dsl, "w", 100, LEASE)) {
                started.add(j.id());
                s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(j.id(), j.attempt())));
            }
        }
        assertEquals(30, started.size());
        for (String order : List.of("o1", "o2", "o3")) {
            List<Long> ids = db.dsl().fetch("SELECT id FROM jobs WHERE ordering_key = ? ORDER BY id", order).getValues(0, Long.class);
            List<Long> inStartOrder = started.stream().filter(ids::contains).toList();
            assertEquals(ids, inStartOrder, "ordering key " + order + " started in enqueue order");
        }
    }

    private static String keyOf(SimulatedScheduler s, ClaimedJob j) {
        return String.valueOf(s.dsl.fetchValue("SELECT concurrency_key FROM jobs WHERE id = ?", j.id()));
    }
}
